//! A `robotmem web` under test: the real binary on a free loopback port, and
//! requests written by hand so each byte is exactly what the test says.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

pub const TOKEN: &str = "correct-horse-battery-staple";

pub struct Server {
    child: Child,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Serves `db` (in `dir`) with `extra` arguments, under `ulimit -n fds` if given.
pub fn serve(dir: tempfile::TempDir, db: &Path, extra: &[&str], fds: Option<u32>) -> Server {
    let bin = env!("CARGO_BIN_EXE_robotmem");
    let mut cmd = match fds {
        Some(n) => {
            let mut c = Command::new("sh");
            c.args(["-c", &format!("ulimit -n {n} && exec \"$0\" \"$@\""), bin]);
            c
        }
        None => Command::new(bin),
    };
    let mut child = cmd
        .arg("--db")
        .arg(db)
        .args(["--no-embeddings", "web", "--bind", "127.0.0.1:0"])
        .args(extra)
        .env_remove("ROBOTMEM_WEB_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let port = line.split("http://127.0.0.1:").nth(1).and_then(|r| r.split('/').next()).and_then(|p| p.parse().ok());
    let port = port.unwrap_or_else(|| panic!("no address in {line:?}"));
    Server { child, port, _dir: dir }
}

pub struct Reply {
    pub code: u16,
    /// The head, lowercased.
    pub headers: String,
    pub body: String,
}

impl Reply {
    pub fn parse(raw: &[u8]) -> Reply {
        let text = String::from_utf8_lossy(raw).into_owned();
        let (headers, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let code = headers.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
        Reply { code, headers: headers.to_ascii_lowercase(), body: body.to_string() }
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// A connection to the server.
pub fn connect(s: &Server) -> TcpStream {
    TcpStream::connect(("127.0.0.1", s.port)).unwrap()
}

/// Everything the server sends until it closes.
pub fn read_all(c: &mut TcpStream) -> Reply {
    let mut raw = Vec::new();
    let _ = c.read_to_end(&mut raw);
    Reply::parse(&raw)
}

/// One request; `headers` are extra lines ("Name: value").
pub fn request(s: &Server, method: &str, path: &str, headers: &[&str], body: Option<&[u8]>) -> Reply {
    let mut c = connect(s);
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|h| h.to_ascii_lowercase().starts_with("host:")) {
        head.push_str(&format!("Host: 127.0.0.1:{}\r\n", s.port));
    }
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    if let Some(b) = body {
        head.push_str(&format!("Content-Length: {}\r\nContent-Type: application/json\r\n", b.len()));
    }
    head.push_str("\r\n");
    c.write_all(head.as_bytes()).unwrap();
    if let Some(b) = body {
        let _ = c.write_all(b); // the server may answer (413) before reading it all
    }
    read_all(&mut c)
}

pub fn get(s: &Server, path: &str) -> Reply {
    request(s, "GET", path, &[], None)
}

/// A JSON error `{"error": {"status", "message"}}` of `code` whose message holds `needle`.
pub fn assert_error(r: &Reply, code: u16, needle: &str) {
    assert_eq!(r.code, code, "{}", r.body);
    let v = r.json();
    let msg = v["error"]["message"].as_str().unwrap_or_else(|| panic!("not a JSON error: {}", r.body));
    assert!(msg.contains(needle), "{msg:?} should mention {needle:?}");
    assert!(!r.body.contains("panicked") && !r.body.contains(".rs:"), "{}", r.body);
}

/// The headers every response of the console carries.
pub fn assert_secure(r: &Reply) {
    for h in [
        "content-security-policy: default-src 'none'",
        "x-content-type-options: nosniff",
        "x-frame-options: deny",
        "referrer-policy: no-referrer",
        "cache-control: no-store",
    ] {
        assert!(r.headers.contains(h), "{h:?} missing from {}", r.headers);
    }
}

/// [`assert_error`] and [`assert_secure`], with a JSON content type.
pub fn assert_json_refusal(r: &Reply, code: u16, needle: &str) {
    assert_error(r, code, needle);
    assert_secure(r);
    assert!(r.headers.contains("content-type: application/json"), "{}", r.headers);
}
