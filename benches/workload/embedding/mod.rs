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
//!
//! This file: options, the phase loop and the closing report. The phases:
//! `open.rs` (open, rss; `child.rs` the fresh processes they run), `model.rs`
//! (query, ort), `learn.rs` (learn, batch), `writers.rs` (writers), `knn.rs` (knn), `hybrid.rs`
//! (hybrid and the large database); shared helpers in `util.rs`.

mod child;
mod hybrid;
mod knn;
mod learn;
mod model;
mod open;
mod pagecache;
mod util;
mod writers;

use std::path::PathBuf;
use std::time::Instant;

use robotmem::internals::store::vectors;
use serde_json::{json, Map, Value};

use crate::{corpus, num};
use util::{cpu_jiffies, hwm, other_cores, r3, rss, wait_idle};

// Targets of the embedding issue (release build, 2-core machine).
const QUERY_EMBED_P50_MS: f64 = 5.0;
const KNN_10K_P50_MS: f64 = 3.0;
const KNN_100K_P50_MS: f64 = 15.0;
// Issue 29: learn with the model p50 <= 2 ms, learn_batch >= 800 texts/s.
const LEARN_EMBED_P50_MS: f64 = 2.0;
const BATCH_PER_S: f64 = 800.0;
/// 200 MB, in MiB (VmHWM is reported in kB = KiB).
const RSS_10K_MIB: f64 = 200e6 / 1048576.0;
const OPEN_MS: f64 = 500.0;

/// The k the engine asks sqlite-vec for in a recall of n = 5 (fusion depth 40, ×2).
const RECALL_K: usize = 80;
/// The k of the cosine dedup layer of learn.
const DEDUP_K: usize = 8;

const PHASES: &[&str] = &["open", "rss", "query", "ort", "learn", "writers", "batch", "knn", "hybrid"];

pub const USAGE: &str = "usage: cargo bench --bench workload -- --embedding [--phases LIST] [--memories N]
       [--large N] [--large-build embed|copy] [--large-db FILE] [--samples N] [--warmup N]
       [--learns N] [--threads LIST] [--batch N] [--open-runs N] [--alt-model FILE] [--wait-idle S]
       [--model-dir DIR]
       [--ort-library FILE] [--dir DIR] [--keep] [--seed N]

  --phases LIST    comma-separated subset of open,rss,query,ort,learn,writers,batch,knn,hybrid
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
        match arg.as_str() {
            "--bench" | "--embedding" => {}
            "--phases" => {
                let v = value("--phases")?;
                a.phases = v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
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
                    .map(|t| t.trim().parse::<u32>().map_err(|_| format!("--threads: not a number: {t}")))
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

    /// An issue 29 target `value <= limit` where one is stated ([`crate::goals`]).
    fn at_most(&mut self, what: &str, value: f64, limit: Option<f64>, unit: &str) {
        if let Some(limit) = limit {
            self.target(crate::goals::label(what, limit, unit), value, value <= limit);
        }
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
    if let Some(what) = a.child.clone() {
        let out = child::run(&a, &what);
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
    let dir = crate::make_dir(a.dir.as_deref(), "robotmem-embedding");

    let rev = crate::revision();
    println!("robotmem embedding benchmark (robotmem {}, revision {rev})", robotmem::VERSION);
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

    let mut rep = Report { targets: Vec::new(), json: Map::new(), hwm: Vec::new() };
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
            "open" => open::open_phase(&a, &dir, &mut rep),
            "rss" => open::rss_phase(&a, &dir, &mut rep),
            "query" => model::query_phase(&a, &mut rep),
            "ort" => model::ort_phase(&a, &mut rep),
            "learn" => real_db = Some(learn::learn_phase(&a, &dir, &mut rep)),
            "writers" => writers::writers_phase(&a, &dir, &mut rep),
            "batch" => {
                let p = learn::batch_phase(&a, &dir, &mut rep);
                real_db.get_or_insert(p);
            }
            "knn" => {
                let p = real_db.clone().unwrap_or_else(|| learn::build_real(&a, &dir));
                knn::knn_phase(&a, &dir, &p, &mut rep);
            }
            "hybrid" => hybrid::hybrid_phase(&a, &dir, &mut rep),
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
        println!("  {:<62} {:>9.3}  {}", what, value, crate::verdict(*ok));
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
    crate::finish_dir(&dir, a.keep);
}
