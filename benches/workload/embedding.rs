//! Embedding benchmark: the `--embedding` mode of the workload bench.
//!
//!     cargo bench --bench workload -- --embedding                       # everything, 10k + 100k
//!     cargo bench --bench workload -- --embedding --phases query,knn
//!     cargo bench --bench workload -- --embedding --large 100000 --large-build copy
//!
//! Measures the embedding targets: query embedding, vector KNN at 10k / 100k,
//! hybrid recall at 100k (including the query embedding), learn with an
//! embedding (one at a time, Normal and Full), batch learn throughput, peak RSS
//! with jieba + model + 10k memories, and open() with the model (first open in
//! a process, which loads ONNX Runtime, and a second one).
//!
//! Every latency is a plain `std::time::Instant` around one call; percentiles are
//! nearest-rank. RSS comes from /proc/self/status (VmRSS, VmHWM). The first-open
//! and RSS figures need a fresh process, so the bench runs itself as a child
//! process for them (`--child open|rss`). Prints a plain-text report and, last,
//! one JSON line starting with `{"bench":"robotmem-embedding"`.
//! See docs/BENCHMARKS.md and docs/BENCHMARKS-embeddings.md.

use std::path::{Path, PathBuf};
use std::time::Instant;

use robotmem::embed::{self, EmbedSettings, Embedder, Embedding, TextKind};
use robotmem::embed::ModelStamp;
use robotmem::search::vindex::VectorIndex;
use robotmem::store::vectors;
use robotmem::{Db, Durability, LearnRequest, Location, OpenOptions, RecallRequest, SearchMode};
use rusqlite::{params, Connection, OpenFlags};
use serde_json::{json, Map, Value};

use crate::corpus::{self, Corpus, Kind, Memory, Rng};
use crate::stats::{header, mib, proc_status_kb, Summary};

// Targets of the embedding issue (release build, 2-core machine).
const QUERY_EMBED_P50_MS: f64 = 5.0;
const KNN_10K_P50_MS: f64 = 3.0;
const KNN_100K_P50_MS: f64 = 15.0;
const HYBRID_100K_P50_MS: f64 = 10.0;
const LEARN_EMBED_P50_MS: f64 = 8.0;
const BATCH_PER_S: f64 = 150.0;
/// 200 MB, in MiB (VmHWM is reported in kB = KiB).
const RSS_10K_MIB: f64 = 200e6 / 1048576.0;
const OPEN_MS: f64 = 500.0;

/// The k the engine asks sqlite-vec for in a recall of n = 5 (fusion depth 40, ×2).
const RECALL_K: usize = 80;
/// The k of the cosine dedup layer of learn.
const DEDUP_K: usize = 8;

const PHASES: &[&str] = &["open", "rss", "query", "ort", "learn", "batch", "knn", "hybrid"];

pub const USAGE: &str = "usage: cargo bench --bench workload -- --embedding [--phases LIST] [--memories N]
       [--large N] [--large-build embed|copy] [--large-db FILE] [--samples N] [--warmup N]
       [--learns N] [--threads LIST] [--batch N] [--open-runs N] [--alt-model FILE] [--wait-idle S]
       [--model-dir DIR]
       [--ort-library FILE] [--dir DIR] [--keep] [--seed N]

  --phases LIST    comma-separated subset of open,rss,query,ort,learn,batch,knn,hybrid
                   (default: all, in that order)
  --memories N     size of the real embedded corpus: learn, batch, RSS, KNN at 10k (default 10000)
  --large N        size of the large database: KNN and hybrid recall (default 100000)
  --large-build B  embed: learn_batch every memory with the model (default);
                   copy: embed --memories texts, store the rest without the model and give
                   them perturbed copies of the real vectors through SQL
  --large-db FILE  reuse a large database kept by an earlier run (--keep) instead of building one
  --samples N      measured calls per latency series (default 200)
  --warmup N       unmeasured calls before them (default 20)
  --learns N       one-at-a-time learns per durability (default: --memories)
  --threads LIST   embed_threads values to compare (default 1,2)
  --batch N        texts per learn_batch call (default 100)
  --open-runs N    fresh processes for the open figures (default 5)
  --alt-model FILE phase ort: also time this ONNX file (same tokenizer) and compare its vectors
                   with the engine model's; repeatable
  --wait-idle S    before each phase, wait up to S seconds until other processes use less than
                   0.25 cores (shared machines; default 0: do not wait)
  --model-dir DIR  default: .cache/models/all-MiniLM-L6-v2-int8 of the crate (scripts/fetch-model.sh)
  --ort-library F  default: .cache/models/onnxruntime/libonnxruntime.so of the crate
  --dir DIR        where the temporary directory is made (default: cargo's target/tmp)
  --keep           keep the database files (their path is printed)
  --seed N         corpus and query seed (default fixed)";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum LargeBuild {
    Embed,
    Copy,
}

#[derive(Clone, Debug)]
struct Args {
    phases: Vec<String>,
    memories: usize,
    large: usize,
    large_build: LargeBuild,
    large_db: Option<PathBuf>,
    samples: usize,
    warmup: usize,
    learns: Option<usize>,
    threads: Vec<u32>,
    batch: usize,
    alt_models: Vec<PathBuf>,
    wait_idle: u64,
    open_runs: usize,
    model_dir: PathBuf,
    ort: PathBuf,
    dir: Option<PathBuf>,
    keep: bool,
    seed: u64,
    /// Internal: run one child measurement (`open`, `rss-single`, `rss-batch`, `rss-bm25`) and print JSON.
    child: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut a = Args {
        phases: PHASES.iter().map(|s| s.to_string()).collect(),
        memories: 10_000,
        large: 100_000,
        large_build: LargeBuild::Embed,
        large_db: None,
        samples: 200,
        warmup: 20,
        learns: None,
        threads: vec![1, 2],
        batch: 100,
        alt_models: Vec::new(),
        wait_idle: 0,
        open_runs: 5,
        model_dir: root.join(".cache/models/all-MiniLM-L6-v2-int8"),
        ort: root.join(".cache/models/onnxruntime/libonnxruntime.so"),
        dir: None,
        keep: false,
        seed: corpus::SEED,
        child: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        let num = |name: &str, v: String| {
            v.replace('_', "")
                .parse::<u64>()
                .map_err(|_| format!("{name}: not a number: {v}"))
        };
        match arg.as_str() {
            "--bench" | "--embedding" => {}
            "--phases" => {
                let v = value("--phases")?;
                a.phases = v
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                if let Some(p) = a.phases.iter().find(|p| !PHASES.contains(&p.as_str())) {
                    return Err(format!("--phases: unknown phase {p:?}"));
                }
            }
            "--memories" => a.memories = num("--memories", value("--memories")?)? as usize,
            "--large" => a.large = num("--large", value("--large")?)? as usize,
            "--large-build" => {
                a.large_build = match value("--large-build")?.as_str() {
                    "embed" => LargeBuild::Embed,
                    "copy" => LargeBuild::Copy,
                    b => return Err(format!("--large-build: expected embed or copy, got {b}")),
                }
            }
            "--large-db" => a.large_db = Some(PathBuf::from(value("--large-db")?)),
            "--samples" => a.samples = num("--samples", value("--samples")?)? as usize,
            "--warmup" => a.warmup = num("--warmup", value("--warmup")?)? as usize,
            "--learns" => a.learns = Some(num("--learns", value("--learns")?)? as usize),
            "--threads" => {
                a.threads = value("--threads")?
                    .split(',')
                    .map(|t| {
                        t.trim()
                            .parse::<u32>()
                            .map_err(|_| format!("--threads: not a number: {t}"))
                    })
                    .collect::<Result<_, _>>()?
            }
            "--batch" => a.batch = num("--batch", value("--batch")?)? as usize,
            "--alt-model" => a.alt_models.push(PathBuf::from(value("--alt-model")?)),
            "--wait-idle" => a.wait_idle = num("--wait-idle", value("--wait-idle")?)?,
            "--open-runs" => a.open_runs = num("--open-runs", value("--open-runs")?)? as usize,
            "--model-dir" => a.model_dir = PathBuf::from(value("--model-dir")?),
            "--ort-library" => a.ort = PathBuf::from(value("--ort-library")?),
            "--dir" => a.dir = Some(PathBuf::from(value("--dir")?)),
            "--keep" => a.keep = true,
            "--seed" => a.seed = num("--seed", value("--seed")?)?,
            "--child" => a.child = Some(value("--child")?),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if a.memories == 0 || a.large == 0 || a.samples == 0 || a.batch == 0 || a.threads.is_empty() {
        return Err("--memories, --large, --samples, --batch and --threads must be at least 1".into());
    }
    Ok(a)
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn r3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let t = Instant::now();
    let out = f();
    (out, t.elapsed().as_nanos() as u64)
}

fn hwm() -> f64 {
    mib(proc_status_kb("VmHWM"))
}

fn rss() -> f64 {
    mib(proc_status_kb("VmRSS"))
}

/// (busy jiffies of the whole machine, jiffies of this process and its waited-for
/// children), from /proc/stat and /proc/self/stat.
fn cpu_jiffies() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let f: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let busy = if f.len() >= 8 {
        f[0] + f[1] + f[2] + f[5] + f[6] + f[7]
    } else {
        0
    };
    let me = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = me.rsplit_once(')').map(|x| x.1).unwrap_or("");
    let g: Vec<u64> = after.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    // Fields 14-17 of the file (utime, stime, cutime, cstime) are 11-14 after the comm field.
    let own = if g.len() > 14 { g[11] + g[12] + g[13] + g[14] } else { 0 };
    (busy, own)
}

/// CPU cores used by other processes since `from` (busy, own jiffies), over `secs`.
fn other_cores(from: (u64, u64), secs: f64) -> f64 {
    let now = cpu_jiffies();
    let hz = 100.0; // USER_HZ on Linux
    let other = now.0.saturating_sub(from.0) as f64 - now.1.saturating_sub(from.1) as f64;
    (other / hz / secs.max(1e-9)).max(0.0)
}

/// Waits until other processes use less than 0.25 cores (sampled over 2 s), at most `max_s`.
fn wait_idle(max_s: u64) {
    let started = Instant::now();
    loop {
        let c = cpu_jiffies();
        std::thread::sleep(std::time::Duration::from_secs(2));
        let o = other_cores(c, 2.0);
        let waited = started.elapsed().as_secs();
        if o < 0.25 || waited >= max_s {
            eprintln!("[embedding] waited {waited} s for an idle machine; other processes now use {o:.2} cores");
            return;
        }
    }
}

fn dur_name(d: Durability) -> &'static str {
    match d {
        Durability::Full => "full",
        Durability::Normal => "normal",
    }
}

fn opts(a: &Args, path: &Path, d: Durability, threads: u32, model: bool) -> OpenOptions {
    OpenOptions {
        location: Location::Path(path.to_path_buf()),
        durability: d,
        embeddings: model,
        model_dir: Some(a.model_dir.clone()),
        ort_library: Some(a.ort.clone()),
        embed_threads: threads,
        ..OpenOptions::default()
    }
}

fn open_db(a: &Args, path: &Path, d: Durability, threads: u32, model: bool) -> Db {
    let db = Db::open(opts(a, path, d, threads, model)).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    if model {
        let s = db.embedding_status().expect("embedding_status");
        assert!(
            s.model.is_some(),
            "no embedding model on {}: {} (run scripts/fetch-model.sh or pass --model-dir / --ort-library)",
            path.display(),
            s.reason
        );
    }
    db
}

fn embedder(a: &Args, threads: u32, batch: u32) -> Box<dyn Embedder> {
    embed::load(&EmbedSettings {
        model_dir: Some(a.model_dir.clone()),
        runtime_path: Some(a.ort.clone()),
        threads: threads as usize,
        batch_size: batch as usize,
    })
    .unwrap_or_else(|e| panic!("cannot load the embedding model from {}: {e}", a.model_dir.display()))
}

fn tokenizer(a: &Args) -> tokenizers::Tokenizer {
    let p = a.model_dir.join("tokenizer.json");
    let mut t = tokenizers::Tokenizer::from_file(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    t.with_truncation(Some(tokenizers::TruncationParams {
        max_length: 256,
        ..Default::default()
    }))
    .expect("truncation");
    t.with_padding(None);
    t
}

/// English queries of the recall mix (short sentences).
fn english_queries(n: usize, seed: u64) -> Vec<&'static str> {
    corpus::queries(n * 2 + 64, seed)
        .into_iter()
        .filter(|q| !q.chinese)
        .map(|q| q.text)
        .take(n)
        .collect()
}

fn memories(n: usize, seed: u64) -> Vec<Memory> {
    let mut c = Corpus::new(seed);
    (0..n).map(|_| c.next_memory()).collect()
}

fn request(m: &Memory) -> LearnRequest<'_> {
    LearnRequest {
        insight: &m.insight,
        context: Some(&m.context),
        ..Default::default()
    }
}

fn file_bytes(db: &Path) -> u64 {
    let len = |p: PathBuf| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let s = db.to_string_lossy();
    len(db.to_path_buf()) + len(format!("{s}-wal").into()) + len(format!("{s}-shm").into())
}

fn blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn unblob(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn normalise(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 1e-12 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// Standard normal sample (Box–Muller).
fn gauss(r: &mut Rng) -> f32 {
    let u1 = r.f64().max(1e-300);
    let u2 = r.f64();
    ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32
}

fn random_unit(r: &mut Rng, dim: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dim).map(|_| gauss(r)).collect();
    normalise(&mut v);
    v
}

/// A read connection like the engine's (default page cache) with sqlite-vec registered.
fn raw_conn(path: &Path, read_only: bool) -> Connection {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX
    };
    let c = Connection::open_with_flags(path, flags).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    vectors::register(&c).expect("sqlite-vec");
    c
}

fn count(c: &Connection, sql: &str) -> i64 {
    c.query_row(sql, [], |r| r.get(0)).unwrap_or(-1)
}

/// Query embeddings of `qs` (English queries are always representable).
fn query_vectors(e: &dyn Embedder, qs: &[&str]) -> Vec<Vec<f32>> {
    qs.iter()
        .map(|q| match e.embed(&[q], TextKind::Query).expect("embed").pop() {
            Some(Embedding::Vector(v)) => v,
            _ => panic!("query {q:?} is not representable"),
        })
        .collect()
}

/// A KNN to time: sqlite-vec's `vec0` table or the handle's in-process index.
enum Knn<'a> {
    Vec0(&'a Connection),
    Index(&'a VectorIndex, &'a ModelStamp),
}

impl Knn<'_> {
    fn name(&self) -> &'static str {
        match self {
            Knn::Vec0(_) => "sqlite-vec",
            Knn::Index(..) => "index",
        }
    }

    fn run(&self, q: &[f32], k: usize) -> usize {
        match self {
            Knn::Vec0(c) => vectors::knn(c, "default", q, k).expect("knn").len(),
            Knn::Index(i, m) => i.nearest(m, "default", q, k).expect("index synced").len(),
        }
    }
}

/// Times a KNN for each query vector (after `warmup` unmeasured calls).
fn time_knn(knn: &Knn, qv: &[Vec<f32>], k: usize, samples: usize, warmup: usize) -> (Summary, usize) {
    let mut lat = Vec::with_capacity(samples);
    let mut found = 0;
    for i in 0..warmup + samples {
        let q = &qv[i % qv.len()];
        let (n, dt) = timed(|| knn.run(q, k));
        if i >= warmup {
            lat.push(dt);
            found += n;
        }
    }
    (Summary::of(&lat), found / samples.max(1))
}

/// Recall@k of the index against sqlite-vec's exact f32 KNN over (up to 32) query vectors.
fn index_recall(c: &Connection, index: &VectorIndex, model: &ModelStamp, qv: &[Vec<f32>], k: usize) -> f64 {
    let (mut found, mut wanted) = (0usize, 0usize);
    for q in qv.iter().take(32) {
        let exact: Vec<i64> = vectors::knn(c, "default", q, k).expect("knn").into_iter().map(|x| x.0).collect();
        let got = index.nearest(model, "default", q, k).expect("index synced");
        found += got.iter().filter(|(_, id)| exact.contains(id)).count();
        wanted += exact.len();
    }
    found as f64 / wanted.max(1) as f64
}

/// A vector index loaded from the file behind `c` (a full load: the first sync
/// of a handle), with the load time in ms.
fn load_index(c: &Connection, model: &ModelStamp) -> (VectorIndex, f64) {
    let index = VectorIndex::default();
    let (_, dt) = timed(|| index.sync(c, model).expect("index sync"));
    (index, ms(dt))
}

/// Results collected over the phases.
struct Report {
    targets: Vec<(String, f64, bool)>,
    json: Map<String, Value>,
    /// (phase, VmHWM after it, CPU cores used by other processes during it, seconds)
    hwm: Vec<(String, f64, f64, f64)>,
}

impl Report {
    fn target(&mut self, what: impl Into<String>, value: f64, ok: bool) {
        self.targets.push((what.into(), value, ok));
    }
}

fn section(title: &str) {
    println!();
    println!("== {title} ==");
}

// ---------------------------------------------------------------------------------------------

pub fn main() {
    let a = parse_args().unwrap_or_else(|e| {
        eprintln!("workload --embedding: {e}\n{USAGE}");
        std::process::exit(2);
    });
    if let Some(child) = a.child.clone() {
        let out = run_child(&a, &child);
        println!("{out}");
        return;
    }
    for p in [&a.model_dir.join("model.onnx"), &a.ort] {
        if !p.exists() {
            eprintln!(
                "workload --embedding: {} is missing; run scripts/fetch-model.sh or pass --model-dir / --ort-library",
                p.display()
            );
            std::process::exit(2);
        }
    }
    let base = a
        .dir
        .clone()
        .or_else(|| option_env!("CARGO_TARGET_TMPDIR").map(PathBuf::from))
        .unwrap_or_else(std::env::temp_dir);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let dir = base.join(format!("robotmem-embedding-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));

    let rev = crate::revision();
    println!(
        "robotmem embedding benchmark (robotmem {}, revision {rev})",
        robotmem::VERSION
    );
    println!(
        "model {}, runtime {}, sqlite-vec kernel {}, {} CPUs",
        a.model_dir.display(),
        a.ort.display(),
        vectors::kernel().1,
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)
    );
    println!(
        "memories {}, large {}, samples {} (+{} warm-up), seed {:#x}, phases {}, dir {} [{}]",
        a.memories,
        a.large,
        a.samples,
        a.warmup,
        a.seed,
        a.phases.join(","),
        dir.display(),
        crate::fs_type(&dir)
    );

    let mut rep = Report {
        targets: Vec::new(),
        json: Map::new(),
        hwm: Vec::new(),
    };
    let mut real_db: Option<PathBuf> = None;
    let has = |p: &str| a.phases.iter().any(|x| x == p);
    let started = Instant::now();
    for phase in PHASES {
        if !has(phase) {
            continue;
        }
        if a.wait_idle > 0 {
            wait_idle(a.wait_idle);
        }
        eprintln!("[embedding] phase {phase} ...");
        let t = Instant::now();
        let cpu0 = cpu_jiffies();
        match *phase {
            "open" => open_phase(&a, &dir, &mut rep),
            "rss" => rss_phase(&a, &dir, &mut rep),
            "query" => query_phase(&a, &mut rep),
            "ort" => ort_phase(&a, &mut rep),
            "learn" => real_db = Some(learn_phase(&a, &dir, &mut rep)),
            "batch" => {
                let p = batch_phase(&a, &dir, &mut rep);
                real_db.get_or_insert(p);
            }
            "knn" => {
                let p = real_db.clone().unwrap_or_else(|| build_real(&a, &dir));
                knn_phase(&a, &dir, &p, &mut rep);
            }
            "hybrid" => hybrid_phase(&a, &dir, &mut rep),
            _ => unreachable!(),
        }
        let secs = t.elapsed().as_secs_f64();
        let others = other_cores(cpu0, secs);
        eprintln!("[embedding] phase {phase} took {secs:.1} s; other processes used {others:.2} cores meanwhile");
        rep.hwm.push((phase.to_string(), hwm(), others, secs));
    }

    section("phases: time, this process's peak RSS, machine load by other processes");
    for (phase, h, others, secs) in &rep.hwm {
        println!(
            "  {:<8} {:>7.1} s   VmHWM after it {:>7.1} MiB   other processes {:.2} cores",
            phase, secs, h, others
        );
    }
    rep.json.insert(
        "phases".into(),
        json!(rep
            .hwm
            .iter()
            .map(|(p, h, o, s)| json!({"phase": p, "seconds": r3(*s), "hwm_mib": r3(*h), "other_cores": r3(*o)}))
            .collect::<Vec<_>>()),
    );
    println!("  {:<34} {:>8.1} MiB", "RSS at end (VmRSS)", rss());
    println!("  (the RSS target is measured in fresh processes, phase rss)");

    section("targets");
    for (what, value, ok) in &rep.targets {
        println!("  {:<62} {:>9.3}  {}", what, value, if *ok { "MET" } else { "MISSED" });
    }
    println!("  total bench time {:.1} min", started.elapsed().as_secs_f64() / 60.0);
    let line = json!({
        "bench": "robotmem-embedding",
        "version": robotmem::VERSION,
        "revision": rev,
        "memories": a.memories,
        "large": a.large,
        "samples": a.samples,
        "seed": a.seed,
        "kernel": vectors::kernel().1,
        "results": rep.json,
        "targets": rep.targets.iter().map(|(w, v, ok)| json!({"target": w, "value": r3(*v), "met": ok})).collect::<Vec<_>>(),
    });
    println!();
    println!("{line}");
    if a.keep {
        eprintln!("kept databases in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

// --------------------------------------------------------------------------------- children

/// Runs this benchmark binary again with `--child what`; returns its JSON line.
fn spawn_child(a: &Args, dir: &Path, what: &str) -> Value {
    let exe = std::env::current_exe().expect("current_exe");
    let cdir = dir.join(format!(
        "child-{what}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&cdir).expect("child dir");
    let out = std::process::Command::new(exe)
        .args(["--embedding", "--child", what])
        .arg("--dir")
        .arg(&cdir)
        .arg("--model-dir")
        .arg(&a.model_dir)
        .arg("--ort-library")
        .arg(&a.ort)
        .args(["--memories", &a.memories.to_string()])
        .args(["--samples", &a.samples.to_string()])
        .args(["--warmup", &a.warmup.to_string()])
        .args(["--batch", &a.batch.to_string()])
        .args(["--seed", &a.seed.to_string()])
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("spawn child");
    let _ = std::fs::remove_dir_all(&cdir);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child {what} failed: {text}");
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{') && l.contains("\"child\":"))
        .unwrap_or_else(|| panic!("child {what}: no result in {text}"));
    serde_json::from_str(line).expect("child json")
}

fn run_child(a: &Args, what: &str) -> Value {
    let dir = a.dir.clone().expect("--dir");
    match what {
        "open" => {
            let rss0 = rss();
            let p1 = dir.join("first.db");
            let (db, first) = timed(|| open_db(a, &p1, Durability::Full, 2, true));
            let rss1 = rss();
            let (_, first_recall) = timed(|| {
                db.recall(&RecallRequest {
                    query: "grasp red mug",
                    ..Default::default()
                })
                .expect("recall")
            });
            drop(db);
            let p2 = dir.join("second.db");
            let (db, second) = timed(|| open_db(a, &p2, Durability::Full, 2, true));
            let (_, second_recall) = timed(|| {
                db.recall(&RecallRequest {
                    query: "grasp red mug",
                    ..Default::default()
                })
                .expect("recall")
            });
            drop(db);
            let (db, reopen) = timed(|| open_db(a, &p1, Durability::Full, 2, true));
            drop(db);
            let (db, bm25) = timed(|| open_db(a, &dir.join("bm25.db"), Durability::Full, 2, false));
            drop(db);
            let (e, load) = timed(|| embedder(a, 2, 32));
            drop(e);
            json!({"child": "open", "first_ms": ms(first), "first_recall_ms": ms(first_recall),
                   "second_ms": ms(second), "second_recall_ms": ms(second_recall), "reopen_ms": ms(reopen),
                   "bm25_open_ms": ms(bm25), "model_load_ms": ms(load),
                   "rss_before_mib": rss0, "rss_after_first_open_mib": rss1, "hwm_mib": hwm()})
        }
        "open-split" => {
            // The pieces of a first open, in a fresh process: ONNX Runtime library + environment,
            // then what embed::load does (read, hash, tokenizer, session), then Db::open.
            use sha2::Digest;
            let (_, env) = timed(|| embed::runtime::environment(Some(&a.ort)).expect("ONNX Runtime"));
            let rss_env = rss();
            let (model, read) = timed(|| std::fs::read(a.model_dir.join("model.onnx")).expect("model"));
            let (_, hash) = timed(|| sha2::Sha256::digest(&model));
            let tok_bytes = std::fs::read(a.model_dir.join("tokenizer.json")).expect("tokenizer");
            let (_, tok) = timed(|| tokenizers::Tokenizer::from_bytes(&tok_bytes).expect("tokenizer"));
            drop(model);
            let (e, load) = timed(|| embedder(a, 2, 32));
            drop(e);
            let (db, open) = timed(|| open_db(a, &dir.join("split.db"), Durability::Full, 2, true));
            drop(db);
            json!({"child": "open-split", "ort_env_ms": ms(env), "rss_after_env_mib": rss_env, "read_model_ms": ms(read),
                   "sha256_model_ms": ms(hash), "tokenizer_parse_ms": ms(tok), "embed_load_ms": ms(load),
                   "db_open_after_env_ms": ms(open)})
        }
        v if v.starts_with("session-") => {
            // Peak RSS of creating one ONNX Runtime session, fresh process:
            // session-{memory|file}[-noprepack][-nopattern] for the model of --model-dir.
            use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
            let env = embed::runtime::environment(Some(&a.ort)).expect("ONNX Runtime");
            let (hwm0, rss0) = (hwm(), rss());
            let fail = |e: &dyn std::fmt::Display| -> ! { panic!("ort session: {e}") };
            let started = Instant::now();
            let mut b = SessionBuilder::new(env).unwrap_or_else(|e| fail(&e));
            b = b.with_intra_threads(2).unwrap_or_else(|e| fail(&e));
            b = b.with_intra_op_spinning(false).unwrap_or_else(|e| fail(&e));
            b = b
                .with_optimization_level(GraphOptimizationLevel::All)
                .unwrap_or_else(|e| fail(&e));
            if v.contains("-noprepack") {
                b = b
                    .with_config_entry("session.disable_prepacking", "1")
                    .unwrap_or_else(|e| fail(&e));
            }
            if v.contains("-nopattern") {
                b = b.with_memory_pattern(false).unwrap_or_else(|e| fail(&e));
            }
            let path = a.model_dir.join("model.onnx");
            let mut sess = if v.starts_with("session-file") {
                b.commit_from_file(&path).unwrap_or_else(|e| fail(&e))
            } else {
                let bytes = std::fs::read(&path).expect("model");
                b.commit_from_memory(&bytes).unwrap_or_else(|e| fail(&e))
            };
            let create = started.elapsed().as_secs_f64() * 1e3;
            let (hwm1, rss1) = (hwm(), rss());
            // One query and one batch of 32 memory texts, then the steady state.
            let tok = tokenizer(a);
            let texts: Vec<String> = memories(64, a.seed)
                .into_iter()
                .filter(|m| !m.chinese)
                .map(|m| m.insight)
                .take(32)
                .collect();
            let mut lat = Vec::new();
            for t in [vec!["grasp red mug".to_string()], texts] {
                let enc: Vec<_> = t.iter().map(|x| tok.encode(x.as_str(), true).unwrap()).collect();
                let seq = enc.iter().map(|e| e.get_ids().len()).max().unwrap();
                let mut ids = vec![0i64; enc.len() * seq];
                let mut mask = vec![0i64; enc.len() * seq];
                for (bi, e) in enc.iter().enumerate() {
                    for (ti, (&id, &m)) in e.get_ids().iter().zip(e.get_attention_mask()).enumerate() {
                        ids[bi * seq + ti] = id as i64;
                        mask[bi * seq + ti] = m as i64;
                    }
                }
                let shape = [enc.len() as i64, seq as i64];
                for _ in 0..5 {
                    let t = |v: Vec<i64>| -> ort::session::SessionInputValue<'static> {
                        ort::value::Tensor::from_array((shape, v)).unwrap().into()
                    };
                    let inputs = vec![
                        ("input_ids", t(ids.clone())),
                        ("attention_mask", t(mask.clone())),
                        ("token_type_ids", t(vec![0; ids.len()])),
                    ];
                    let (_, dt) = timed(|| sess.run(inputs).expect("run").len());
                    lat.push(dt);
                }
            }
            json!({"child": v, "create_ms": create, "hwm_before_mib": hwm0, "rss_before_mib": rss0, "hwm_after_create_mib": hwm1,
                   "rss_after_create_mib": rss1, "hwm_after_runs_mib": hwm(), "rss_after_runs_mib": rss(),
                   "query_ms": ms(lat[4]), "batch32_ms": ms(lat[9])})
        }
        "knn-random" => {
            // sqlite-vec alone, for a profiler: --large random vectors, --samples KNN calls (k = 80).
            let path = dir.join("knn.db");
            let c = raw_conn(&path, false);
            c.execute_batch(
                "CREATE VIRTUAL TABLE memory_vec USING vec0(collection text partition key, embedding float[384]);",
            )
            .unwrap();
            let mut r = Rng::new(a.seed);
            let tx = c.unchecked_transaction().unwrap();
            {
                let mut st = tx
                    .prepare("INSERT INTO memory_vec (rowid, collection, embedding) VALUES (?1, 'default', ?2)")
                    .unwrap();
                for i in 0..a.large {
                    st.execute(params![i as i64 + 1, blob(&random_unit(&mut r, 384))])
                        .unwrap();
                }
            }
            tx.commit().unwrap();
            let qv: Vec<Vec<f32>> = (0..16).map(|_| random_unit(&mut r, 384)).collect();
            let (s, _) = time_knn(&Knn::Vec0(&c), &qv, RECALL_K, a.samples, a.warmup);
            json!({"child": "knn-random", "vectors": a.large, "knn": s.json()})
        }
        "rss-single" | "rss-batch" | "rss-bm25" => {
            let model = what != "rss-bm25";
            let path = dir.join("rss.db");
            let mut o = opts(a, &path, Durability::Normal, 2, model);
            o.preload = true; // jieba dictionary + in-process index at open
            let db = Db::open(o).expect("open");
            let hwm_open = hwm();
            let mems = memories(a.memories, a.seed);
            let hwm_corpus = hwm();
            if what == "rss-batch" {
                for chunk in mems.chunks(a.batch) {
                    let reqs: Vec<LearnRequest> = chunk.iter().map(request).collect();
                    db.learn_batch(&reqs).expect("learn_batch");
                }
            } else {
                for m in &mems {
                    db.learn(&request(m)).expect("learn");
                }
            }
            drop(mems);
            let hwm_learn = hwm();
            for q in corpus::queries(a.samples + a.warmup, a.seed) {
                db.recall(&RecallRequest {
                    query: q.text,
                    context_filter: q.filter.as_deref(),
                    spatial_sort: q.spatial.as_deref(),
                    ..Default::default()
                })
                .expect("recall");
            }
            let st = db.embedding_status().expect("status");
            json!({"child": what, "hwm_open_mib": hwm_open, "hwm_corpus_mib": hwm_corpus, "hwm_learn_mib": hwm_learn,
                   "hwm_end_mib": hwm(), "rss_end_mib": rss(), "model": st.model.is_some(),
                   "memories": a.memories, "db_mib": file_bytes(&path) as f64 / 1048576.0})
        }
        other => panic!("unknown child {other}"),
    }
}

// ------------------------------------------------------------------------------------ open

fn open_phase(a: &Args, dir: &Path, rep: &mut Report) {
    let runs: Vec<Value> = (0..a.open_runs.max(1)).map(|_| spawn_child(a, dir, "open")).collect();
    let series = |k: &str| -> Vec<u64> {
        runs.iter()
            .map(|r| (r[k].as_f64().unwrap_or(0.0) * 1e6) as u64)
            .collect()
    };
    section(&format!(
        "open with the model ({} fresh processes, embed_threads 2)",
        runs.len()
    ));
    println!("{}", header());
    let mut j = Map::new();
    for (k, label) in [
        ("first_ms", "first open (loads ORT)"),
        ("second_ms", "second open, new file"),
        ("reopen_ms", "reopen existing file"),
        ("model_load_ms", "embed::load alone"),
        ("bm25_open_ms", "open, embeddings off"),
        ("first_recall_ms", "first recall (cold)"),
        ("second_recall_ms", "first recall, 2nd db"),
    ] {
        let s = Summary::of(&series(k));
        println!("{}", s.row(label));
        j.insert(k.into(), s.json());
    }
    let splits: Vec<Value> = (0..a.open_runs.max(1))
        .map(|_| spawn_child(a, dir, "open-split"))
        .collect();
    let sseries = |k: &str| -> Vec<u64> {
        splits
            .iter()
            .map(|r| (r[k].as_f64().unwrap_or(0.0) * 1e6) as u64)
            .collect()
    };
    println!(
        "  pieces of a first open ({} more fresh processes, each piece timed alone):",
        splits.len()
    );
    for (k, label) in [
        ("ort_env_ms", "  ORT library + env"),
        ("read_model_ms", "  read model.onnx"),
        ("sha256_model_ms", "  sha256 of model.onnx"),
        ("tokenizer_parse_ms", "  parse tokenizer.json"),
        ("embed_load_ms", "  embed::load (all)"),
        ("db_open_after_env_ms", "  Db::open, ORT loaded"),
    ] {
        let s = Summary::of(&sseries(k));
        println!("{}", s.row(label));
        j.insert(format!("split_{k}"), s.json());
    }
    let rss_after = runs
        .iter()
        .map(|r| r["rss_after_first_open_mib"].as_f64().unwrap_or(0.0))
        .fold(0.0, f64::max);
    let rss_before = runs
        .iter()
        .map(|r| r["rss_before_mib"].as_f64().unwrap_or(0.0))
        .fold(0.0, f64::max);
    println!("  RSS before open {rss_before:.1} MiB, after the first open {rss_after:.1} MiB");
    j.insert("rss_after_first_open_mib".into(), json!(rss_after));
    let first = Summary::of(&series("first_ms"));
    let second = Summary::of(&series("second_ms"));
    rep.target(
        format!("open() with model <= {OPEN_MS} ms, first in process (p50)"),
        first.p50,
        first.p50 <= OPEN_MS,
    );
    rep.target(
        format!("open() with model <= {OPEN_MS} ms, second in process (p50)"),
        second.p50,
        second.p50 <= OPEN_MS,
    );
    rep.json.insert("open".into(), Value::Object(j));
}

// ------------------------------------------------------------------------------------- rss

fn rss_phase(a: &Args, dir: &Path, rep: &mut Report) {
    section(&format!(
        "peak RSS, fresh process: open (preload: jieba + index) + {} learns + {} recalls",
        a.memories,
        a.samples + a.warmup
    ));
    println!(
        "  {:<26} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "", "open", "corpus", "learned", "peak end", "RSS end"
    );
    let mut j = Map::new();
    for (what, label) in [
        ("rss-single", "model, learn one by one"),
        ("rss-batch", "model, learn_batch"),
        ("rss-bm25", "no model (BM25 only)"),
    ] {
        let r = spawn_child(a, dir, what);
        let f = |k: &str| r[k].as_f64().unwrap_or(0.0);
        println!(
            "  {:<26} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}   MiB",
            label,
            f("hwm_open_mib"),
            f("hwm_corpus_mib"),
            f("hwm_learn_mib"),
            f("hwm_end_mib"),
            f("rss_end_mib")
        );
        if what != "rss-bm25" {
            rep.target(
                format!(
                    "peak RSS <= 200 MB ({RSS_10K_MIB:.0} MiB), jieba + model + {} memories [{}]",
                    a.memories,
                    &what[4..]
                ),
                f("hwm_end_mib"),
                f("hwm_end_mib") <= RSS_10K_MIB,
            );
        }
        j.insert(what.into(), r);
    }
    println!(
        "  (VmHWM after open / after generating the corpus in memory / after learning / at the end; VmRSS at the end)"
    );
    rep.json.insert("rss".into(), Value::Object(j));
}

// ----------------------------------------------------------------------------------- query

fn query_phase(a: &Args, rep: &mut Report) {
    let qs = english_queries(a.samples + a.warmup, a.seed);
    let zh: Vec<&str> = corpus::queries(a.samples * 8 + 64, a.seed)
        .into_iter()
        .filter(|q| q.chinese)
        .map(|q| q.text)
        .take(a.samples + a.warmup)
        .collect();
    let mems: Vec<String> = memories(a.samples * 2 + a.warmup * 2, a.seed ^ 0x51)
        .into_iter()
        .filter(|m| !m.chinese)
        .map(|m| m.insight)
        .collect();
    let tok = tokenizer(a);
    let ntok: Vec<u64> = qs
        .iter()
        .map(|q| tok.encode(*q, true).unwrap().get_ids().len() as u64)
        .collect();
    let ptok: Vec<u64> = mems
        .iter()
        .map(|m| tok.encode(m.as_str(), true).unwrap().get_ids().len() as u64)
        .collect();
    let med = |v: &[u64]| {
        let mut v = v.to_vec();
        v.sort_unstable();
        v[v.len() / 2]
    };
    section(&format!(
        "query embedding (English recall queries, median {} tokens; memory texts median {} tokens)",
        med(&ntok),
        med(&ptok)
    ));
    println!("{}", header());
    let mut j = Map::new();
    let mut lat = Vec::new();
    for (i, q) in qs.iter().enumerate() {
        let (_, dt) = timed(|| tok.encode(*q, true).unwrap());
        if i >= a.warmup {
            lat.push(dt);
        }
    }
    let s = Summary::of(&lat);
    println!("{}", s.row("tokenise only (query)"));
    j.insert("tokenise_query".into(), s.json());

    for &threads in &a.threads {
        let e = embedder(a, threads, 32);
        let mut series = |label: &str, key: String, f: &mut dyn FnMut(usize) -> u64| {
            let mut lat = Vec::with_capacity(a.samples);
            for i in 0..a.warmup + a.samples {
                let dt = f(i);
                if i >= a.warmup {
                    lat.push(dt);
                }
            }
            let s = Summary::of(&lat);
            println!("{}", s.row(label));
            j.insert(key, s.json());
            s
        };
        let s = series(
            &format!("query, {threads} thread(s)"),
            format!("query_t{threads}"),
            &mut |i| timed(|| e.embed(&[qs[i % qs.len()]], TextKind::Query).unwrap()).1,
        );
        rep.target(
            format!("query embedding p50 <= {QUERY_EMBED_P50_MS} ms [embed_threads {threads}]"),
            s.p50,
            s.p50 <= QUERY_EMBED_P50_MS,
        );
        series(
            &format!("  zh query (gated), {threads}t"),
            format!("query_zh_t{threads}"),
            &mut |i| timed(|| e.embed(&[zh[i % zh.len()]], TextKind::Query).unwrap()).1,
        );
        series(
            &format!("memory text, {threads}t"),
            format!("passage_t{threads}"),
            &mut |i| timed(|| e.embed(&[mems[i % mems.len()].as_str()], TextKind::Passage).unwrap()).1,
        );
        // Batches of 32 memory texts: per-text cost.
        let mut k = 0;
        let per = series(
            &format!("  per text, batch 32, {threads}t"),
            format!("passage_batch32_per_text_t{threads}"),
            &mut |_| {
                let chunk: Vec<&str> = (0..32).map(|x| mems[(k + x) % mems.len()].as_str()).collect();
                k += 32;
                timed(|| e.embed(&chunk, TextKind::Passage).unwrap()).1 / 32
            },
        );
        println!("    = {:.0} texts/s of pure embedding in batches of 32", 1e3 / per.mean);
    }
    rep.json.insert("query".into(), Value::Object(j));
}

// ------------------------------------------------------------------------------------- ort

/// Direct ONNX Runtime sessions with other settings than the engine's (threads,
/// intra-op spinning) and, with `--alt-model`, other model files, on the same
/// tokenised inputs: what a change in src/embed/onnx.rs or of the shipped model
/// would give. For each model: session creation time, VmRSS growth while the
/// session lives, and how close its sentence vectors are to the main model's.
fn ort_phase(a: &Args, rep: &mut Report) {
    use ort::session::{builder::GraphOptimizationLevel, builder::SessionBuilder, Session, SessionInputValue};
    use ort::value::Tensor;

    type Input = (Vec<i64>, Vec<i64>, [i64; 2]);
    let env = embed::runtime::environment(Some(&a.ort)).expect("ONNX Runtime");
    let tok = tokenizer(a);
    let qs = english_queries(64, a.seed);
    let mems: Vec<String> = memories(256, a.seed ^ 0x51)
        .into_iter()
        .filter(|m| !m.chinese)
        .map(|m| m.insight)
        .collect();
    let encode = |texts: &[&str]| -> Input {
        let enc: Vec<_> = texts.iter().map(|t| tok.encode(*t, true).unwrap()).collect();
        let seq = enc.iter().map(|e| e.get_ids().len()).max().unwrap_or(1);
        let mut ids = vec![0i64; enc.len() * seq];
        let mut mask = vec![0i64; enc.len() * seq];
        for (b, e) in enc.iter().enumerate() {
            for (t, (&id, &m)) in e.get_ids().iter().zip(e.get_attention_mask()).enumerate() {
                ids[b * seq + t] = id as i64;
                mask[b * seq + t] = m as i64;
            }
        }
        (ids, mask, [enc.len() as i64, seq as i64])
    };
    let single: Vec<Input> = qs.iter().map(|q| encode(&[q])).collect();
    let passages: Vec<Input> = mems.iter().take(100).map(|m| encode(&[m.as_str()])).collect();
    let batches: Vec<Input> = (0..8)
        .map(|i| {
            let chunk: Vec<&str> = (0..32).map(|x| mems[(i * 32 + x) % mems.len()].as_str()).collect();
            encode(&chunk)
        })
        .collect();
    // Runs one input; returns (model-run ns, mean-pooled unit vector of the first text).
    let run = |s: &mut Session, input: &Input, type_ids: bool| -> (u64, Vec<f32>) {
        let (ids, mask, shape) = input;
        let t = |v: Vec<i64>| -> SessionInputValue<'static> { Tensor::from_array((*shape, v)).unwrap().into() };
        let mut inputs = vec![("input_ids", t(ids.clone())), ("attention_mask", t(mask.clone()))];
        if type_ids {
            inputs.push(("token_type_ids", t(vec![0i64; ids.len()])));
        }
        let started = Instant::now();
        let out = s.run(inputs).expect("run");
        let (_, data) = out[0].try_extract_tensor::<f32>().expect("output");
        let dt = started.elapsed().as_nanos() as u64;
        let seq = shape[1] as usize;
        let dim = data.len() / (shape[0] as usize * seq);
        let mut v = embed::pool(&data[..seq * dim], &mask[..seq], dim, embed::Pooling::Mean);
        normalise(&mut v);
        (dt, v)
    };
    section("ONNX Runtime sessions (model run only: no tokenising, no pooling)");
    let mut j = Map::new();
    let mut models = vec![a.model_dir.join("model.onnx")];
    models.extend(a.alt_models.iter().cloned());
    let mut reference: Vec<Vec<f32>> = Vec::new();
    for (mi, path) in models.iter().enumerate() {
        let model = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path.display().to_string();
        println!(
            "  model {name} ({:.1} MB){}",
            model.len() as f64 / 1e6,
            if mi == 0 { ", the engine's" } else { "" }
        );
        println!("{}", header());
        let mut jm = Map::new();
        let mut variants: Vec<(usize, bool)> = Vec::new();
        for &t in &a.threads {
            variants.push((t as usize, false));
            variants.push((t as usize, true));
        }
        for (vi, (threads, spin)) in variants.into_iter().enumerate() {
            let fail = |e: &dyn std::fmt::Display| -> ! { panic!("ort session: {e}") };
            let rss0 = rss();
            let started = Instant::now();
            let b = SessionBuilder::new(env).unwrap_or_else(|e| fail(&e));
            let b = b.with_intra_threads(threads).unwrap_or_else(|e| fail(&e));
            let b = b.with_inter_threads(1).unwrap_or_else(|e| fail(&e));
            let b = b.with_intra_op_spinning(spin).unwrap_or_else(|e| fail(&e));
            let mut b = b
                .with_optimization_level(GraphOptimizationLevel::All)
                .unwrap_or_else(|e| fail(&e));
            let mut s = b.commit_from_memory(&model).unwrap_or_else(|e| fail(&e));
            let create_ms = started.elapsed().as_secs_f64() * 1e3;
            let type_ids = s.inputs().iter().any(|i| i.name() == "token_type_ids");
            let mut series = |inputs: &[Input], n: usize, per: u64| -> Summary {
                let mut lat = Vec::new();
                for i in 0..a.warmup.min(10) + n {
                    let (dt, _) = run(&mut s, &inputs[i % inputs.len()], type_ids);
                    if i >= a.warmup.min(10) {
                        lat.push(dt / per);
                    }
                }
                Summary::of(&lat)
            };
            let label = format!("{threads}t spin {}", if spin { "on " } else { "off" });
            let q = series(&single, a.samples, 1);
            let p = series(&passages, a.samples, 1);
            let b = series(&batches, (a.samples / 10).max(8), 32);
            let grown = rss() - rss0;
            println!("{}", q.row(&format!("query, {label}")));
            println!("{}", p.row(&format!("  memory text, {label}")));
            println!("{}", b.row("  per text, batch 32"));
            println!("    session created in {create_ms:.0} ms; VmRSS +{grown:.1} MiB while it lives");
            let mut jv = json!({"query": q.json(), "passage": p.json(), "batch32_per_text": b.json(),
                                "create_ms": r3(create_ms), "rss_growth_mib": r3(grown)});
            if vi == 0 {
                // Agreement with the engine's model on the memory texts.
                let vs: Vec<Vec<f32>> = passages.iter().map(|x| run(&mut s, x, type_ids).1).collect();
                if mi == 0 {
                    reference = vs;
                } else {
                    let cos: Vec<f64> = vs
                        .iter()
                        .zip(&reference)
                        .map(|(x, y)| x.iter().zip(y).map(|(p, q)| (p * q) as f64).sum())
                        .collect();
                    let min = cos.iter().cloned().fold(f64::INFINITY, f64::min);
                    let mean = cos.iter().sum::<f64>() / cos.len() as f64;
                    println!(
                        "    cosine to the engine model's vectors over {} memory texts: min {min:.4}, mean {mean:.4}",
                        cos.len()
                    );
                    jv["cosine_to_main"] = json!({"min": r3(min * 10.0) / 10.0, "mean": r3(mean * 10.0) / 10.0});
                }
            }
            jm.insert(format!("t{threads}_spin{}", spin as u8), jv);
            drop(s);
        }
        j.insert(name, Value::Object(jm));
    }
    rep.json.insert("ort".into(), Value::Object(j));
}

// ----------------------------------------------------------------------------------- learn

fn window(n: usize) -> usize {
    1000.min((n / 10).max(1))
}

/// One-at-a-time learns; returns (latencies ns, stored with a vector, duplicates, wall s).
fn learn_into(db: &Db, mems: &[Memory], label: &str) -> (Vec<u64>, usize, usize, f64) {
    let mut lat = Vec::with_capacity(mems.len());
    let (mut embedded, mut dups) = (0, 0);
    let started = Instant::now();
    for (i, m) in mems.iter().enumerate() {
        let (out, dt) = timed(|| db.learn(&request(m)));
        let out = out.unwrap_or_else(|e| panic!("learn #{i}: {e}"));
        lat.push(dt);
        embedded += out.has_embedding as usize;
        dups += out.duplicate.is_some() as usize;
        if (i + 1) % (mems.len() / 10).max(1) == 0 {
            eprint!("\r  [{label}] {}/{}", i + 1, mems.len());
        }
    }
    eprintln!();
    (lat, embedded, dups, started.elapsed().as_secs_f64())
}

fn learn_phase(a: &Args, dir: &Path, rep: &mut Report) -> PathBuf {
    let n = a.learns.unwrap_or(a.memories);
    let mems = memories(n, a.seed);
    let w = window(n);
    let mut j = Map::new();
    let mut keep = None;
    let mut bm25_p50 = 0.0;
    for (d, model) in [
        (Durability::Normal, false),
        (Durability::Normal, true),
        (Durability::Full, true),
    ] {
        let tag = format!("{}{}", dur_name(d), if model { "" } else { "-bm25" });
        let path = dir.join(format!("learn-{tag}.db"));
        let db = open_db(a, &path, d, 2, model);
        let (lat, embedded, dups, wall) = learn_into(&db, &mems, &tag);
        let pick = |zh: bool| -> Vec<u64> {
            lat.iter()
                .zip(&mems)
                .filter(|(_, m)| m.chinese == zh)
                .map(|(&l, _)| l)
                .collect()
        };
        let (all, first, last, en, zh) = (
            Summary::of(&lat),
            Summary::of(&lat[..w]),
            Summary::of(&lat[n - w..]),
            Summary::of(&pick(false)),
            Summary::of(&pick(true)),
        );
        section(&format!(
            "learn one at a time, durability {}, {} (embed_threads 2)",
            dur_name(d),
            if model {
                "with the model"
            } else {
                "embeddings off (baseline)"
            }
        ));
        println!("{}", header());
        println!("{}", first.row(&format!("first {w}")));
        println!("{}", last.row(&format!("last {w}")));
        println!("{}", all.row("all"));
        println!("{}", en.row("  english"));
        println!("{}", zh.row("  chinese (not embedded)"));
        println!(
            "  {:.0} learns/s wall ({wall:.1} s); with a vector {embedded}, duplicates {dups}; database {:.1} MiB",
            n as f64 / wall,
            file_bytes(&path) as f64 / 1048576.0
        );
        if model {
            rep.target(
                format!("learn with embedding p50 <= {LEARN_EMBED_P50_MS} ms [{}]", dur_name(d)),
                all.p50,
                all.p50 <= LEARN_EMBED_P50_MS,
            );
            println!(
                "  of which not BM25-path work (p50 - baseline p50): {:.3} ms",
                all.p50 - bm25_p50
            );
        } else {
            bm25_p50 = all.p50;
        }
        j.insert(
            tag.clone(),
            json!({"all": all.json(), "first": first.json(), "last": last.json(), "english": en.json(), "chinese": zh.json(),
                   "per_s": (n as f64 / wall).round(), "embedded": embedded, "duplicates": dups}),
        );
        drop(db);
        if model && d == Durability::Normal {
            keep = Some(path);
        }
    }
    // Two pieces of the extra work of a learn with the model, on the file just made.
    let path = keep.expect("normal db");
    let c = raw_conn(&path, true);
    let e = embedder(a, 2, 32);
    let qv = query_vectors(e.as_ref(), &english_queries(64, a.seed));
    let (index, _) = load_index(&c, e.stamp());
    let (s, _) = time_knn(&Knn::Index(&index, e.stamp()), &qv, DEDUP_K, a.samples, a.warmup);
    println!(
        "  cosine-dedup KNN (k = {DEDUP_K}, vector index) at {} vectors: p50 {:.3} ms, p95 {:.3} ms",
        count(&c, "SELECT count(*) FROM memory_vec"),
        s.p50,
        s.p95
    );
    j.insert("dedup_knn".into(), s.json());
    rep.json.insert("learn".into(), Value::Object(j));
    path
}

// ----------------------------------------------------------------------------------- batch

/// learn_batch of `mems` in calls of `batch`; returns (per-call ns, wall s, stored with a vector).
fn batch_into(db: &Db, mems: &[Memory], batch: usize, label: &str) -> (Vec<u64>, f64, usize) {
    let mut lat = Vec::new();
    let mut embedded = 0;
    let started = Instant::now();
    let mut done = 0;
    for chunk in mems.chunks(batch) {
        let reqs: Vec<LearnRequest> = chunk.iter().map(request).collect();
        let (out, dt) = timed(|| db.learn_batch(&reqs).expect("learn_batch"));
        embedded += out.iter().filter(|o| o.has_embedding).count();
        lat.push(dt);
        done += chunk.len();
        if lat.len() % (mems.len() / batch / 10).max(1) == 0 {
            eprint!("\r  [{label}] {done}/{}", mems.len());
        }
    }
    eprintln!();
    (lat, started.elapsed().as_secs_f64(), embedded)
}

fn batch_phase(a: &Args, dir: &Path, rep: &mut Report) -> PathBuf {
    let mems = memories(a.memories, a.seed);
    let path = dir.join("batch.db");
    let db = open_db(a, &path, Durability::Full, 2, true);
    let (lat, wall, embedded) = batch_into(&db, &mems, a.batch, "batch");
    drop(db);
    let rate = a.memories as f64 / wall;
    section(&format!(
        "learn_batch, {} memories in calls of {} (durability full, embed_threads 2, embed_batch 32)",
        a.memories, a.batch
    ));
    println!("{}", header());
    let s = Summary::of(&lat);
    println!("{}", s.row(&format!("per call of {}", a.batch)));
    println!("  throughput {rate:.0} memories/s ({wall:.1} s); with a vector {embedded}");
    rep.target(
        format!("batch learn >= {BATCH_PER_S} memories/s (calls of {})", a.batch),
        rate,
        rate >= BATCH_PER_S,
    );
    let mut j = Map::new();
    j.insert(
        "main".into(),
        json!({"per_call": s.json(), "per_s": rate.round(), "wall_s": r3(wall)}),
    );

    // Knobs, on a smaller corpus (fresh files): threads × embed_batch, and the pure embedding rate.
    let n = a.memories.min(1000);
    let sub = &mems[..n];
    println!("  variants, {n} memories each, fresh files (memories/s):");
    let texts: Vec<&str> = sub.iter().map(|m| m.insight.as_str()).collect();
    for &threads in &a.threads {
        for eb in [8u32, 32] {
            let p = dir.join(format!("batch-t{threads}-b{eb}.db"));
            let mut o = opts(a, &p, Durability::Full, threads, true);
            o.embed_batch = eb;
            let db = Db::open(o).expect("open");
            let (_, wall, _) = batch_into(&db, sub, a.batch, &format!("t{threads} b{eb}"));
            drop(db);
            let _ = std::fs::remove_file(&p);
            let e = embedder(a, threads, eb);
            let (_, pure) = timed(|| {
                for c in texts.chunks(eb as usize) {
                    e.embed(c, TextKind::Passage).unwrap();
                }
            });
            let (r, pr) = (n as f64 / wall, n as f64 / (pure as f64 / 1e9));
            println!("    embed_threads {threads}, embed_batch {eb:>2}: learn_batch {r:>6.0}/s; embedding alone {pr:>6.0}/s ({:.0}% of the time)", 100.0 * r / pr);
            j.insert(
                format!("t{threads}_b{eb}"),
                json!({"learn_batch_per_s": r.round(), "embed_only_per_s": pr.round()}),
            );
        }
    }
    rep.json.insert("batch".into(), Value::Object(j));
    path
}

/// A real embedded corpus of `--memories` (when neither learn nor batch ran).
fn build_real(a: &Args, dir: &Path) -> PathBuf {
    let path = dir.join("real.db");
    let db = open_db(a, &path, Durability::Normal, 2, true);
    batch_into(&db, &memories(a.memories, a.seed), a.batch, "real corpus");
    path
}

// ------------------------------------------------------------------------------------- knn

fn knn_phase(a: &Args, dir: &Path, real: &Path, rep: &mut Report) {
    let e = embedder(a, 2, 32);
    let qv = query_vectors(e.as_ref(), &english_queries(64, a.seed));
    let model = e.stamp().clone();
    drop(e);
    let dim = qv[0].len();
    let mut j = Map::new();
    section(&format!(
        "vector KNN: the handle's vector index (int8 scan + 16-bit re-scoring) and sqlite-vec's vec0, {} query vectors of real queries",
        qv.len()
    ));
    println!("{}", header());
    // Both KNNs at k = 10 and RECALL_K; the target is checked on the index.
    let mut measure = |c: &Connection, model: &ModelStamp, label: &str, key: &str, limit: f64, j: &mut Map<String, Value>| {
        let (index, load) = load_index(c, model);
        println!("  {label}: {} vectors, index loaded in {load:.1} ms, VmRSS {:.1} MiB", index.len(), rss());
        j.insert(format!("{key}_index_load_ms"), json!(r3(load)));
        let recall = index_recall(c, &index, model, &qv, RECALL_K);
        println!("  {label}: index recall@{RECALL_K} vs sqlite-vec exact KNN {:.4}", recall);
        j.insert(format!("{key}_index_recall"), json!(recall));
        for knn in [Knn::Index(&index, model), Knn::Vec0(c)] {
            for k in [10, RECALL_K] {
                let (s, got) = time_knn(&knn, &qv, k, a.samples, a.warmup);
                println!("{}   (got {got})", s.row(&format!("{} {label}, k={k}", knn.name())));
                j.insert(format!("{key}_{}_k{k}", knn.name()), s.json());
                if k == RECALL_K && matches!(knn, Knn::Index(..)) {
                    rep.target(format!("KNN p50 <= {limit} ms, {label} ({} vectors, k={k})", index.len()), s.p50, s.p50 <= limit);
                }
            }
        }
    };

    // Real corpus at --memories.
    let c = raw_conn(real, true);
    measure(&c, &model, &format!("real {}", a.memories), &format!("real_{}", a.memories), KNN_10K_P50_MS, &mut j);
    drop(c);

    // Random unit vectors, inserted through SQL into a vec0 table (with the
    // `memories` rev column the index syncs by), one collection; measured at
    // --memories and at --large.
    let path = dir.join("vec-random.db");
    let c = raw_conn(&path, false);
    c.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
         CREATE TABLE memories (rev INTEGER);
         CREATE VIRTUAL TABLE memory_vec USING vec0(collection text partition key, embedding float[{dim}]);"
    ))
    .expect("create");
    let random = ModelStamp { name: "random".into(), dim, hash: "0".into() };
    let mut r = Rng::new(a.seed ^ 0xFEC7);
    let mut have = 0usize;
    let mut sizes = vec![a.memories.min(a.large), a.large];
    sizes.dedup();
    for &size in &sizes {
        let (_, dt) = timed(|| {
            let tx = c.unchecked_transaction().expect("tx");
            {
                let mut st = tx
                    .prepare("INSERT INTO memory_vec (rowid, collection, embedding) VALUES (?1, 'default', ?2)")
                    .expect("insert");
                while have < size {
                    have += 1;
                    st.execute(params![have as i64, blob(&random_unit(&mut r, dim))])
                        .expect("insert");
                }
            }
            tx.commit().expect("commit");
        });
        eprintln!("  random vectors: {size} in the table (last fill {:.1} s)", ms(dt) / 1e3);
        let limit = if size >= 100_000 { KNN_100K_P50_MS } else { KNN_10K_P50_MS };
        measure(&c, &random, &format!("random {size}"), &format!("random_{size}"), limit, &mut j);
    }
    c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").ok();
    println!("  random-vector file: {:.1} MiB for {have} vectors", file_bytes(&path) as f64 / 1048576.0);

    // For comparison: a flat f32 scan in Rust (dot products + partial sort) over the same vectors.
    let size = have;
    let all: Vec<f32> = {
        let c = raw_conn(&path, true);
        let mut st = c.prepare("SELECT embedding FROM memory_vec ORDER BY rowid").unwrap();
        let rows = st.query_map([], |r| r.get::<_, Vec<u8>>(0)).unwrap();
        rows.flat_map(|b| unblob(&b.unwrap())).collect()
    };
    let mut lat = Vec::new();
    let mut scores = vec![(0f32, 0u32); size];
    for i in 0..a.warmup + a.samples {
        let q = &qv[i % qv.len()];
        let (_, dt) = timed(|| {
            for (n, v) in all.chunks_exact(dim).enumerate() {
                scores[n] = (-dot(v, q), n as u32);
            }
            scores.select_nth_unstable_by(RECALL_K.min(size - 1), |x, y| x.0.total_cmp(&y.0));
            let mut top = scores[..RECALL_K.min(size)].to_vec();
            top.sort_by(|x, y| x.0.total_cmp(&y.0));
            std::hint::black_box(top);
        });
        if i >= a.warmup {
            lat.push(dt);
        }
    }
    let s = Summary::of(&lat);
    println!("{}", s.row(&format!("flat f32 scan in Rust, random {size}, k={RECALL_K}")));
    j.insert(format!("rust_flat_{size}"), s.json());
    drop(all);
    rep.json.insert("knn".into(), Value::Object(j));
}

/// Dot product with 16 independent accumulators (vectorisable), AVX2/FMA when the CPU has it.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        return unsafe { dot_avx2(a, b) };
    }
    dot_portable(a, b)
}

#[inline(always)]
fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            acc[i] = x[i].mul_add(y[i], acc[i]);
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    dot_portable(a, b)
}

// ---------------------------------------------------------------------------------- hybrid

/// Builds the large database (see `--large-build`); records the build times in `j`.
fn build_large(a: &Args, dir: &Path, j: &mut Map<String, Value>) -> PathBuf {
    let path = dir.join("large.db");
    let mut c = Corpus::new(a.seed);
    let started = Instant::now();
    let chunk = |c: &mut Corpus, n: usize| -> Vec<Memory> { (0..n).map(|_| c.next_memory()).collect() };
    let real = match a.large_build {
        LargeBuild::Embed => a.large,
        LargeBuild::Copy => a.memories.min(a.large),
    };
    let db = open_db(a, &path, Durability::Normal, 2, true);
    let mut done = 0;
    while done < real {
        let ms_ = chunk(&mut c, a.batch.min(real - done));
        let reqs: Vec<LearnRequest> = ms_.iter().map(request).collect();
        db.learn_batch(&reqs).expect("learn_batch");
        done += ms_.len();
        if done % (a.large / 20).max(1) < a.batch {
            eprint!(
                "\r  [large, with the model] {done}/{real} ({:.0} s)",
                started.elapsed().as_secs_f64()
            );
        }
    }
    eprintln!();
    drop(db);
    let embedded_s = started.elapsed().as_secs_f64();
    j.insert(
        "build_embedded".into(),
        json!({"memories": real, "seconds": r3(embedded_s), "per_s": (real as f64 / embedded_s).round()}),
    );
    if real < a.large {
        // The rest: real texts stored without the model, then perturbed copies of real vectors.
        let t = Instant::now();
        let db = open_db(a, &path, Durability::Normal, 2, false);
        while done < a.large {
            let ms_ = chunk(&mut c, a.batch.min(a.large - done));
            let reqs: Vec<LearnRequest> = ms_.iter().map(request).collect();
            db.learn_batch(&reqs).expect("learn_batch");
            done += ms_.len();
        }
        drop(db);
        let conn = raw_conn(&path, false);
        let reals: Vec<Vec<f32>> = {
            let mut st = conn.prepare("SELECT embedding FROM memory_vec").unwrap();
            let rows = st.query_map([], |r| r.get::<_, Vec<u8>>(0)).unwrap();
            rows.map(|b| unblob(&b.unwrap())).collect()
        };
        let todo: Vec<(i64, String)> = {
            let mut st = conn
                .prepare("SELECT id, collection FROM memories WHERE embedded = 0 AND status = 'active'")
                .unwrap();
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
            rows.map(Result::unwrap).collect()
        };
        let mut r = Rng::new(a.seed ^ 0xC0B1);
        let tx = conn.unchecked_transaction().unwrap();
        {
            let mut ins = tx
                .prepare("INSERT INTO memory_vec (rowid, collection, embedding) VALUES (?1, ?2, ?3)")
                .unwrap();
            let mut upd = tx.prepare("UPDATE memories SET embedded = 1 WHERE id = ?1").unwrap();
            for (id, coll) in &todo {
                let mut v = reals[(r.next_u64() % reals.len() as u64) as usize].clone();
                v.iter_mut().for_each(|x| *x += 0.02 * gauss(&mut r));
                normalise(&mut v);
                ins.execute(params![id, coll, blob(&v)]).unwrap();
                upd.execute([id]).unwrap();
            }
        }
        tx.commit().unwrap();
        j.insert(
            "build_copied".into(),
            json!({"memories": a.large - real, "vectors_copied": todo.len(), "seconds": r3(t.elapsed().as_secs_f64())}),
        );
    }
    path
}

/// One measured recall: kind, Chinese query, mode, latency ns, engine query_ms.
type Sample = (Kind, bool, SearchMode, u64, f64);
/// A labelled subset of the samples.
type Row = (String, Box<dyn Fn(&Sample) -> bool>);

fn hybrid_phase(a: &Args, dir: &Path, rep: &mut Report) {
    let mut j = Map::new();
    let (path, how) = match &a.large_db {
        Some(p) => (p.clone(), format!("reused {}", p.display())),
        None => {
            let t = Instant::now();
            let p = build_large(a, dir, &mut j);
            let how = match a.large_build {
                LargeBuild::Embed => format!("learn_batch of {} corpus memories with the model", a.large),
                LargeBuild::Copy => format!(
                    "learn_batch of {} memories with the model + {} text-only memories given perturbed copies of real vectors via SQL",
                    a.memories.min(a.large),
                    a.large.saturating_sub(a.memories)
                ),
            };
            (
                p,
                format!("{how}; built in {:.1} min", t.elapsed().as_secs_f64() / 60.0),
            )
        }
    };
    let c = raw_conn(&path, true);
    let (nm, nv, nzh) = (
        count(&c, "SELECT count(*) FROM memories WHERE status = 'active'"),
        count(&c, "SELECT count(*) FROM memory_vec"),
        count(&c, "SELECT count(*) FROM memories WHERE embedded = 2"),
    );
    section(&format!(
        "hybrid recall at {nm} memories ({nv} vectors, {nzh} not representable), embed_threads 2"
    ));
    println!("  database: {how}; {:.1} MiB", file_bytes(&path) as f64 / 1048576.0);
    j.insert("memories".into(), json!(nm));
    j.insert("vectors".into(), json!(nv));

    let qs = corpus::queries(a.samples + a.warmup, a.seed);
    let run_mix = |db: &Db| -> (Vec<Sample>, u64) {
        let mut out = Vec::new();
        let mut hits = 0u64;
        for (i, q) in qs.iter().enumerate() {
            let req = RecallRequest {
                query: q.text,
                context_filter: q.filter.as_deref(),
                spatial_sort: q.spatial.as_deref(),
                ..Default::default()
            };
            let (res, dt) = timed(|| db.recall(&req));
            let res = res.unwrap_or_else(|e| panic!("recall {:?}: {e}", q.text));
            if i >= a.warmup {
                hits += res.hits.len() as u64;
                out.push((q.kind, q.chinese, res.mode, dt, res.query_ms));
            }
        }
        (out, hits)
    };
    let db = open_db(a, &path, Durability::Normal, 2, true);
    let (hy, hits) = run_mix(&db);
    drop(db);
    let bm = {
        let db = open_db(a, &path, Durability::Normal, 2, false);
        run_mix(&db).0
    };
    println!("{}", header());
    let pick =
        |v: &[Sample], f: &dyn Fn(&Sample) -> bool| -> Vec<u64> { v.iter().filter(|x| f(x)).map(|x| x.3).collect() };
    let mut rows: Vec<Row> = vec![
        ("overall".into(), Box::new(|_| true)),
        ("  english".into(), Box::new(|x| !x.1)),
        ("  chinese".into(), Box::new(|x| x.1)),
    ];
    for k in Kind::ALL {
        rows.push((format!("  {}", k.name()), Box::new(move |x| x.0 == k)));
        rows.push((format!("    {} english", k.name()), Box::new(move |x| x.0 == k && !x.1)));
    }
    let mut jr = Map::new();
    for (label, f) in &rows {
        let h = Summary::of(&pick(&hy, f.as_ref()));
        let b = Summary::of(&pick(&bm, f.as_ref()));
        println!("{}   (BM25 only: p50 {:.3}, p95 {:.3})", h.row(label), b.p50, b.p95);
        jr.insert(label.trim().into(), json!({"hybrid": h.json(), "bm25_only": b.json()}));
    }
    let hybrid_mode: Vec<u64> = hy.iter().filter(|x| x.2 == SearchMode::Hybrid).map(|x| x.3).collect();
    let modes = |m: SearchMode| hy.iter().filter(|x| x.2 == m).count();
    let hm = Summary::of(&hybrid_mode);
    println!("{}", hm.row("mode hybrid only"));
    println!(
        "  modes: hybrid {}, bm25_only {}, vec_only {}; avg hits {:.2}",
        modes(SearchMode::Hybrid),
        modes(SearchMode::Bm25Only),
        modes(SearchMode::VecOnly),
        hits as f64 / hy.len().max(1) as f64
    );
    let overall = Summary::of(&pick(&hy, &|_| true));
    rep.target(
        format!("hybrid recall p50 <= {HYBRID_100K_P50_MS} ms at {nm}, whole mix"),
        overall.p50,
        overall.p50 <= HYBRID_100K_P50_MS,
    );
    rep.target(
        format!("hybrid recall p50 <= {HYBRID_100K_P50_MS} ms at {nm}, mode hybrid"),
        hm.p50,
        hm.p50 <= HYBRID_100K_P50_MS,
    );
    jr.insert("mode_hybrid".into(), hm.json());
    j.insert("recall".into(), Value::Object(jr));

    // The pieces: query embedding and KNN on this file.
    let e = embedder(a, 2, 32);
    let eq = english_queries(64, a.seed);
    let mut lat = Vec::new();
    for i in 0..a.warmup + a.samples {
        let (_, dt) = timed(|| e.embed(&[eq[i % eq.len()]], TextKind::Query).unwrap());
        if i >= a.warmup {
            lat.push(dt);
        }
    }
    let qe = Summary::of(&lat);
    let qv = query_vectors(e.as_ref(), &eq);
    drop(e);
    println!("  pieces:");
    println!("{}", qe.row("  query embedding"));
    let model = embedder(a, 1, 1).stamp().clone();
    let (index, load) = load_index(&c, &model);
    println!("  vector index loaded in {load:.1} ms ({} vectors)", index.len());
    j.insert("index_load_ms".into(), json!(r3(load)));
    for k in [10, RECALL_K] {
        let recall = index_recall(&c, &index, &model, &qv, k);
        println!("  index recall@{k} vs sqlite-vec exact KNN: {recall:.4}");
        j.insert(format!("index_recall_k{k}"), json!(recall));
    }
    let (s, _) = time_knn(&Knn::Vec0(&c), &qv, RECALL_K, a.samples.min(50), a.warmup.min(5));
    println!("{}", s.row(&format!("  sqlite-vec KNN k={RECALL_K} ({nv} vec)")));
    j.insert("vec0_knn".into(), s.json());
    for k in [10, RECALL_K, RECALL_K * 4] {
        let (s, _) = time_knn(&Knn::Index(&index, &model), &qv, k, a.samples, a.warmup);
        println!("{}", s.row(&format!("  index KNN k={k} ({nv} vec)")));
        j.insert(format!("knn_k{k}"), s.json());
        if k == RECALL_K {
            rep.target(
                format!("KNN p50 <= {KNN_100K_P50_MS} ms, real corpus {nm} ({nv} vectors, k={k})"),
                s.p50,
                s.p50 <= KNN_100K_P50_MS,
            );
        }
    }
    println!("  (BM25 only: the same recalls on the same file opened with embeddings off)");
    j.insert("query_embedding".into(), qe.json());
    if a.keep && a.large_db.is_none() {
        println!("  large database kept: {}", path.display());
    }
    rep.json.insert("hybrid".into(), Value::Object(j));
}
