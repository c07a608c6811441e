//! What a host link keeps under its lock: the bytes to write and read, the
//! requests waiting for replies in order, and how the replies are handed out.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use redis::{RedisResult, Value};
use tokio::sync::oneshot;

/// Reply latches gathered per UNLINK on a link ([`super::HostLink::remove_latch`]).
pub(super) const LATCH_BATCH: usize = 32;

#[derive(Default)]
pub(super) struct State {
    pub(super) out: Vec<u8>,
    pub(super) input: Vec<u8>,
    pub(super) waiting: VecDeque<Waiter>,
    /// Handshake replies still to come before requests may use the link.
    pub(super) handshake: usize,
    /// Requests whose bytes are still in `out` (not taken by the host yet).
    pub(super) unsent: usize,
    /// Every handshake reply came back OK at some point.
    pub(super) was_up: bool,
    pub(super) closed: Option<String>,
    /// Answered releases' reply latches, to be deleted by one UNLINK on this link.
    pub(super) latches: Vec<Vec<u8>>,
    /// How long that UNLINK may take (the response timeout of the calls that gave them).
    pub(super) latch_timeout: Duration,
}

pub(super) struct Waiter {
    /// When the call stops waiting for its reply (its connection handle's response timeout).
    pub(super) deadline: Instant,
    pub(super) reply: ReplyTo,
}

pub(super) enum ReplyTo {
    Handshake,
    /// A request nobody waits for (the latches' UNLINK).
    Discard,
    One(oneshot::Sender<RedisResult<Value>>),
    Many { want: usize, got: Vec<Value>, reply: oneshot::Sender<RedisResult<Vec<Value>>> },
}

pub(super) enum Done {
    One(oneshot::Sender<RedisResult<Value>>, RedisResult<Value>),
    Many(oneshot::Sender<RedisResult<Vec<Value>>>, RedisResult<Vec<Value>>),
}

impl Done {
    pub(super) fn send(self) {
        // A receiver that is gone (its call timed out) does not care.
        match self {
            Done::One(tx, value) => drop(tx.send(value)),
            Done::Many(tx, values) => drop(tx.send(values)),
        }
    }
}

/// A reply that will not come (the link closed): a lost reply, as core sees it.
pub(crate) fn lost(what: &str) -> redis::RedisError {
    std::io::Error::new(std::io::ErrorKind::ConnectionAborted, what.to_string()).into()
}

impl State {
    /// Queues an UNLINK of the gathered latches; true if it is the first output
    /// waiting (the host must be told).
    pub(super) fn unlink_latches(&mut self) -> bool {
        if self.latches.is_empty() {
            return false;
        }
        let was_empty = self.out.is_empty();
        let mut unlink = redis::cmd("UNLINK");
        for latch in self.latches.drain(..) {
            unlink.arg(latch);
        }
        unlink.write_packed_command(&mut self.out);
        let deadline = Instant::now() + self.latch_timeout;
        self.waiting.push_back(Waiter { deadline, reply: ReplyTo::Discard });
        self.unsent += 1;
        was_empty
    }

    /// Latches stay gathered: the client hands them to its sweeper when it closes,
    /// and otherwise they expire by themselves.
    pub(super) fn close(&mut self, reason: &str, done: &mut Vec<Done>) {
        if self.closed.is_none() {
            tracing::debug!(reason, "the host's connection closed; calls use the client's own connection");
            self.closed = Some(reason.to_string());
        }
        self.out.clear();
        self.unsent = 0;
        self.input.clear();
        for waiter in self.waiting.drain(..) {
            match waiter.reply {
                ReplyTo::Handshake | ReplyTo::Discard => {}
                ReplyTo::One(tx) => done.push(Done::One(tx, Err(lost(reason)))),
                ReplyTo::Many { reply, .. } => done.push(Done::Many(reply, Err(lost(reason)))),
            }
        }
    }

    /// Hands every complete reply in `input` to its waiter; a reason to close on a
    /// protocol error.
    pub(super) fn take_replies(&mut self, done: &mut Vec<Done>) -> Option<String> {
        let mut at = 0;
        let failure = loop {
            let (value, len) = match crate::transport::resp::parse_reply(&self.input[at..]) {
                Ok(Some(reply)) => reply,
                Ok(None) => break None,
                Err(e) => break Some(e),
            };
            at += len;
            let Some(waiter) = self.waiting.pop_front() else { break Some("a reply nobody asked for".to_string()) };
            match waiter.reply {
                ReplyTo::Handshake => {
                    if let Value::ServerError(e) = &value {
                        break Some(format!("its handshake was refused ({})", e.code()));
                    }
                    self.handshake -= 1;
                    self.was_up |= self.handshake == 0;
                }
                ReplyTo::Discard => {
                    if let Value::ServerError(e) = &value {
                        tracing::debug!(code = e.code(), "could not delete unlock latches; they expire by themselves");
                    }
                }
                ReplyTo::One(tx) => done.push(Done::One(tx, Ok(value))),
                ReplyTo::Many { want, mut got, reply } => {
                    got.push(value);
                    if got.len() == want {
                        done.push(Done::Many(reply, Ok(got)));
                    } else {
                        let deadline = waiter.deadline;
                        self.waiting.push_front(Waiter { deadline, reply: ReplyTo::Many { want, got, reply } });
                    }
                }
            }
        };
        self.input.drain(..at);
        failure
    }
}
