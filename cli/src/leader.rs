//! `ferrolock leader NAME [--watch] [--json]`: who leads an election, and (with
//! --watch) each change, from core's observer (woken by Redis, never polling).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use ferrolock::Leader;
use serde_json::json;

use crate::status::holder_json;
use crate::target::{self, Target};
use crate::exit;

pub async fn run(target: &Target, name: &OsStr, watch: bool, as_json: bool) -> i32 {
    let client = match target::connect(target, None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let code = match client.election(name.as_bytes()) {
        Ok(election) if watch => match election.observe().await {
            Ok(mut observer) => loop {
                match observer.next().await {
                    Ok(change) => show(name, change.as_ref(), as_json),
                    Err(e) => break exit::fail(&e),
                }
            },
            Err(e) => exit::fail(&e),
        },
        Ok(election) => match election.leader().await {
            Ok(leader) => {
                show(name, leader.as_ref(), as_json);
                0
            }
            Err(e) => exit::fail(&e),
        },
        Err(e) => exit::fail(&e),
    };
    let _ = client.shutdown().await;
    code
}

/// One line: `term 7: web1 pid 4242 for 5 s: ./scheduler`, `no leader`, or its JSON.
fn show(name: &OsStr, leader: Option<&Leader>, as_json: bool) {
    if as_json {
        let leader = leader.map(|l| {
            let mut holder = holder_json(&l.holder);
            if let Some(fields) = holder.as_object_mut() {
                fields.remove("count");
                fields.insert("term".into(), json!(l.term));
                fields.insert("lease_left_ms".into(), json!(l.lease_left.map(|d| d.as_millis() as u64)));
            }
            holder
        });
        println!("{}", json!({"name": name.to_string_lossy(), "leader": leader}));
    } else {
        match leader {
            // One line per change, whatever CMD's text holds.
            Some(leader) => println!("{}", leader.describe().replace('\n', "\\n")),
            None => println!("no leader"),
        }
    }
}
