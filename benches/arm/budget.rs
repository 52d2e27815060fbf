//! Memory and file budget, and the phases whose instructions are counted, for the
//! aarch64 figures of docs/ARM64.md (scripts/aarch64-budget.sh runs it natively
//! on x86_64, under valgrind, and under qemu-aarch64). Not a timing benchmark:
//! under emulation times mean nothing.
//!
//!     cargo bench --bench arm-budget -- build --db F --memories N [--real K] [--model-dir D --ort-library L]
//!     cargo bench --bench arm-budget -- run --db F [--recalls R] [--learns L] [--model-dir D --ort-library L]
//!
//! `build`: learns N memories of the workload bench's synthetic robot corpus
//! (benches/workload/corpus.rs) into a new database with `learn_batch` (100 at a
//! time); with a model the first K (default N) are embedded, the others learned
//! without the model and then given perturbed copies of those K vectors through
//! SQL (as the workload bench's `--large-build copy`: the file holds N vectors).
//! `run`: opens an existing database (with the model or BM25 only), then R
//! recalls of the workload bench's query mix, then L learns one at a time
//! (`learn`, new memories of the corpus), then closes it.
//!
//! Prints one JSON line: the file's bytes (with its -wal and -shm), the peak and
//! current RSS (/proc/self/status: under qemu-user that is the emulator's
//! process), the heap in use as the C library counts it (`mallinfo2`: every
//! malloc of the process, Rust's, SQLite's and ONNX Runtime's), the Rust heap's
//! peak (a counting global allocator), at the end of each phase.
//!
//! Phase marks for instruction counters: before and after each phase the bench
//! calls `write(-1, buf, phase)` (fails with EBADF, does nothing), seen by
//! benches/arm/insn_count.c under qemu, and calls the non-inlined
//! `robotmem_arm_mark`, where valgrind's `--dump-before` cuts its profile.
//! Phases: 1 open; 2 the first recall of each kind (plain, with a
//! context_filter, with a spatial_sort: they load the text index, the vector
//! index, the tokenizer's dictionary and the spatial index); the other recalls
//! of the mix by kind: 3 plain, 4 with a context_filter whose filter is used for
//! the first time (the engine then reads that filter's fields of every memory),
//! 5 with a context_filter used before, 6 with a spatial_sort; 7 the first
//! learn; 8 the other L − 1 learns; 9 close.

#[path = "../workload/corpus.rs"]
#[allow(dead_code)]
mod corpus;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use robotmem::internals::store::vectors;
use robotmem::{Db, Durability, LearnRequest, OpenOptions};
use serde_json::{json, Map, Value};

/// The system allocator, counting the bytes Rust holds (current and peak).
struct Counting;
static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = HELD.fetch_add(l.size(), Relaxed) + l.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        HELD.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            HELD.fetch_sub(l.size(), Relaxed);
            let now = HELD.fetch_add(new, Relaxed) + new;
            PEAK.fetch_max(now, Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const USAGE: &str = "usage: cargo bench --bench arm-budget -- build --db FILE --memories N [--real K]
           [--model-dir DIR --ort-library FILE] [--threads T] [--seed S]
       cargo bench --bench arm-budget -- run --db FILE [--recalls R] [--learns L]
           [--model-dir DIR --ort-library FILE] [--threads T] [--seed S]
  build      learn N corpus memories into a new FILE (with the model: the first K embedded,
             the rest given perturbed copies of their vectors; default K = N)
  run        open FILE, R recalls of the query mix (default 40), L single learns (default 20), close
  --threads  embed_threads (default 2, the library's default; 1 for instruction counts)
  Prints one JSON line (file bytes, RSS, heap in use per phase). See docs/ARM64.md.";

struct Args {
    cmd: String,
    db: PathBuf,
    memories: usize,
    real: Option<usize>,
    recalls: usize,
    learns: usize,
    model_dir: Option<PathBuf>,
    ort: Option<PathBuf>,
    threads: u32,
    seed: u64,
}

fn parse() -> Result<Args, String> {
    let mut it = std::env::args().skip(1).filter(|a| a != "--bench");
    // `cargo bench` with no arguments runs every bench: nothing to do here.
    let cmd = it.next().unwrap_or_else(|| "--help".into());
    if cmd == "-h" || cmd == "--help" {
        println!("{USAGE}");
        std::process::exit(0);
    }
    let mut a = Args {
        cmd,
        db: PathBuf::new(),
        memories: 0,
        real: None,
        recalls: 40,
        learns: 20,
        model_dir: None,
        ort: None,
        threads: 2,
        seed: corpus::SEED,
    };
    while let Some(arg) = it.next() {
        let mut v = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        let n = |s: String| s.replace('_', "").parse::<u64>().map_err(|_| format!("not a number: {s}"));
        match arg.as_str() {
            "--db" => a.db = v()?.into(),
            "--memories" => a.memories = n(v()?)? as usize,
            "--real" => a.real = Some(n(v()?)? as usize),
            "--recalls" => a.recalls = n(v()?)? as usize,
            "--learns" => a.learns = n(v()?)? as usize,
            "--model-dir" => a.model_dir = Some(v()?.into()),
            "--ort-library" => a.ort = Some(v()?.into()),
            "--threads" => a.threads = n(v()?)? as u32,
            "--seed" => a.seed = n(v()?)?,
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    if a.db.as_os_str().is_empty() {
        return Err("--db FILE is required".into());
    }
    if !matches!(a.cmd.as_str(), "build" | "run") {
        return Err(format!("unknown command {:?}", a.cmd));
    }
    Ok(a)
}

/// A phase mark for the instruction counters (module docs).
#[no_mangle]
#[inline(never)]
pub extern "C" fn robotmem_arm_mark(phase: usize) {
    static BUF: [u8; 16] = [0; 16];
    // SAFETY: writes at most 16 bytes of a static buffer to fd -1, which fails (EBADF).
    unsafe { libc::write(-1, BUF.as_ptr().cast(), phase.min(BUF.len())) };
}

fn status_kb(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn file_bytes(db: &Path) -> u64 {
    let len = |p: PathBuf| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let s = db.to_string_lossy();
    len(db.to_path_buf()) + len(format!("{s}-wal").into()) + len(format!("{s}-shm").into())
}

/// What memory the process holds now.
fn memory() -> Value {
    // SAFETY: mallinfo2 only reads the allocator's counters.
    let mi = unsafe { libc::mallinfo2() };
    json!({
        "malloc_in_use": mi.uordblks + mi.hblkhd,
        "rust_heap": HELD.load(Relaxed),
        "rust_heap_peak": PEAK.load(Relaxed),
        "vm_rss_kb": status_kb("VmRSS:"),
        "vm_hwm_kb": status_kb("VmHWM:"),
    })
}

fn options(a: &Args, with_model: bool) -> OpenOptions {
    let mut o = OpenOptions::path(&a.db);
    o.durability = Durability::Normal;
    o.embed_threads = a.threads;
    o.embeddings = with_model && a.model_dir.is_some();
    o.model_dir = a.model_dir.clone();
    o.ort_library = a.ort.clone();
    o
}

fn open(a: &Args, with_model: bool) -> Db {
    let db = Db::open(options(a, with_model)).unwrap_or_else(|e| panic!("open {}: {e}", a.db.display()));
    if with_model && a.model_dir.is_some() {
        let s = db.embedding_status().unwrap();
        assert_eq!(s.state, robotmem::EmbeddingState::Ready, "the model: {}", s.reason);
    }
    db
}

fn gauss(r: &mut corpus::Rng) -> f32 {
    let (u, v) = (r.f64().max(1e-12), r.f64());
    ((-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()) as f32
}

fn build(a: &Args, out: &mut Map<String, Value>) {
    assert!(!a.db.exists(), "{} exists (build makes a new database)", a.db.display());
    let mut c = corpus::Corpus::new(a.seed);
    let real = if a.model_dir.is_some() { a.real.unwrap_or(a.memories).min(a.memories) } else { 0 };
    let t = Instant::now();
    let mut learn = |db: &Db, n: usize| {
        let mut done = 0;
        while done < n {
            let ms: Vec<corpus::Memory> = (0..100.min(n - done)).map(|_| c.next_memory()).collect();
            let reqs: Vec<LearnRequest> = ms.iter().map(corpus::Memory::request).collect();
            db.learn_batch(&reqs).expect("learn_batch");
            done += ms.len();
        }
    };
    if real > 0 {
        let db = open(a, true);
        learn(&db, real);
        db.close().unwrap();
    }
    let db = open(a, false);
    learn(&db, a.memories - real);
    db.close().unwrap();
    if real > 0 && real < a.memories {
        // The vectors of the memories learned without the model: perturbed copies.
        let conn = rusqlite::Connection::open(&a.db).unwrap();
        vectors::register(&conn).unwrap();
        let mut reals: Vec<Vec<u8>> = Vec::new();
        {
            let mut st = conn.prepare("SELECT embedding FROM memory_vec").unwrap();
            let rows = st.query_map([], |r| r.get::<_, Vec<u8>>(0)).unwrap();
            reals.extend(rows.map(Result::unwrap));
        }
        let todo: Vec<(i64, String)> = {
            let mut st = conn.prepare("SELECT id, collection FROM memories WHERE embedded = 0").unwrap();
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
            rows.map(Result::unwrap).collect()
        };
        let mut r = corpus::Rng::new(a.seed ^ 0xC0B1);
        let tx = conn.unchecked_transaction().unwrap();
        {
            let mut ins =
                tx.prepare("INSERT INTO memory_vec (rowid, collection, embedding) VALUES (?1, ?2, ?3)").unwrap();
            let mut upd = tx.prepare("UPDATE memories SET embedded = 1 WHERE id = ?1").unwrap();
            for (id, coll) in &todo {
                let src = &reals[(r.next_u64() % reals.len() as u64) as usize];
                let mut v: Vec<f32> = src
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) + 0.02 * gauss(&mut r))
                    .collect();
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter_mut().for_each(|x| *x /= norm);
                let blob: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                ins.execute(rusqlite::params![id, coll, blob]).unwrap();
                upd.execute([id]).unwrap();
            }
        }
        tx.commit().unwrap();
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
        drop(conn);
        // One open with the model: it loads the new vectors into the index and
        // saves its snapshot, as a robot's database would have it.
        open(a, true).close().unwrap();
    }
    out.insert("memories".into(), json!(a.memories));
    out.insert("embedded".into(), json!(real));
    out.insert("copied_vectors".into(), json!(if real > 0 { a.memories - real } else { 0 }));
    out.insert("seconds".into(), json!((t.elapsed().as_secs_f64() * 10.0).round() / 10.0));
    out.insert("after_build".into(), memory());
}

fn run(a: &Args, out: &mut Map<String, Value>) {
    let with_model = a.model_dir.is_some();
    out.insert("file_bytes_before".into(), json!(file_bytes(&a.db)));
    robotmem_arm_mark(1);
    let db = open(a, with_model);
    robotmem_arm_mark(1);
    out.insert("after_open".into(), memory());
    let stats = db.stats().unwrap();
    out.insert("active".into(), json!(stats.active));

    let qs = corpus::queries(a.recalls.max(1), a.seed);
    let mut hits = 0;
    let mut kinds = Map::new();
    let first: Vec<&corpus::Query> =
        corpus::Kind::ALL.iter().filter_map(|&k| qs.iter().find(|q| q.kind == k)).collect();
    let of = |k: corpus::Kind| {
        qs.iter().filter(|q| q.kind == k && !first.iter().any(|f| std::ptr::eq(*f, *q))).collect::<Vec<_>>()
    };
    // Filtered recalls: the first with each filter, and those whose filter was used before.
    let mut seen: Vec<&Option<String>> = first.iter().map(|q| &q.filter).collect();
    let (mut new_filter, mut old_filter) = (Vec::new(), Vec::new());
    for q in of(corpus::Kind::Filter) {
        if seen.contains(&&q.filter) {
            old_filter.push(q);
        } else {
            seen.push(&q.filter);
            new_filter.push(q);
        }
    }
    let phases = [
        (2, "first", first.clone()),
        (3, "plain", of(corpus::Kind::Plain)),
        (4, "filter_new", new_filter),
        (5, "filter", old_filter),
        (6, "spatial", of(corpus::Kind::Spatial)),
    ];
    let mut ms = Map::new();
    for (phase, name, qs) in phases {
        robotmem_arm_mark(phase);
        let t = Instant::now();
        for q in &qs {
            hits += db.recall(&q.request()).unwrap_or_else(|e| panic!("recall {:?}: {e}", q.text)).hits.len();
        }
        let dt = t.elapsed().as_secs_f64();
        robotmem_arm_mark(phase);
        kinds.insert(name.into(), json!(qs.len()));
        ms.insert(name.into(), json!((dt * 1e6 / qs.len().max(1) as f64).round() / 1e3));
    }
    out.insert("recalls".into(), Value::Object(kinds));
    // Wall time per recall: meaningful natively only (on a board), not under emulation.
    out.insert("recall_ms".into(), Value::Object(ms));
    out.insert("hits".into(), json!(hits));
    out.insert("after_recalls".into(), memory());

    let mut c = corpus::Corpus::new(a.seed ^ 0x1EA2);
    let ms: Vec<corpus::Memory> = (0..a.learns.max(1)).map(|_| c.next_memory()).collect();
    for (phase, ms) in [(7, &ms[..1]), (8, &ms[1..])] {
        robotmem_arm_mark(phase);
        for m in ms {
            db.learn(&m.request()).expect("learn");
        }
        robotmem_arm_mark(phase);
    }
    out.insert("learns".into(), json!(ms.len()));
    out.insert("after_learns".into(), memory());

    robotmem_arm_mark(9);
    db.close().unwrap();
    robotmem_arm_mark(9);
    out.insert("after_close".into(), memory());
}

fn main() {
    let a = parse().unwrap_or_else(|e| {
        eprintln!("arm-budget: {e}\n{USAGE}");
        std::process::exit(2)
    });
    let mut out = Map::new();
    out.insert("bench".into(), json!("robotmem-arm-budget"));
    out.insert("cmd".into(), json!(a.cmd));
    out.insert("arch".into(), json!(std::env::consts::ARCH));
    out.insert("model".into(), json!(a.model_dir.is_some()));
    out.insert("threads".into(), json!(a.threads));
    match a.cmd.as_str() {
        "build" => build(&a, &mut out),
        _ => run(&a, &mut out),
    }
    out.insert("file_bytes".into(), json!(file_bytes(&a.db)));
    println!("{}", Value::Object(out));
}
