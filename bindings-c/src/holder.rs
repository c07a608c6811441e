//! Who holds a lock, for C: `ferrolock_holder`, core's `HolderEntry` (owner, count,
//! note, how long held, description) as a plain struct that grows like
//! `ferrolock_metrics` (its first field is its size as the program was compiled, and
//! only the fields within it are written). Its strings stay in a `HolderText`, owned
//! by whatever handed it out (an inspection snapshot, a lock handle's timed-out acquire).

use std::ffi::{c_char, CString};
use std::mem::{offset_of, size_of};
use std::ptr;

use ferrolock::{Error, HolderEntry};

use crate::ffi::invalid;

/// One holder of a lock, as `ferrolock_lock_holder_info()` (who was in the way of a
/// timed-out acquire) and `ferrolock_inspection_holder_info()` give it. Strings are
/// NULL when unknown; numbers -1. Every string is owned by the library (see the
/// function that filled it for how long it stays valid).
///
/// New fields are only ever appended; the library writes only the fields within
/// `size` bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ferrolock_holder {
    /// `sizeof(ferrolock_holder)` as the program was compiled; set by the inline
    /// functions that fill it.
    pub size: u32,
    /// The owner field: `<client id>:<holder id>` for ferrolock, `<uuid>:<thread id>`
    /// for Redisson. NULL when there is no holder to tell of.
    pub owner: *const c_char,
    /// How many times it holds (re-entries included).
    pub count: u64,
    /// Its note as stored (JSON written by a ferrolock client, or whatever
    /// `ferrolock run` or another tool left); NULL when it has none: a short hold
    /// writes none by default (`holder_notes` in `ferrolock_options`), Redisson never.
    pub info: *const c_char,
    /// The holder client's app name (`app_name` in `ferrolock_options`).
    pub app: *const c_char,
    /// The holder's host name.
    pub host: *const c_char,
    /// The holder's process id; -1 when unknown.
    pub pid: i64,
    /// The holder's thread or task: a C holder's label and OS thread id
    /// (`ferrolock_lock_set_label()`), a Python thread or task name, a Node label.
    pub thread: *const c_char,
    /// What the holder runs (`ferrolock run`: its command).
    pub command: *const c_char,
    /// 1 when the watchdog renews the hold, 0 for an explicit lease, -1 when unknown.
    pub renewed: i32,
    /// When the hold began, Unix ms by the Redis server's clock; -1 when unknown.
    pub since_ms: i64,
    /// How long it had held the lock when this was read, by the server's clock; -1
    /// when unknown.
    pub held_for_ms: i64,
    /// The holder for people, e.g. "billing on host-7 pid 4242 (thread worker-3, tid
    /// 4243) for 5 m 12 s"; its owner field and a hint when it left no note. Never
    /// NULL when `owner` is not.
    pub description: *const c_char,
}

/// The largest `size` taken (anything bigger is not a `ferrolock_holder`).
const MAX_SIZE: usize = 4096;

/// Calls `$each!` with every field after `size`, in declaration order.
macro_rules! every_field {
    ($each:ident) => {
        $each!(owner, count, info, app, host, pid, thread, command, renewed, since_ms, held_for_ms, description)
    };
}

/// A holder's strings, made C strings once: a `ferrolock_holder` points into it.
pub(crate) struct HolderText {
    owner: CString,
    count: u64,
    info: Option<CString>,
    app: Option<CString>,
    host: Option<CString>,
    pid: i64,
    thread: Option<CString>,
    command: Option<CString>,
    renewed: i32,
    since_ms: i64,
    held_for_ms: i64,
    description: CString,
}

/// A string from Redis as a C string (a NUL inside shows as `\0`, as in messages).
pub(crate) fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "\\0")).unwrap_or_default()
}

impl HolderText {
    pub(crate) fn of(entry: &HolderEntry) -> Self {
        let note = entry.note.clone().unwrap_or_default();
        let text = |s: &Option<String>| s.as_deref().map(c_string);
        let number = |n: Option<u64>| n.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        HolderText {
            owner: c_string(&entry.owner),
            count: entry.count,
            info: text(&entry.info),
            app: text(&note.app),
            host: text(&note.host),
            pid: number(note.pid),
            thread: text(&note.thread),
            command: text(&note.command),
            renewed: note.renewed.map_or(-1, i32::from),
            since_ms: number(note.since_ms),
            held_for_ms: number(entry.held_for.map(|d| d.as_millis() as u64)),
            description: c_string(&entry.describe()),
        }
    }

    pub(crate) fn owner(&self) -> &CString {
        &self.owner
    }

    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    pub(crate) fn info(&self) -> Option<&CString> {
        self.info.as_ref()
    }

    fn view(text: Option<&HolderText>) -> ferrolock_holder {
        let s = |c: Option<&CString>| c.map_or(ptr::null(), |c| c.as_ptr());
        match text {
            Some(t) => ferrolock_holder {
                size: size_of::<ferrolock_holder>() as u32,
                owner: t.owner.as_ptr(),
                count: t.count,
                info: s(t.info.as_ref()),
                app: s(t.app.as_ref()),
                host: s(t.host.as_ref()),
                pid: t.pid,
                thread: s(t.thread.as_ref()),
                command: s(t.command.as_ref()),
                renewed: t.renewed,
                since_ms: t.since_ms,
                held_for_ms: t.held_for_ms,
                description: t.description.as_ptr(),
            },
            None => ferrolock_holder {
                size: size_of::<ferrolock_holder>() as u32,
                owner: ptr::null(),
                count: 0,
                info: ptr::null(),
                app: ptr::null(),
                host: ptr::null(),
                pid: -1,
                thread: ptr::null(),
                command: ptr::null(),
                renewed: -1,
                since_ms: -1,
                held_for_ms: -1,
                description: ptr::null(),
            },
        }
    }

    /// Writes `text` (None: no holder, every string NULL) into the caller's `size`
    /// bytes at `p`: the fields that fit, zero past this library's struct, and `size`.
    pub(crate) unsafe fn write(text: Option<&HolderText>, p: *mut ferrolock_holder, size: u32, function: &str) -> Result<(), Error> {
        if p.is_null() {
            return Err(invalid("out is NULL; pass a pointer to a ferrolock_holder"));
        }
        let size = size as usize;
        if size < size_of::<u32>() || size > MAX_SIZE {
            let inline = function.trim_end_matches("_sized");
            return Err(invalid(format!(
                "{function}: size = {size} is not the size of a ferrolock_holder; call {inline}(), which \
                 passes sizeof *out"
            )));
        }
        let view = Self::view(text);
        ptr::write_bytes(p.cast::<u8>(), 0, size);
        macro_rules! put {
            ($($field:ident),*) => {$(
                if offset_of!(ferrolock_holder, $field) + size_of_val(&view.$field) <= size {
                    ptr::addr_of_mut!((*p).$field).write_unaligned(view.$field);
                }
            )*};
        }
        every_field!(put);
        ptr::addr_of_mut!((*p).size).write_unaligned(size as u32);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;
    use std::time::Duration;

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn the_layout_is_the_abi() {
        assert_eq!(offset_of!(ferrolock_holder, owner), 8);
        assert_eq!(offset_of!(ferrolock_holder, pid), 48);
        assert_eq!(offset_of!(ferrolock_holder, renewed), 72);
        assert_eq!(offset_of!(ferrolock_holder, description), 96);
        assert_eq!(size_of::<ferrolock_holder>(), 104);
    }

    #[test]
    fn a_note_is_read_into_fields_and_a_short_struct_gets_what_fits() {
        let info = r#"{"app":"billing","host":"h7","pid":42,"thread":"w3, tid 43","kind":"lock","renewed":true,"since":1700000000000}"#;
        let entry = HolderEntry {
            owner: "c:1".into(),
            count: 2,
            info: Some(info.into()),
            note: ferrolock::HolderNote::parse(info),
            held_for: Some(Duration::from_millis(5200)),
        };
        let text = HolderText::of(&entry);
        let mut h = HolderText::view(None);
        unsafe { HolderText::write(Some(&text), &mut h, size_of::<ferrolock_holder>() as u32, "f_sized") }.unwrap();
        let s = |p: *const c_char| unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string();
        assert_eq!((s(h.owner), h.count, h.pid, h.renewed, h.since_ms, h.held_for_ms), ("c:1".into(), 2, 42, 1, 1700000000000, 5200));
        assert_eq!((s(h.app), s(h.host), s(h.thread)), ("billing".into(), "h7".into(), "w3, tid 43".into()));
        assert!(h.command.is_null());
        assert_eq!(s(h.description), "billing on h7 pid 42 (thread w3, tid 43) for 5 s");
        // An older, shorter struct: only what fits.
        let mut short = HolderText::view(None);
        unsafe { HolderText::write(Some(&text), &mut short, offset_of!(ferrolock_holder, pid) as u32, "f_sized") }.unwrap();
        assert_eq!((short.count, short.pid, short.size as usize), (2, -1, offset_of!(ferrolock_holder, pid)));
        let e = unsafe { HolderText::write(None, &mut short, 2, "f_sized") }.unwrap_err();
        assert!(e.message().contains("call f()"), "{}", e.message());
    }
}
