//! `robotmem mcp` as a child process spoken to in raw JSON-RPC lines, for
//! tests/mcp.rs and tests/mcp_attack.rs: every stdout line must be a JSON-RPC
//! 2.0 message (stdout carries only the protocol).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

pub const TIMEOUT: Duration = Duration::from_secs(120);

pub struct Server {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    pub lines: Receiver<String>,
    /// Messages read while waiting for another one.
    pub pending: Vec<Value>,
    pub next_id: i64,
}

impl Server {
    pub fn start(db: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_robotmem"))
            .arg("mcp")
            .arg("--db")
            .arg(db)
            .args(["--no-embeddings", "--durability", "normal"])
            .env_remove("ROBOTMEM_MODEL_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Server { child, stdin, lines, pending: Vec::new(), next_id: 100 }
    }

    /// A started server after the handshake at `version`; returns the initialize result too.
    pub fn ready(db: &Path, version: &str) -> (Server, Value) {
        let mut s = Server::start(db);
        let r = s.request(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        );
        s.send_raw(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        (s, r)
    }

    pub fn send_raw(&mut self, line: &str) {
        self.send_bytes(line.as_bytes());
    }

    /// `line` and a newline, whatever the bytes.
    pub fn send_bytes(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message matching `pred` (others are kept for later).
    pub fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.pending.iter().position(&pred) {
            return self.pending.remove(i);
        }
        let deadline = std::time::Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| panic!("no answer for {what}"));
            let v: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
            assert_eq!(v["jsonrpc"], "2.0", "{v}");
            if pred(&v) {
                return v;
            }
            self.pending.push(v);
        }
    }

    /// The whole response to a request (`result` or `error`).
    pub fn call_raw(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send_raw(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
        self.wait_for(method, |v| v["id"] == id)
    }

    /// The result of a request that must succeed.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let r = self.call_raw(method, params);
        assert!(r.get("error").is_none(), "{method} failed: {r}");
        r["result"].clone()
    }

    /// A tools/call result (the protocol call must succeed; the tool may fail).
    pub fn tool(&mut self, name: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": args}))
    }

    /// A tool call that must succeed: its structured result, checked against the text.
    pub fn ok(&mut self, name: &str, args: Value) -> Value {
        let r = self.tool(name, args.clone());
        assert_eq!(r["isError"], false, "{name} {args}: {r}");
        let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, r["structuredContent"], "text and structured content differ");
        text
    }

    /// A tool call that must fail with a message containing every word of `needles`.
    pub fn fails(&mut self, name: &str, args: Value, needles: &[&str]) -> String {
        let r = self.tool(name, args.clone());
        assert_eq!(r["isError"], true, "{name} {args} should fail: {r}");
        let m = r["content"][0]["text"].as_str().unwrap().to_string();
        for n in needles {
            assert!(m.contains(n), "{name} {args}: message {m:?} lacks {n:?}");
        }
        m
    }

    pub fn alive(&mut self) {
        let r = self.request("ping", json!({}));
        assert_eq!(r, json!({}));
    }

    /// Asserts that no message is left unread and none comes within `quiet`.
    pub fn nothing_more(&mut self, quiet: Duration) {
        assert!(self.pending.is_empty(), "unexpected messages: {:?}", self.pending);
        if let Ok(line) = self.lines.recv_timeout(quiet) {
            panic!("unexpected message: {line}");
        }
    }

    /// Closes stdin and waits for the exit status.
    pub fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        wait(&mut self.child)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn wait(child: &mut Child) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(std::time::Instant::now() < deadline, "the server did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn temp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new().prefix("robotmem-mcp-test").tempdir().unwrap();
    let db = dir.path().join("m.db");
    (dir, db)
}
