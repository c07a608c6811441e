//! The architecture stays visible: no import circle among the crate's top-level
//! modules (a module may use only modules that do not use it back, directly or
//! not), and no source file over the size a reader can hold in mind.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Top-level module of a file under src/ ("lock" for src/lock/holder.rs).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
    first.trim_end_matches(".rs").to_string()
}

/// Top-level modules a file names through `crate::` paths (in `use` lines and code).
fn uses(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                // use crate::{a, b::c};
                for part in group.split('}').next().unwrap_or("").split(',') {
                    let name: String = part.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                    if !name.is_empty() {
                        found.insert(name);
                    }
                }
            } else {
                let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    found.insert(name);
                }
            }
        }
    }
    found
}

#[test]
fn no_import_circle_among_core_modules_and_no_oversized_file() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let lines = text.lines().count();
        assert!(lines <= 400, "{} has {lines} lines; split it by concern (docs/design.md: small modules, ~400 lines at most)", file.display());
        let module = module_of(&src, file);
        if module == "lib" {
            continue; // the facade names everything
        }
        let edges = graph.entry(module.clone()).or_default();
        edges.extend(uses(&text).into_iter().filter(|m| *m != module));
    }
    // Depth-first search for a cycle, reporting its path.
    fn visit(node: &str, graph: &BTreeMap<String, BTreeSet<String>>, path: &mut Vec<String>, done: &mut BTreeSet<String>) {
        if let Some(at) = path.iter().position(|n| n == node) {
            panic!("import circle: {} -> {node}", path[at..].join(" -> "));
        }
        if done.contains(node) {
            return;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, path, done);
        }
        path.pop();
        done.insert(node.to_string());
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, &graph, &mut Vec::new(), &mut done);
    }
    assert!(graph.contains_key("client") && graph.contains_key("lock"), "found the modules: {graph:?}");
    assert!(graph.values().all(|uses| !uses.contains("client")), "nothing imports client: {graph:?}");
}

/// The code of a Rust file with comments, strings and character literals blanked
/// (newlines kept), so that braces and paths are only the code's.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 1;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                }
                i += 1;
            }
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && (chars.get(i + 2) == Some(&'\'') || next == Some('\\')) {
            // A character literal ('{', '\n', '\u{7d}'); a lifetime has no closing quote.
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                out.push(' ');
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_at(code: &[char], mut at: usize) -> (String, usize) {
    while at < code.len() && code[at].is_whitespace() {
        at += 1;
    }
    let start = at;
    while at < code.len() && (code[at].is_ascii_alphanumeric() || code[at] == '_') {
        at += 1;
    }
    (code[start..at].iter().collect(), at)
}

/// The path at `at` (after `crate::`, `super::` or `self::` has been found there),
/// expanded over a `{...}` group: one path per named item, as written.
fn paths_at(code: &[char], at: usize) -> Vec<Vec<String>> {
    let mut path = Vec::new();
    let mut at = at;
    loop {
        while at < code.len() && code[at].is_whitespace() {
            at += 1;
        }
        if code.get(at) == Some(&'{') {
            // use super::{a, b::c, self}; nested groups only need their first segment.
            let mut found = Vec::new();
            let (mut depth, mut part_start) = (0, at + 1);
            for (i, &c) in code.iter().enumerate().skip(at) {
                match c {
                    '{' => depth += 1,
                    '}' | ',' if depth == 1 => {
                        let (name, _) = ident_at(code, part_start);
                        let mut item = path.clone();
                        if !name.is_empty() && name != "self" {
                            item.push(name);
                        }
                        found.push(item);
                        part_start = i + 1;
                        if c == '}' {
                            return found;
                        }
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            return found;
        }
        let (name, end) = ident_at(code, at);
        if name.is_empty() {
            break;
        }
        path.push(name);
        at = end;
        let rest: String = code[at..code.len().min(at + 2)].iter().collect();
        if rest != "::" {
            break;
        }
        at += 2;
    }
    vec![path]
}

/// Absolute module paths a file names (`crate::a::b`, `super::x`, `self::y`), each
/// resolved from the module it is written in (a `mod tests { use super::* }` block
/// names its own file).
fn named_paths(code: &str, here: &[String]) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    // Inline modules open at a brace depth: (depth, name).
    let mut inline: Vec<(usize, String)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < chars.len() {
        let boundary = i == 0 || !(chars[i - 1].is_ascii_alphanumeric() || chars[i - 1] == '_' || chars[i - 1] == ':');
        let word = |w: &str| boundary && chars[i..].starts_with(&w.chars().collect::<Vec<_>>());
        match chars[i] {
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                inline.retain(|(at, _)| *at <= depth);
            }
            _ => {}
        }
        if word("mod ") {
            let (name, end) = ident_at(&chars, i + 4);
            let rest = chars[end..].iter().find(|c| !c.is_whitespace());
            if rest == Some(&'{') {
                inline.push((depth + 1, name));
            }
        }
        if word("crate::") || word("super::") || word("self::") {
            let mut module: Vec<String> = here.to_vec();
            module.extend(inline.iter().map(|(_, name)| name.clone()));
            let mut at = i;
            if word("crate::") {
                module.clear();
                at += "crate::".len();
            } else {
                loop {
                    let rest: String = chars[at..chars.len().min(at + 7)].iter().collect();
                    if rest == "super::" {
                        module.pop();
                        at += 7;
                    } else if rest.starts_with("self::") {
                        at += 6;
                    } else {
                        break;
                    }
                }
            }
            for tail in paths_at(&chars, at) {
                let mut path = module.clone();
                path.extend(tail);
                found.push(path);
            }
            i = at;
            continue;
        }
        i += 1;
    }
    found
}

/// Within each folder of src/, the files and subfolders (its members) import one
/// another in one direction only: a reader can take them in an order where each
/// builds on the ones before. A folder's mod.rs is the folder itself (it declares
/// the members, which may use what it defines); a name it re-exports from a member
/// counts as that member's.
#[test]
fn no_import_circle_among_the_files_of_a_folder() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let module_path = |file: &Path| -> Vec<String> {
        let rel = file.strip_prefix(&src).unwrap().with_extension("");
        let mut path: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        if path.last().is_some_and(|last| last == "mod") {
            path.pop();
        }
        path
    };
    // folder -> its members; folder -> name re-exported by its mod.rs -> member.
    let mut members: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    let mut reexports: BTreeMap<Vec<String>, BTreeMap<String, String>> = BTreeMap::new();
    for file in &files {
        let path = module_path(file);
        if path.len() >= 2 {
            members.entry(path[..path.len() - 1].to_vec()).or_default().insert(path[path.len() - 1].clone());
        }
    }
    for file in files.iter().filter(|f| f.file_name().is_some_and(|n| n == "mod.rs")) {
        let folder = module_path(file);
        let Some(own) = members.get(&folder) else { continue };
        let code: Vec<char> = code_only(&std::fs::read_to_string(file).unwrap()).chars().collect();
        let text: String = code.iter().collect();
        for (at, _) in text.match_indices("use ") {
            if at > 0 && (code[at - 1].is_ascii_alphanumeric() || code[at - 1] == '_') {
                continue;
            }
            for path in paths_at(&code, at + 4) {
                if path.len() >= 2 && own.contains(&path[0]) {
                    reexports.entry(folder.clone()).or_default().insert(path[path.len() - 1].clone(), path[0].clone());
                }
            }
        }
    }
    let mut graphs: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in &files {
        let from = module_path(file);
        let code = code_only(&std::fs::read_to_string(file).unwrap());
        for target in named_paths(&code, &from) {
            // Every folder (below src/ itself) that holds both ends in different members.
            for k in 1..from.len() {
                let folder = &from[..k];
                if target.len() <= k || target[..k] != *folder || target[k] == from[k] {
                    continue;
                }
                let own = &members[folder];
                let member = if own.contains(&target[k]) {
                    Some(target[k].clone())
                } else {
                    reexports.get(folder).and_then(|names| names.get(&target[k])).cloned()
                };
                if let Some(member) = member.filter(|m| *m != from[k]) {
                    graphs.entry(folder.to_vec()).or_default().entry(from[k].clone()).or_default().insert(member);
                }
            }
        }
    }
    fn cycle(node: &str, graph: &BTreeMap<String, BTreeSet<String>>, path: &mut Vec<String>, done: &mut BTreeSet<String>) -> Option<String> {
        if let Some(at) = path.iter().position(|n| n == node) {
            return Some(format!("{} -> {node}", path[at..].join(" -> ")));
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = cycle(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut circles = Vec::new();
    for (folder, graph) in &graphs {
        let mut done = BTreeSet::new();
        for node in graph.keys() {
            if let Some(found) = cycle(node, graph, &mut Vec::new(), &mut done) {
                circles.push(format!("src/{}/: {found}", folder.join("/")));
                break;
            }
        }
    }
    assert!(circles.is_empty(), "import circles between the files of a folder (move the shared item down into a file both can use):\n{}\n(imports seen: {graphs:?})", circles.join("\n"));
    // The parse sees the imports it is meant to judge.
    assert!(graphs.get(&vec!["lock".to_string()]).is_some_and(|g| g.values().any(|to| to.contains("holder"))), "found lock/'s imports: {graphs:?}");
}
