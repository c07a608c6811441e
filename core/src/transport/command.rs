//! A command built for the connection it will most likely go out on. A call polled by
//! a host (host/: Node's event loop, Python's blocking calls, C's) of a client that
//! can have host links sends on the host link, which writes RESP: such a command is
//! written as RESP while its arguments are added,
//! once, with no redis-rs `Cmd` to build and then pack (two allocations and a second
//! pass over every argument, a good part of an uncontended call's own work). Any other
//! call builds a `Cmd` for redis-rs's connections, as before. Either form converts to
//! the other when a call goes elsewhere after all (a link down, a retry on the
//! client's connection, a pipeline).

use redis::Cmd;

pub(crate) enum Command {
    /// The bulk strings of a RESP array and their count; its header (`*<count>`) is
    /// written when it is sent.
    Resp { bulks: Vec<u8>, count: usize },
    Cmd(Cmd),
}

impl Command {
    /// An empty command, as RESP when `host` (see `Transport::command`).
    pub fn new(host: bool) -> Command {
        if host {
            // A release of a lock with a long name passes some 300 bytes.
            Command::Resp { bulks: Vec::with_capacity(512), count: 0 }
        } else {
            Command::Cmd(Cmd::with_capacity(12, 256))
        }
    }

    pub fn arg(&mut self, arg: &[u8]) {
        match self {
            Command::Resp { bulks, count } => {
                let mut digits = itoa::Buffer::new();
                let len = digits.format(arg.len()).as_bytes();
                bulks.reserve(arg.len() + len.len() + 5);
                bulks.push(b'$');
                bulks.extend_from_slice(len);
                bulks.extend_from_slice(b"\r\n");
                bulks.extend_from_slice(arg);
                bulks.extend_from_slice(b"\r\n");
                *count += 1;
            }
            Command::Cmd(cmd) => {
                cmd.arg(arg);
            }
        }
    }

    pub fn num(&mut self, n: u64) {
        self.arg(itoa::Buffer::new().format(n).as_bytes());
    }

    /// The SHA it names if it is an EVALSHA.
    pub fn evalsha(&self) -> Option<&[u8]> {
        match self {
            Command::Resp { bulks, .. } => bulks.strip_prefix(b"$7\r\nEVALSHA\r\n$40\r\n").and_then(|rest| rest.get(..40)),
            Command::Cmd(cmd) => evalsha_of(cmd),
        }
    }

    /// Appends it, packed as RESP, to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        match self {
            Command::Resp { bulks, count } => {
                out.reserve(bulks.len() + 16);
                out.push(b'*');
                out.extend_from_slice(itoa::Buffer::new().format(*count).as_bytes());
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(bulks);
            }
            Command::Cmd(cmd) => cmd.write_packed_command(out),
        }
    }

    /// It as a redis-rs `Cmd` (copied from the RESP form: a call that was to go on the
    /// host link and goes elsewhere).
    pub fn to_cmd(&self) -> std::borrow::Cow<'_, Cmd> {
        match self {
            Command::Cmd(cmd) => std::borrow::Cow::Borrowed(cmd),
            Command::Resp { bulks, count } => {
                let mut cmd = Cmd::with_capacity(*count, bulks.len());
                let mut at = 0;
                while at < bulks.len() {
                    // `$<len>\r\n<bytes>\r\n`, as `arg` wrote it.
                    let digits_end = at + 1 + bulks[at + 1..].iter().position(|&b| b == b'\r').expect("a bulk header");
                    let len: usize = std::str::from_utf8(&bulks[at + 1..digits_end]).ok().and_then(|s| s.parse().ok()).expect("a bulk length");
                    let start = digits_end + 2;
                    cmd.arg(&bulks[start..start + len]);
                    at = start + len + 2;
                }
                std::borrow::Cow::Owned(cmd)
            }
        }
    }
}

/// The SHA `cmd` names if it is an EVALSHA.
pub(crate) fn evalsha_of(cmd: &Cmd) -> Option<&[u8]> {
    let mut args = cmd.args_iter();
    match (args.next(), args.next()) {
        (Some(redis::Arg::Simple(name)), Some(redis::Arg::Simple(sha))) if name.eq_ignore_ascii_case(b"EVALSHA") => Some(sha),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::Command;

    /// Both forms pack to the same bytes, and the RESP form converts to the same `Cmd`.
    #[test]
    fn both_forms_pack_alike() {
        let args: [&[u8]; 5] = [b"EVALSHA", b"abc", b"1", b"", b"k\r\ney"];
        let mut resp = Command::Resp { bulks: Vec::new(), count: 0 };
        let mut cmd = Command::Cmd(redis::Cmd::new());
        for arg in args {
            resp.arg(arg);
            cmd.arg(arg);
        }
        resp.num(30000);
        cmd.num(30000);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        resp.write_to(&mut a);
        cmd.write_to(&mut b);
        assert_eq!(a, b);
        assert_eq!(a, b"*6\r\n$7\r\nEVALSHA\r\n$3\r\nabc\r\n$1\r\n1\r\n$0\r\n\r\n$5\r\nk\r\ney\r\n$5\r\n30000\r\n");
        assert_eq!(resp.to_cmd().get_packed_command(), a);
    }

    /// Both forms name the SHA of an EVALSHA (conn/loading.rs), and nothing else.
    #[test]
    fn both_forms_name_an_evalsha() {
        let sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff831";
        for host in [true, false] {
            let mut call = Command::new(host);
            for arg in [b"EVALSHA".as_slice(), sha.as_bytes(), b"1", b"k"] {
                call.arg(arg);
            }
            assert_eq!(call.evalsha(), Some(sha.as_bytes()));
            let mut other = Command::new(host);
            for arg in [b"EVAL".as_slice(), sha.as_bytes(), b"0"] {
                other.arg(arg);
            }
            assert_eq!(other.evalsha(), None);
        }
    }
}
