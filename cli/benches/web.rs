//! The web console's API over HTTP at scale: `cargo bench -p robotmem-cli --bench web
//! [-- --memories N --requests R --db PATH]`.
//!
//! Learns N memories of real text (every sentence of the SQuAD dev set in
//! ../shared/data, repeated in passes with a pass word, as the workload bench's
//! real-text mode does; BM25 only, `Durability::Normal`) into a file — kept at
//! --db to be reused — serves it with the real `robotmem web` binary on
//! 127.0.0.1, and times requests on one keep-alive connection (what a browser
//! does): p50 / p95 / p99 per endpoint, and the server's peak RSS.
//! Targets (issue 13): a page of /api/memories p50 ≤ 5 ms, a BM25 /api/search p50 ≤ 10 ms.

mod corpus;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Instant;

use corpus::{arg, pct};
use robotmem::{Db, ListRequest};

struct Client {
    reader: BufReader<TcpStream>,
    host: String,
}

impl Client {
    fn get(&mut self, path: &str) -> (u16, usize) {
        let req = format!("GET {path} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\n\r\n", self.host);
        self.reader.get_mut().write_all(req.as_bytes()).unwrap();
        let mut status = String::new();
        self.reader.read_line(&mut status).unwrap();
        let code = status.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0u8; len];
        self.reader.read_exact(&mut body).unwrap();
        (code, len)
    }
}

fn main() {
    let n: usize = arg("--memories").map_or(100_000, |v| v.parse().expect("--memories N"));
    let requests: usize = arg("--requests").map_or(300, |v| v.parse().expect("--requests R"));
    let (set, db_path) = match corpus::filled(n, "web") {
        Ok(x) => x,
        Err(e) => {
            eprintln!("SKIPPED web bench: {e}");
            return;
        }
    };
    let mut ids: Vec<i64> = Vec::new();
    {
        let db = Db::open(corpus::options(&db_path)).unwrap();
        // Ids that exist (duplicate sentences were merged), spread over the file.
        for j in 0..6u64 {
            let page = db.list(&ListRequest { offset: j * (n as u64 / 7), limit: 50, ..Default::default() }).unwrap();
            ids.extend(page.memories.iter().map(|m| m.id));
        }
        db.close().unwrap();
    }
    let mut server = Command::new(env!("CARGO_BIN_EXE_robotmem"))
        .arg("--db")
        .arg(&db_path)
        .args(corpus::cli_args())
        .args(["web", "--bind", "127.0.0.1:0", "--read-only"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let host = line.split("http://").nth(1).and_then(|r| r.split('/').next()).expect("server address").to_string();
    let mut c = Client { reader: BufReader::new(TcpStream::connect(&host).unwrap()), host: host.clone() };
    c.reader.get_mut().set_nodelay(true).unwrap();

    let enc = |q: &str| {
        q.bytes()
            .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
            .collect::<String>()
    };
    let total_pages = n / 50;
    let queries: Vec<String> = set.queries.iter().map(|q| format!("/api/search?q={}&n=10", enc(&q.question))).collect();
    type Case<'a> = (&'a str, Box<dyn Fn(usize) -> String + 'a>, usize);
    let cases: Vec<Case> = vec![
        ("memories, first page (50)", Box::new(|_| "/api/memories?per_page=50".to_string()), requests),
        (
            "memories, random page (50)",
            Box::new(move |i| format!("/api/memories?per_page=50&page={}", 1 + (i * 7919) % total_pages.max(1))),
            requests,
        ),
        (
            "memories, category filter",
            Box::new(|_| "/api/memories?per_page=50&category=observation".to_string()),
            requests,
        ),
        ("search, BM25 (SQuAD questions)", Box::new(move |i| queries[i % queries.len()].clone()), requests),
        ("memory detail", Box::new(move |i| format!("/api/memory/{}", ids[(i * 7) % ids.len()])), requests),
        ("sessions, first page", Box::new(|_| "/api/sessions".to_string()), requests),
        ("stats (dashboard)", Box::new(|_| "/api/stats".to_string()), 20),
        ("recent failures (dashboard)", Box::new(|_| "/api/recent-failures?n=8".to_string()), 20),
        ("doctor (quick_check)", Box::new(|_| "/api/doctor".to_string()), 10),
    ];
    println!("\n{n} memories, one keep-alive connection, release build; ms per request");
    println!("{:<34} {:>6} {:>9} {:>9} {:>9}", "endpoint", "n", "p50", "p95", "p99");
    let mut results = Vec::new();
    for (name, path, reps) in &cases {
        for i in 0..3 {
            c.get(&path(i)); // warm
        }
        let mut ms = Vec::with_capacity(*reps);
        for i in 0..*reps {
            let t = Instant::now();
            let (code, _) = c.get(&path(i));
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            assert_eq!(code, 200, "{name}: {}", path(i));
        }
        ms.sort_by(f64::total_cmp);
        println!("{:<34} {:>6} {:>9.3} {:>9.3} {:>9.3}", name, reps, pct(&ms, 0.5), pct(&ms, 0.95), pct(&ms, 0.99));
        results.push((name.to_string(), pct(&ms, 0.5)));
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.id())).unwrap_or_default();
    let hwm = status.lines().find(|l| l.starts_with("VmHWM")).unwrap_or("VmHWM ?").to_string();
    println!("server peak RSS: {}", hwm.trim_start_matches("VmHWM:").trim());
    let _ = server.kill();
    let _ = server.wait();
    let p50 = |k: &str| results.iter().find(|(n, _)| n.starts_with(k)).map_or(f64::NAN, |r| r.1);
    println!("\ntargets");
    println!(
        "  /api/memories page p50 <= 5 ms      {:>8.3}  {}",
        p50("memories, first"),
        if p50("memories, first") <= 5.0 { "MET" } else { "MISSED" }
    );
    println!(
        "  /api/search BM25 p50 <= 10 ms       {:>8.3}  {}",
        p50("search"),
        if p50("search") <= 10.0 { "MET" } else { "MISSED" }
    );
}
