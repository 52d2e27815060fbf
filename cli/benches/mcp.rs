//! `robotmem mcp` round trips at scale: `cargo bench -p robotmem-cli --bench mcp
//! [-- --memories N --requests R --db PATH --model-dir DIR]` (default 10,000
//! memories, BM25 only; with --model-dir, hybrid with that model).
//!
//! Fills a file with N memories of real text (see corpus.rs; BM25 only), then
//! times the same SQuAD questions as recalls (n = 5) two ways: in process
//! (`Db::recall`) and as `tools/call recall` over the stdio of the real
//! `robotmem mcp` binary (one request at a time, a JSON-RPC line each way,
//! the result rendered and parsed): p50 / p95 / p99, and what the protocol adds.

mod corpus;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use corpus::{arg, pct};
use robotmem::{Db, RecallRequest};
use serde_json::{json, Value};

fn stats(ms: &mut [f64]) -> (f64, f64, f64) {
    ms.sort_by(f64::total_cmp);
    (pct(ms, 0.5), pct(ms, 0.95), pct(ms, 0.99))
}

fn main() {
    let n: usize = arg("--memories").map_or(10_000, |v| v.parse().expect("--memories N"));
    let requests: usize = arg("--requests").map_or(500, |v| v.parse().expect("--requests R"));
    let (set, db_path) = match corpus::filled(n, "mcp") {
        Ok(x) => x,
        Err(e) => {
            eprintln!("SKIPPED mcp bench: {e}");
            return;
        }
    };
    let queries: Vec<&str> = set.queries.iter().map(|q| q.question.as_str()).collect();

    let mut local = Vec::with_capacity(requests);
    {
        let db = Db::open(corpus::options(&db_path)).unwrap();
        for q in queries.iter().take(3) {
            db.recall(&RecallRequest { query: q, ..Default::default() }).unwrap();
        }
        for i in 0..requests {
            let t = Instant::now();
            let r = db.recall(&RecallRequest { query: queries[i % queries.len()], ..Default::default() }).unwrap();
            local.push(t.elapsed().as_secs_f64() * 1e3);
            std::hint::black_box(r);
        }
        db.close().unwrap();
    }

    let mut server = Command::new(env!("CARGO_BIN_EXE_robotmem"))
        .arg("--db")
        .arg(&db_path)
        .args(corpus::cli_args())
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut rpc = Rpc { stdin: server.stdin.take().unwrap(), stdout: BufReader::new(server.stdout.take().unwrap()) };
    rpc.call(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
    );
    rpc.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut remote = Vec::with_capacity(requests);
    for i in 0..requests + 3 {
        let q = queries[i.saturating_sub(3) % queries.len()];
        let t = Instant::now();
        let v = rpc.call(i + 1, "tools/call", json!({"name": "recall", "arguments": {"query": q}}));
        let ms = t.elapsed().as_secs_f64() * 1e3;
        assert_eq!(v["result"]["isError"], false, "{v}");
        if i >= 3 {
            remote.push(ms);
        }
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.id())).unwrap_or_default();
    let hwm = status.lines().find(|l| l.starts_with("VmHWM")).unwrap_or("VmHWM ?").to_string();
    drop(rpc);
    let _ = server.wait();

    let (l50, l95, l99) = stats(&mut local);
    let (r50, r95, r99) = stats(&mut remote);
    let mode = corpus::model().map_or("BM25 only".to_string(), |(d, _)| format!("hybrid, model {}", d.display()));
    println!("\n{n} memories, {mode}, recall n = 5 of SQuAD questions, release build; ms per recall");
    println!("{:<36} {:>6} {:>9} {:>9} {:>9}", "path", "n", "p50", "p95", "p99");
    println!("{:<36} {:>6} {:>9.3} {:>9.3} {:>9.3}", "in process (Db::recall)", requests, l50, l95, l99);
    println!("{:<36} {:>6} {:>9.3} {:>9.3} {:>9.3}", "MCP tools/call over stdio", requests, r50, r95, r99);
    println!(
        "protocol overhead at p50: {:.3} ms; server peak RSS: {}",
        r50 - l50,
        hwm.trim_start_matches("VmHWM:").trim()
    );
}

/// JSON-RPC lines to the server's stdin, answers from its stdout, one at a time.
struct Rpc {
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Rpc {
    fn send(&mut self, v: Value) {
        self.stdin.write_all(v.to_string().as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    fn call(&mut self, id: usize, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).unwrap();
        let v: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(v["id"], id, "{v}");
        v
    }
}
