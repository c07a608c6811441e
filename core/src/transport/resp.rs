//! Replies in RESP2, read on the host's thread for every reply of the host link
//! (host.rs). Written out rather than redis-rs's parser, which the link would have
//! to run twice per reply: once to find where a reply ends, once to read it.

use redis::Value;

/// The RESP2 reply at the start of `buf` and its length; `None` while incomplete.
pub(super) fn parse_reply(buf: &[u8]) -> Result<Option<(Value, usize)>, String> {
    let mut at = 0;
    Ok(parse_at(buf, &mut at)?.map(|value| (value, at)))
}

fn parse_at(buf: &[u8], at: &mut usize) -> Result<Option<Value>, String> {
    let Some(end) = buf[*at..].windows(2).position(|w| w == b"\r\n") else { return Ok(None) };
    let start = *at;
    let line = &buf[start..start + end];
    *at = start + end + 2;
    let Some((&kind, rest)) = line.split_first() else { return Err("an empty reply line".into()) };
    let number = || -> Result<i64, String> {
        std::str::from_utf8(rest).ok().and_then(|s| s.parse().ok()).ok_or_else(|| "a malformed number".to_string())
    };
    Ok(Some(match kind {
        b':' => Value::Int(number()?),
        b'$' => {
            let n = number()?;
            if n < 0 {
                return Ok(Some(Value::Nil));
            }
            let (from, to) = (*at, *at + n as usize);
            if to + 2 > buf.len() {
                return Ok(None);
            }
            *at = to + 2;
            Value::BulkString(buf[from..to].to_vec())
        }
        b'*' => {
            let n = number()?;
            if n < 0 {
                return Ok(Some(Value::Nil));
            }
            let mut items = Vec::with_capacity(n as usize);
            for _ in 0..n {
                match parse_at(buf, at)? {
                    Some(item) => items.push(item),
                    None => return Ok(None),
                }
            }
            Value::Array(items)
        }
        b'+' if rest == b"OK" => Value::Okay,
        b'+' => Value::SimpleString(String::from_utf8_lossy(rest).into_owned()),
        // Errors are rare: redis-rs makes them, so they carry its error kinds.
        b'-' => redis::parse_redis_value(&buf[start..*at]).map_err(|e| format!("unreadable error reply ({:?})", e.kind()))?,
        other => return Err(format!("an unexpected reply type {:?}", other as char)),
    }))
}

#[cfg(test)]
mod tests {
    use super::parse_reply;
    use redis::Value;

    #[test]
    fn parses_replies_and_waits_for_the_rest() {
        let acquired = b"*3\r\n:1\r\n:1\r\n:0\r\n";
        assert_eq!(parse_reply(acquired), Ok(Some((Value::Array(vec![Value::Int(1), Value::Int(1), Value::Int(0)]), 16))));
        for cut in [0, 1, 3, 5, 10, 15] {
            assert_eq!(parse_reply(&acquired[..cut]), Ok(None), "cut at {cut}");
        }
        let mixed = b"*2\r\n$3\r\nabc\r\n*1\r\n$-1\r\n+x";
        let expected = Value::Array(vec![Value::BulkString(b"abc".to_vec()), Value::Array(vec![Value::Nil])]);
        assert_eq!(parse_reply(mixed), Ok(Some((expected, 22))));
        assert_eq!(parse_reply(b":-7\r\n:2\r\n"), Ok(Some((Value::Int(-7), 5))));
        assert_eq!(parse_reply(b"+OK\r\n"), Ok(Some((Value::Okay, 5))));
        assert_eq!(parse_reply(b"*0\r\n"), Ok(Some((Value::Array(vec![]), 4))));
        assert_eq!(parse_reply(b"$5\r\nabc"), Ok(None));
        let Ok(Some((Value::ServerError(e), 30))) = parse_reply(b"-NOSCRIPT No matching script\r\n") else { panic!() };
        assert_eq!(e.code(), "NOSCRIPT");
        assert!(parse_reply(b"?x\r\n").is_err());
        assert!(parse_reply(b"$x\r\n").is_err());
    }
}
