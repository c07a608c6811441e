//! The scripts the server lacks, so that the first call of one there carries its
//! SCRIPT LOAD in the same round-trip: a new connection asks SCRIPT EXISTS of every
//! script once (in place of loading them all), and the call that first sends an
//! EVALSHA of a missing one sends `SCRIPT LOAD <source>` just before it, on the same
//! connection (scripts/mod.rs says why scripts load when first used). So a call is one
//! round-trip from the start, even a hold's first renewal over a slow link, and a
//! client loads only what its calls run and the server lacks. What this does not
//! know (a SCRIPT FLUSH since, a cluster, whose nodes answer SCRIPT EXISTS as one, a
//! user refused SCRIPT EXISTS) is left to NOSCRIPT: loaded, then sent again.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use redis::{Arg, Cmd, RedisResult, Value};

use super::{host_reply, Conn, Link};
use crate::scripts;

/// The scripts (a bit per place in `scripts::ALL`, the first 64) that the server of
/// `link` lacks. None known on a cluster or when the ACL refuses SCRIPT EXISTS.
pub(super) async fn missing_on(link: &mut Link) -> RedisResult<u64> {
    if let Link::Cluster(_) = link {
        return Ok(0);
    }
    let mut exists = redis::cmd("SCRIPT");
    exists.arg("EXISTS");
    for (_, script) in scripts::ALL.iter().take(64) {
        exists.arg(script.get_hash());
    }
    match exists.query_async::<Vec<bool>>(link).await {
        Ok(found) => Ok(found.iter().enumerate().filter(|(_, found)| !**found).fold(0, |bits, (i, _)| bits | 1 << i)),
        Err(e) if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() => Err(e),
        Err(e) => {
            tracing::debug!(error = %e, "could not ask which scripts the server has; a call meeting NOSCRIPT loads its script");
            Ok(0)
        }
    }
}

impl Conn {
    /// The source of the script `sha` names when the server lacks it, for this call
    /// to load: the calls after it find it loaded (they follow it on the connection,
    /// or meet NOSCRIPT on another). The client's first call connects first: until a
    /// connection asked, nothing says what the server lacks.
    pub(super) async fn claim_missing<'a>(&self, sha: impl FnOnce() -> Option<&'a [u8]>) -> RedisResult<Option<&'static str>> {
        if !self.inner.connected.load(Ordering::Relaxed) {
            if let Err(e) = self.current().await {
                // A host link may still carry the call; the client's connection would fail again.
                if self.host_here().is_none() {
                    return Err(e);
                }
            }
        }
        let missing = &self.inner.missing_scripts;
        if missing.load(Ordering::Relaxed) == 0 {
            return Ok(None);
        }
        let Some(at) = sha().and_then(|sha| scripts::ALL.iter().take(64).position(|(_, s)| s.get_hash().as_bytes() == sha)) else {
            return Ok(None);
        };
        let bit = 1u64 << at;
        Ok((missing.fetch_and(!bit, Ordering::Relaxed) & bit != 0).then(|| scripts::ALL[at].0))
    }

    /// Notes a SCRIPT LOAD of one of our scripts (after a NOSCRIPT that met a pipeline):
    /// no later call needs to load it again.
    pub(super) fn note_load(&self, cmd: &Cmd) {
        let missing = &self.inner.missing_scripts;
        if missing.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut args = cmd.args_iter();
        let (Some(Arg::Simple(name)), Some(Arg::Simple(sub)), Some(Arg::Simple(source))) = (args.next(), args.next(), args.next()) else {
            return;
        };
        if name.eq_ignore_ascii_case(b"SCRIPT") && sub.eq_ignore_ascii_case(b"LOAD") {
            if let Some(at) = scripts::ALL.iter().take(64).position(|(text, _)| text.as_bytes() == source) {
                missing.fetch_and(!(1u64 << at), Ordering::Relaxed);
            }
        }
    }

    /// SCRIPT LOAD of `source`, then the EVALSHA `pack` writes (or `cmd` is), in one
    /// round-trip: on this thread's host link when a call polled here may use it, else
    /// on the client's connection.
    pub(super) async fn load_and_send<'a>(&self, source: &str, pack: impl Fn(&mut Vec<u8>), cmd: impl FnOnce() -> Cow<'a, Cmd>) -> RedisResult<Value> {
        let mut load = redis::cmd("SCRIPT");
        load.arg("LOAD").arg(source);
        if let Some(host) = self.host_here() {
            if let Some(loaded) = host.send_one(|out| load.write_packed_command(out), self.timeout) {
                let Some(called) = host.send_one(pack, self.timeout) else {
                    host_reply(loaded.await)?;
                    return self.request_here(&cmd()).await;
                };
                return answer(host_reply(loaded.await), host_reply(called.await));
            }
        }
        let (mut conn, epoch) = self.current().await?;
        let mut pipe = redis::pipe();
        pipe.add_command(load).add_command(cmd().into_owned());
        let reply = tokio::time::timeout(self.timeout, redis::aio::ConnectionLike::req_packed_commands(&mut conn, &pipe, 0, 2)).await;
        let mut replies = self.settle(reply, epoch)?.into_iter();
        match (replies.next(), replies.next()) {
            (Some(loaded), Some(called)) => answer(Ok(loaded), Ok(called)),
            _ => Err((redis::ErrorKind::UnexpectedReturnType, "a SCRIPT LOAD and EVALSHA pipeline answered fewer than two replies").into()),
        }
    }
}

/// The call's reply; a refused load (the ACL) explains the NOSCRIPT after it.
fn answer(loaded: RedisResult<Value>, called: RedisResult<Value>) -> RedisResult<Value> {
    match (loaded, called) {
        (Ok(Value::ServerError(refused)), Ok(Value::ServerError(e))) if e.code() == "NOSCRIPT" => Ok(Value::ServerError(refused)),
        (_, called) => called,
    }
}
