//! Reliability: a full disk (size limit) and processes killed with SIGKILL mid-write.

#[path = "common/scratch.rs"]
mod scratch;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use robotmem::*;

fn temp_dir(name: &str) -> scratch::Scratch {
    scratch::Scratch::new(&format!("rel-{name}"))
}

fn integrity_ok(path: &Path) {
    let c = rusqlite::Connection::open(path).unwrap();
    let r: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(r, "ok", "integrity_check of {}", path.display());
}

#[test]
fn full_database_returns_full_and_stays_usable() {
    let d = temp_dir("full");
    let p = d.join("m.db");
    let limited = || Db::open(OpenOptions { max_db_bytes: Some(256 * 1024), ..OpenOptions::path(&p) }).unwrap();
    let db = limited();
    let mut stored = Vec::new();
    let mut full = None;
    for i in 0..20_000 {
        let text = format!("waypoint {i} reached at x={i}.25 y={}.5 with heading {} deg", i * 3, i % 360);
        match db.learn(&LearnRequest { insight: &text, ..Default::default() }) {
            Ok(o) => stored.push((o.memory_id, i)),
            Err(e) => {
                full = Some(e);
                break;
            }
        }
    }
    let e = full.expect("a 256 KiB limit fills up");
    assert_eq!(e.status, Status::Full, "{e}");
    // Reads still work and nothing half-written is visible.
    let (last_id, last_i) = *stored.last().unwrap();
    assert_eq!(db.get(last_id).unwrap().content.split(' ').nth(1), Some(last_i.to_string().as_str()));
    assert!(!db.recall(&RecallRequest { query: "waypoint reached", ..Default::default() }).unwrap().hits.is_empty());
    drop(db);
    integrity_ok(&p);
    // Space returns: the same file takes writes again.
    let db = Db::open(OpenOptions::path(&p)).unwrap();
    db.learn(&LearnRequest { insight: "space is back on the robot's disk", ..Default::default() }).unwrap();
    for (id, _) in stored.iter().step_by(97) {
        db.get(*id).unwrap();
    }
}

/// The child side of `sigkill_never_loses_an_acknowledged_write`: learns until killed,
/// printing each acknowledged id. Does nothing unless the parent started it.
#[test]
fn crash_child() {
    let Some(path) = std::env::var_os("RM_CRASH_CHILD_DB") else { return };
    let start: u64 = std::env::var("RM_CRASH_CHILD_START").unwrap().parse().unwrap();
    let db = Db::open(OpenOptions::path(PathBuf::from(path))).unwrap();
    let out = std::io::stdout();
    for k in start.. {
        let text = format!("crash survivor {k} codeword zq{k}x at {k}.5N");
        let o = db.learn(&LearnRequest { insight: &text, ..Default::default() }).unwrap();
        use std::io::Write;
        let mut lock = out.lock();
        writeln!(lock, "ACK {} {k}", o.memory_id).unwrap();
        lock.flush().unwrap();
    }
}

#[test]
fn sigkill_never_loses_an_acknowledged_write() {
    let d = temp_dir("kill");
    let p = d.join("m.db");
    drop(Db::open(OpenOptions::path(&p)).unwrap());
    let exe = std::env::current_exe().unwrap();
    let mut acked: Vec<(i64, u64)> = Vec::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let kills = 20;
    for round in 0..kills {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let run_for = Duration::from_millis(seed % 200);
        let start = acked.last().map_or(0, |a| a.1 + 1);
        let mut child = Command::new(&exe)
            .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
            .env("RM_CRASH_CHILD_DB", &p)
            .env("RM_CRASH_CHILD_START", start.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                let mut it = line.strip_prefix("ACK ").unwrap_or_default().split(' ');
                if let (Some(Ok(id)), Some(Ok(k))) =
                    (it.next().map(str::parse::<i64>), it.next().map(str::parse::<u64>))
                {
                    if tx.send((id, k)).is_err() {
                        break;
                    }
                }
            }
        });
        // Kill at a random moment after the child is writing.
        let first = rx.recv_timeout(Duration::from_secs(30)).expect("child acknowledged nothing in 30 s");
        acked.push(first);
        let t = Instant::now();
        while t.elapsed() < run_for {
            std::thread::sleep(Duration::from_millis(1));
        }
        unsafe { libc_kill(child.id() as i32, 9) };
        child.wait().unwrap();
        reader.join().unwrap();
        acked.extend(rx.try_iter());
        // After every kill: the file is intact and every acknowledged memory is
        // present, active and findable through both indexes.
        integrity_ok(&p);
        let db = Db::open(OpenOptions::path(&p)).unwrap();
        for &(id, k) in &acked {
            let m = db.get(id).unwrap_or_else(|e| panic!("round {round}: acknowledged #{id} lost: {e}"));
            assert_eq!(m.status, MemoryStatus::Active);
            assert!(m.content.contains(&format!("zq{k}x")));
        }
        if let Some(&(id, k)) = acked.last() {
            let q = format!("zq{k}x");
            let r = db.recall(&RecallRequest { query: &q, ..Default::default() }).unwrap();
            assert_eq!(r.hits.first().map(|h| h.memory.id), Some(id), "round {round}: last ack not searchable");
        }
        let c = rusqlite::Connection::open(&p).unwrap();
        // Every memory gets at least one tag in the same transaction: a memory
        // without tags would be a half-written learn.
        let untagged: i64 = c
            .query_row(
                "SELECT count(*) FROM memories m WHERE NOT EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_id = m.id)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(untagged, 0, "round {round}: a memory without its tags (half-written learn)");
    }
    assert!(acked.len() >= kills, "the children acknowledged only {} writes", acked.len());
    println!("{kills} kills survived, {} acknowledged writes checked", acked.len());
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}
