//! TLS servers for the tests: a certificate for `127.0.0.1` and `localhost` signed by a
//! test CA, so a client can verify the server (`SSL_CERT_FILE`) or skip it (`#insecure`).

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::RedisServer;

impl RedisServer {
    /// A server that only speaks TLS and needs `password`. Its certificate (for
    /// `127.0.0.1` and `localhost`) is signed by a test CA made with openssl, whose
    /// certificate is [`RedisServer::tls_ca`].
    pub fn start_tls(password: &str) -> RedisServer {
        let mut server = RedisServer::start_with(&["--requirepass", password]);
        server.kill();
        let dir = server.dir.path().to_path_buf();
        std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n").unwrap();
        let steps: [&[&str]; 3] = [
            &["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=ferrolock test CA",
              "-keyout", "ca.key", "-out", "ca.pem"],
            &["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "key.pem", "-out", "req.csr"],
            &["x509", "-req", "-in", "req.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "1",
              "-extfile", "san.ext", "-out", "cert.pem"],
        ];
        for args in steps {
            let status = Command::new("openssl")
                .args(args)
                .current_dir(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("openssl makes the test certificates");
            assert!(status.success(), "openssl {args:?}");
        }
        server.tls = true;
        server.spawn().unwrap_or_else(|e| panic!("{e}"));
        server
    }

    /// The CA certificate (PEM) that signed a [`RedisServer::start_tls`] server's certificate.
    pub fn tls_ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }
}
