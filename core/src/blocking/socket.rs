//! A blocking thread's socket to the server: TCP or a Unix socket, non-blocking once
//! connected (driver.rs polls it).

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::transport::HostAddress;

pub(super) enum Socket {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Socket {
    pub(super) fn connect(address: &HostAddress, timeout: Duration) -> std::io::Result<Socket> {
        let socket = match address {
            HostAddress::Tcp { host, port } => {
                let mut last = None;
                let mut found = None;
                for addr in (host.as_str(), *port).to_socket_addrs()? {
                    match TcpStream::connect_timeout(&addr, timeout) {
                        Ok(stream) => {
                            found = Some(stream);
                            break;
                        }
                        Err(e) => last = Some(e),
                    }
                }
                let stream = found
                    .ok_or_else(|| last.unwrap_or_else(|| ErrorKind::AddrNotAvailable.into()))?;
                stream.set_nodelay(true)?;
                Socket::Tcp(stream)
            }
            HostAddress::Unix(path) => Socket::Unix(UnixStream::connect(path)?),
        };
        match &socket {
            Socket::Tcp(s) => s.set_nonblocking(true)?,
            Socket::Unix(s) => s.set_nonblocking(true)?,
        }
        Ok(socket)
    }

    pub(super) fn fd(&self) -> i32 {
        match self {
            Socket::Tcp(s) => s.as_raw_fd(),
            Socket::Unix(s) => s.as_raw_fd(),
        }
    }

    pub(super) fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.read(buf),
            Socket::Unix(s) => s.read(buf),
        }
    }

    pub(super) fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.write(buf),
            Socket::Unix(s) => s.write(buf),
        }
    }

    /// A descriptor of the same socket that another thread may shut down.
    pub(super) fn shutdown_handle(&self) -> std::io::Result<OwnedFd> {
        match self {
            Socket::Tcp(s) => s.try_clone().map(OwnedFd::from),
            Socket::Unix(s) => s.try_clone().map(OwnedFd::from),
        }
    }
}
