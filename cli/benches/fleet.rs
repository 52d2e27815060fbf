//! Fleet sync against a real PostgreSQL (scripts/fleet-test.sh --bench starts it):
//! - push: `robotmem sync --once` of a robot holding N memories of real text (the
//!   SQuAD dev set's sentences, corpus.rs) to an empty hub, memories per second;
//! - pull: `sync --once` of an empty robot receiving them (BM25 only, and with the
//!   `--model-dir` model: each one embedded here);
//! - propagation: two sidecars at `--every 1s`; a memory learned on one robot, the
//!   delay until the other holds it, p50/p95;
//! - idle: a sidecar with nothing to do, CPU and RSS over `--idle-seconds`.
//!
//! cargo bench -p robotmem-cli --bench fleet -- [--memories 10000] [--idle-seconds 20] [--model-dir DIR]

#[path = "corpus.rs"]
mod corpus;
#[path = "../tests/common/hub.rs"]
mod hub;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use corpus::{arg, pct};
use hub::{Robot, Server, Sync, BIN};
use robotmem::{Db, LearnRequest};

/// Peak RSS (VmHWM, MiB) of a running process; 0 once it is gone.
fn peak_rss(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Runs a command to its end: (wall seconds, peak RSS in MiB sampled every 20 ms, stderr).
/// (Not getrusage: a child's ru_maxrss counts the parent's memory at fork.)
fn measured(mut c: Command) -> (f64, f64, String) {
    let started = Instant::now();
    let mut child = c.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut e = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut e).unwrap();
        e
    });
    let mut peak: f64 = 0.0;
    let status = loop {
        peak = peak.max(peak_rss(child.id()));
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let secs = started.elapsed().as_secs_f64();
    let err = out.join().unwrap();
    assert!(status.success(), "{err}");
    (secs, peak, err)
}

fn sync_cmd(db: &Path, r: &Robot, model: bool, extra: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--db").arg(db);
    if model {
        c.args(corpus::cli_args());
    } else {
        c.args(["--no-embeddings", "--durability", "normal"]);
    }
    c.args(["sync", "--robot-id", &r.id, "--share", "all"]).args(extra).env("ROBOTMEM_HUB_URL", &r.url);
    c
}

/// CPU seconds (user + system) and RSS (MiB) of a running process.
fn proc_usage(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let cpu = (fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap()) / ticks;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss = status.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)).unwrap();
    (cpu, rss.parse::<f64>().unwrap() / 1024.0)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let Some(server) = Server::get("fleet bench") else { return };
    let n: usize = arg("--memories").and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let idle: u64 = arg("--idle-seconds").and_then(|v| v.parse().ok()).unwrap_or(20);
    let with_model = corpus::model().is_some();
    let (_, filled) = corpus::filled(n, "fleet").unwrap_or_else(|e| panic!("{e}"));
    let hub = server.hub("fleet_bench");
    let (ra, rb, rc) = (hub.add_robot("a"), hub.add_robot("b"), hub.add_robot("c"));
    let dir = tempfile::Builder::new().prefix("robotmem-fleet-bench").tempdir().unwrap();
    let (fa, fb, fc) = (dir.path().join("a.db"), dir.path().join("b.db"), dir.path().join("c.db"));
    std::fs::copy(&filled, &fa).unwrap();
    let stored = Db::open(corpus::options(&fa)).unwrap().stats().unwrap().active;
    println!(
        "fleet bench: {stored} memories of SQuAD text, hub PostgreSQL on 127.0.0.1, model: {}",
        if with_model { "yes" } else { "no (BM25 only)" }
    );

    let (secs, rss, _) = measured(sync_cmd(&fa, &ra, false, &["--once"]));
    println!(
        "push  {stored} memories, batches of 500: {secs:.2} s = {:.0} memories/s (peak RSS {rss:.0} MiB)",
        stored as f64 / secs
    );
    let (secs, rss, _) = measured(sync_cmd(&fb, &rb, false, &["--once"]));
    println!("pull  {stored} memories into an empty robot, BM25 only: {secs:.2} s = {:.0} memories/s (peak RSS {rss:.0} MiB)", stored as f64 / secs);
    if with_model {
        let (secs, rss, _) = measured(sync_cmd(&fc, &rc, true, &["--once"]));
        println!("pull  {stored} memories, each embedded here by the model: {secs:.2} s = {:.0} memories/s (peak RSS {rss:.0} MiB)", stored as f64 / secs);
    }

    // Propagation: sidecars at --every 1s on a and b; a learns 1 memory every 50 ms.
    let every = ["--every", "1s"];
    let sa = Sync::start(&fa, &ra, &[&every[..], &["--share", "all"]].concat(), dir.path().join("a.log"));
    let sb = Sync::start(&fb, &rb, &every, dir.path().join("b.log"));
    let db_a = Db::open(corpus::options(&fa)).unwrap();
    let reader = rusqlite::Connection::open(&fb).unwrap();
    let count = 200;
    let mut learned = Vec::with_capacity(count);
    let mut arrived: Vec<Option<Instant>> = vec![None; count];
    let started = Instant::now();
    let mut next = 0;
    while arrived.iter().any(Option::is_none) {
        assert!(started.elapsed() < Duration::from_secs(120), "propagation: not all memories arrived");
        if next < count && started.elapsed() >= Duration::from_millis(50 * next as u64) {
            let text = format!("propagation probe {next}: dock {} needs {} s to settle", next % 17, 3 + next);
            db_a.learn(&LearnRequest { insight: &text, ..Default::default() }).unwrap();
            learned.push(Instant::now());
            next += 1;
        }
        let mut st =
            reader.prepare_cached("SELECT content FROM memories WHERE content LIKE 'propagation probe %'").unwrap();
        let now = Instant::now();
        for t in st.query_map([], |r| r.get::<_, String>(0)).unwrap() {
            let t = t.unwrap();
            let k: usize = t["propagation probe ".len()..].split(':').next().unwrap().parse().unwrap();
            arrived[k].get_or_insert(now);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut lat: Vec<f64> = arrived.iter().zip(&learned).map(|(a, l)| (a.unwrap() - *l).as_secs_f64() * 1e3).collect();
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "propagation a -> hub -> b, both sidecars --every 1s, {count} memories at 20/s: p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms",
        pct(&lat, 0.5),
        pct(&lat, 0.95),
        lat[count - 1]
    );
    drop(db_a);
    sa.stop();
    sb.stop();

    // Idle sidecars: the default --every 30s and a busy 1s, BM25-only and with the model.
    let mut configs = vec![("30s", false), ("1s", false)];
    if with_model {
        configs.push(("30s", true));
    }
    for (every, model) in configs {
        let mut c = sync_cmd(&fa, &ra, model, &["--every", every]);
        let mut child = c.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        std::thread::sleep(Duration::from_secs(3)); // connect and a first (empty) cycle
        let (cpu0, _) = proc_usage(child.id());
        std::thread::sleep(Duration::from_secs(idle));
        let (cpu1, rss) = proc_usage(child.id());
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        assert!(child.wait().unwrap().success());
        println!(
            "idle sidecar --every {every}{}: CPU {:.3} % of one core over {idle} s, RSS {rss:.0} MiB",
            if model { " with the model" } else { ", BM25 only" },
            (cpu1 - cpu0) / idle as f64 * 100.0
        );
    }
}
