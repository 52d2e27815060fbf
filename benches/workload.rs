//! Robot workload benchmark: learn a synthetic corpus of grasp / push /
//! navigation / place memories into a fresh database file, then run a mix of
//! recalls (plain, context_filter, spatial_sort) against it.
//!
//!     cargo bench --bench workload                      # 10,000 memories, 200 recalls
//!     cargo bench --bench workload -- --memories 1000 --recalls 50
//!     cargo bench --bench workload -- --memories 100000 --durability normal
//!     cargo bench --bench workload -- --embedding       # embedding targets, see workload/embedding/mod.rs
//!     cargo bench --bench workload -- --real-text       # real sentences of ../shared/data, see workload/realtext/mod.rs
//!     cargo bench --bench workload -- --batch           # learn_batch sizes 1k/10k at 10k/100k memories, see workload/batch.rs
//!
//! Plain std::time::Instant timing of every call, peak RSS from
//! /proc/self/status (VmHWM). Prints a plain-text report and, last, one JSON line
//! starting with `{"bench":"robotmem-workload"`. See docs/BENCHMARKS.md.

#[path = "workload/batch.rs"]
mod batch;
#[path = "workload/corpus.rs"]
mod corpus;
#[path = "workload/embedding/mod.rs"]
mod embedding;
#[path = "workload/goals.rs"]
mod goals;
#[path = "workload/history.rs"]
mod history;
#[path = "workload/realtext/mod.rs"]
mod realtext;
#[path = "workload/reuse.rs"]
mod reuse;
#[path = "workload/stats.rs"]
mod stats;

use std::path::{Path, PathBuf};
use std::time::Instant;

use robotmem::{Db, DupMethod, Durability, Location, OpenOptions};
use serde_json::{json, Value};

use corpus::{Corpus, Kind};
use stats::{header, mib, proc_status_kb, Summary};

/// Targets of the BM25 path (release build, 2-core machine).
const LEARN_P50_TARGET_MS: f64 = 0.3;
const RECALL_P50_TARGET_MS: f64 = 0.5;
/// "Flat": p50 of the last learn window at most this many times the first one's.
const FLAT_RATIO: f64 = 1.5;

struct Args {
    memories: usize,
    recalls: usize,
    warmup: usize,
    durabilities: Vec<Durability>,
    dir: Option<PathBuf>,
    keep: bool,
    seed: u64,
    reuse: Option<PathBuf>,
    history: Option<PathBuf>,
    kinds: Vec<String>,
    encrypted: bool,
}

const USAGE: &str = "usage: cargo bench --bench workload -- [--memories N] [--recalls N] [--warmup N]
       [--durability full|normal|both] [--dir DIR] [--keep] [--seed N]

  --memories N     memories to learn into each database (default 10000)
  --recalls N      measured recalls per database (default 200)
  --warmup N       unmeasured recalls before them (default 20)
  --durability D   full (the default of OpenOptions), normal, or both (default both;
                   each gets its own fresh database file)
  --dir DIR        where the temporary database directory is made (default: cargo's
                   target/tmp, i.e. the same disk as the build; not /tmp, which may be tmpfs)
  --keep           keep the database files (their path is printed)
  --seed N         corpus and query seed (default fixed)
  --reuse FILE     no learning: open FILE (a database kept by --keep) and run the recall mix
                   in this fresh process (RSS of open + recall; rows per context_filter)
  --kinds LIST     with --reuse: only these kinds of recall (plain,filter,spatial)
  --history FILE   views as of a past time on FILE (changed: 1 % updated, 1 % forgotten after it):
                   build time, recall mix on the view, RSS
  --encrypted      open the databases with a key (a bench built with --features encryption)
  --embedding      the embedding benchmark instead (its own options: --embedding --help)
  --real-text      the real-text benchmark instead (its own options: --real-text --help)
  --batch          the batch-learn benchmark instead (its own options: --batch --help)";

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        memories: 10_000,
        recalls: 200,
        warmup: 20,
        durabilities: vec![Durability::Full, Durability::Normal],
        dir: None,
        keep: false,
        seed: corpus::SEED,
        reuse: None,
        history: None,
        kinds: Vec::new(),
        encrypted: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            // cargo bench passes --bench to harness = false targets.
            "--bench" => {}
            "--memories" => a.memories = num("--memories", value("--memories")?)? as usize,
            "--recalls" => a.recalls = num("--recalls", value("--recalls")?)? as usize,
            "--warmup" => a.warmup = num("--warmup", value("--warmup")?)? as usize,
            "--seed" => a.seed = num("--seed", value("--seed")?)?,
            "--dir" => a.dir = Some(PathBuf::from(value("--dir")?)),
            "--keep" => a.keep = true,
            "--encrypted" if robotmem::ENCRYPTION => a.encrypted = true,
            "--encrypted" => return Err("--encrypted: this bench was built without --features encryption".into()),
            "--reuse" => a.reuse = Some(PathBuf::from(value("--reuse")?)),
            "--history" => a.history = Some(PathBuf::from(value("--history")?)),
            "--kinds" => a.kinds = value("--kinds")?.split(',').map(str::to_string).collect(),
            "--durability" => {
                a.durabilities = match value("--durability")?.as_str() {
                    "full" => vec![Durability::Full],
                    "normal" => vec![Durability::Normal],
                    "both" => vec![Durability::Full, Durability::Normal],
                    d => return Err(format!("--durability: expected full, normal or both, got {d}")),
                }
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if a.memories == 0 {
        return Err("--memories must be at least 1".into());
    }
    Ok(a)
}

/// The number `v` of option `name` (`_` separators allowed).
fn num(name: &str, v: String) -> Result<u64, String> {
    v.replace('_', "").parse::<u64>().map_err(|_| format!("{name}: not a number: {v}"))
}

fn dur_name(d: Durability) -> &'static str {
    match d {
        Durability::Full => "full",
        Durability::Normal => "normal",
    }
}

/// Learn-phase results of one database.
struct LearnRun {
    durability: Durability,
    open_ms: f64,
    wall_s: f64,
    /// Per-call latencies in order of the calls, ns.
    lat: Vec<u64>,
    chinese: Vec<bool>,
    dup_exact: usize,
    dup_jaccard: usize,
    /// Up to 5 (new text, stored text it was merged into, method, similarity).
    dup_examples: Vec<(String, String, &'static str, f64)>,
    db_bytes: u64,
}

/// Recall-phase results of one database.
struct RecallRun {
    by_kind: Vec<(Kind, Vec<u64>, usize, usize)>, // kind, latencies, total hits, empty results
    all: Vec<u64>,
    zh: Vec<u64>,
    en: Vec<u64>,
    engine_ms: Vec<u64>, // query_ms reported by the engine, in ns
}

fn window(n: usize) -> usize {
    1000.min((n / 10).max(1))
}

fn main() {
    if std::env::args().skip(1).any(|a| a == "--embedding") {
        return embedding::main();
    }
    if std::env::args().skip(1).any(|a| a == "--real-text") {
        return realtext::main();
    }
    if std::env::args().skip(1).any(|a| a == "--batch") {
        return batch::main();
    }
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("workload: {e}\n{USAGE}");
        std::process::exit(2);
    });
    if let Some(file) = &args.history {
        return history::run(file, args.recalls, args.warmup, args.seed);
    }
    if let Some(file) = &args.reuse {
        return reuse::run(file, args.recalls, args.warmup, args.seed, &args.kinds);
    }
    let dir = make_dir(args.dir.as_deref(), "robotmem-workload");

    let rss_start_kb = proc_status_kb("VmRSS");
    let mut rss_after_open_kb = 0;
    let mut learns = Vec::new();
    let mut recalls = Vec::new();
    let mut hwm_after_learn = Vec::new();
    let mut hwm_after_recall = Vec::new();
    for (i, &d) in args.durabilities.iter().enumerate() {
        let path = dir.join(format!("{}.db", dur_name(d)));
        let t = Instant::now();
        let key = args.encrypted.then(|| robotmem::Key::from_bytes(&[0x5a; 32]).expect("32 bytes"));
        let opts = OpenOptions { location: Location::Path(path.clone()), durability: d, key, ..OpenOptions::default() };
        let db = Db::open(opts).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
        let open_ms = t.elapsed().as_secs_f64() * 1e3;
        if i == 0 {
            rss_after_open_kb = proc_status_kb("VmRSS");
        }
        eprintln!("[{}] learning {} memories into {} ...", dur_name(d), args.memories, path.display());
        let mut run = learn_phase(&db, args.memories, args.seed);
        run.durability = d;
        run.open_ms = open_ms;
        hwm_after_learn.push(proc_status_kb("VmHWM"));
        eprintln!("[{}] {} recalls (+{} warm-up) ...", dur_name(d), args.recalls, args.warmup);
        recalls.push(recall_phase(&db, args.recalls, args.warmup, args.seed));
        // Before the close, which stores the indexes the recalls built.
        hwm_after_recall.push(proc_status_kb("VmHWM"));
        drop(db);
        run.db_bytes = file_bytes(&path);
        learns.push(run);
    }
    let peak_kb = proc_status_kb("VmHWM");
    let rss_end_kb = proc_status_kb("VmRSS");

    let hwm = (hwm_after_learn.as_slice(), hwm_after_recall.as_slice());
    report(&args, &dir, &learns, &recalls, rss_start_kb, rss_after_open_kb, hwm, peak_kb, rss_end_kb);

    finish_dir(&dir, args.keep);
}

/// A fresh directory `{prefix}-{pid}-{nanos}` under `dir` (default: cargo's
/// target/tmp, else the system temp dir).
fn make_dir(dir: Option<&Path>, prefix: &str) -> PathBuf {
    let base = dir
        .map(Path::to_path_buf)
        .or_else(|| option_env!("CARGO_TARGET_TMPDIR").map(PathBuf::from))
        .unwrap_or_else(std::env::temp_dir);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let dir = base.join(format!("{prefix}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

/// Removes the directory of `make_dir`, or with `keep` prints where it is.
fn finish_dir(dir: &Path, keep: bool) {
    if keep {
        eprintln!("kept databases in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn learn_phase(db: &Db, n: usize, seed: u64) -> LearnRun {
    let mut corpus = Corpus::new(seed);
    let mut run = LearnRun {
        durability: Durability::Full,
        open_ms: 0.0,
        wall_s: 0.0,
        lat: Vec::with_capacity(n),
        chinese: Vec::with_capacity(n),
        dup_exact: 0,
        dup_jaccard: 0,
        dup_examples: Vec::new(),
        db_bytes: 0,
    };
    let started = Instant::now();
    for i in 0..n {
        let m = corpus.next_memory();
        let req = m.request();
        let t = Instant::now();
        let out = db.learn(&req);
        let dt = t.elapsed().as_nanos() as u64;
        let out = out.unwrap_or_else(|e| panic!("learn #{i} {:?}: {e}", m.insight));
        run.lat.push(dt);
        run.chinese.push(m.chinese);
        if let Some(d) = out.duplicate {
            match d.method {
                DupMethod::Exact => run.dup_exact += 1,
                _ => run.dup_jaccard += 1,
            }
            if run.dup_examples.len() < 5 {
                let kept = db.get(d.existing_id).map(|m| m.content).unwrap_or_default();
                run.dup_examples.push((m.insight.clone(), kept, d.method.as_str(), d.similarity));
            }
        }
        if (i + 1) % (n / 10).max(1) == 0 {
            eprint!("\r  {}/{}", i + 1, n);
        }
    }
    eprintln!();
    run.wall_s = started.elapsed().as_secs_f64();
    run
}

fn recall_phase(db: &Db, count: usize, warmup: usize, seed: u64) -> RecallRun {
    let qs = corpus::queries(warmup + count, seed);
    let mut run = RecallRun {
        by_kind: Kind::ALL.iter().map(|&k| (k, Vec::new(), 0, 0)).collect(),
        all: Vec::with_capacity(count),
        zh: Vec::new(),
        en: Vec::new(),
        engine_ms: Vec::with_capacity(count),
    };
    for (i, q) in qs.iter().enumerate() {
        let req = q.request();
        let t = Instant::now();
        let out = db.recall(&req);
        let dt = t.elapsed().as_nanos() as u64;
        let out = out.unwrap_or_else(|e| panic!("recall {:?}: {e}", q.text));
        if i < warmup {
            continue;
        }
        let k = run.by_kind.iter_mut().find(|k| k.0 == q.kind).unwrap();
        k.1.push(dt);
        k.2 += out.hits.len();
        if out.hits.is_empty() {
            k.3 += 1;
        }
        run.all.push(dt);
        if q.chinese {
            run.zh.push(dt)
        } else {
            run.en.push(dt)
        }
        run.engine_ms.push((out.query_ms * 1e6) as u64);
    }
    run
}

fn file_bytes(db: &Path) -> u64 {
    let len = |p: PathBuf| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let s = db.to_string_lossy();
    len(db.to_path_buf()) + len(format!("{s}-wal").into()) + len(format!("{s}-shm").into())
}

/// Filesystem type of the mount that holds `p` (from /proc/mounts).
fn fs_type(p: &Path) -> String {
    let p = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 3 && p.starts_with(f[1])).then(|| (f[1].len(), format!("{} on {} ({})", f[2], f[1], f[0])))
        })
        .max_by_key(|(n, _)| *n)
        .map(|(_, s)| s)
        .unwrap_or_else(|| "unknown".into())
}

/// `git rev-parse --short HEAD` of the crate, with `+dirty` when src/ has changes.
fn revision() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(env!("CARGO_MANIFEST_DIR"))
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "--short", "HEAD"]) {
        Some(rev) => {
            let dirty =
                git(&["status", "--porcelain", "--", "src", "Cargo.toml", "Cargo.lock"]).is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{rev}+dirty")
            } else {
                rev
            }
        }
        None => "unknown".into(),
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "MET"
    } else {
        "MISSED"
    }
}

#[allow(clippy::too_many_arguments)]
fn report(
    args: &Args,
    dir: &Path,
    learns: &[LearnRun],
    recalls: &[RecallRun],
    rss_start_kb: u64,
    rss_after_open_kb: u64,
    // Peak RSS after each learn phase and after its recalls (before the close).
    hwm: (&[u64], &[u64]),
    peak_kb: u64,
    rss_end_kb: u64,
) {
    let n = args.memories;
    let w = window(n);
    let k = |x: usize| {
        if x.is_multiple_of(1000) {
            format!("{}k", x / 1000)
        } else {
            x.to_string()
        }
    };
    println!();
    let rev = revision();
    println!("robotmem workload benchmark (robotmem {}, revision {rev})", robotmem::VERSION);
    println!(
        "memories {n}, recalls {} (+{} warm-up), seed {:#x}, database dir {} [{}]",
        args.recalls,
        args.warmup,
        args.seed,
        dir.display(),
        fs_type(dir)
    );
    let mut out_learn = serde_json::Map::new();
    let mut out_recall = serde_json::Map::new();
    let mut targets = Vec::new();

    for (run, rec) in learns.iter().zip(recalls) {
        let name = dur_name(run.durability);
        let total = Summary::of(&run.lat);
        let first = Summary::of(&run.lat[..w]);
        let last = Summary::of(&run.lat[n - w..]);
        let pick = |zh: bool| -> Vec<u64> {
            run.lat.iter().zip(&run.chinese).filter(|(_, &c)| c == zh).map(|(&l, _)| l).collect()
        };
        let en = Summary::of(&pick(false));
        let zh = Summary::of(&pick(true));
        let stored = n - run.dup_exact - run.dup_jaccard;
        let busy_s = run.lat.iter().sum::<u64>() as f64 / 1e9;
        println!();
        println!("== learn, durability {name} (open {:.1} ms) ==", run.open_ms);
        println!("{}", header());
        println!("{}", first.row(&format!("first {} (0-{})", w, k(w))));
        println!("{}", last.row(&format!("last {} ({}-{})", w, k(n - w), k(n))));
        println!("{}", total.row("all"));
        println!("{}", en.row("  english"));
        println!("{}", zh.row("  chinese"));
        println!("  p50 by window of {w} learns (window ending at):");
        let mut windows = Vec::new();
        for d in 1..=10 {
            let end = (n * d / 10).max(w);
            let s = Summary::of(&run.lat[end - w..end]);
            windows.push(
                json!({"end": end, "p50_ms": (s.p50 * 1e4).round() / 1e4, "p99_ms": (s.p99 * 1e4).round() / 1e4}),
            );
            print!("    {:>7}: {:.3}/{:.3}", k(end), s.p50, s.p99);
            if d % 5 == 0 {
                println!("   (p50/p99 ms)");
            }
        }
        println!(
            "  throughput {:.0} learns/s wall ({:.2} s for {n}), {:.0} learns/s of learn-call time",
            n as f64 / run.wall_s,
            run.wall_s,
            n as f64 / busy_s
        );
        println!(
            "  duplicates: {} ({} exact, {} jaccard); stored {stored}; database {:.1} MiB",
            run.dup_exact + run.dup_jaccard,
            run.dup_exact,
            run.dup_jaccard,
            run.db_bytes as f64 / 1048576.0
        );
        for (new, kept, method, sim) in &run.dup_examples {
            println!("    {method} {sim:.2}: {new:?}\n{:>15} {kept:?}", "merged into");
        }

        println!();
        println!("== recall at {} memories, durability {name} (n=5) ==", stored);
        println!("{}", header());
        let mut kinds = serde_json::Map::new();
        for (kind, lat, hits, empty) in &rec.by_kind {
            let s = Summary::of(lat);
            let avg = if lat.is_empty() { 0.0 } else { *hits as f64 / lat.len() as f64 };
            println!("{}   avg hits {avg:.2}, empty {empty}", s.row(kind.name()));
            let mut j = s.json();
            j["avg_hits"] = json!(avg);
            j["empty"] = json!(empty);
            kinds.insert(kind.name().into(), j);
        }
        let all = Summary::of(&rec.all);
        println!("{}", all.row("overall"));
        println!("{}", Summary::of(&rec.en).row("  english queries"));
        println!("{}", Summary::of(&rec.zh).row("  chinese queries"));
        println!("{}", Summary::of(&rec.engine_ms).row("  engine query_ms"));
        kinds.insert("overall".into(), all.json());
        kinds.insert("english".into(), Summary::of(&rec.en).json());
        kinds.insert("chinese".into(), Summary::of(&rec.zh).json());
        out_recall.insert(name.into(), Value::Object(kinds));
        if let Some((filter_p95, rss)) = goals::bm25(stored) {
            let filter = rec.by_kind.iter().find(|r| r.0 == Kind::Filter).map_or(f64::NAN, |r| Summary::of(&r.1).p95);
            let at = format!("at {} [{name}]", k(stored));
            targets.push((
                goals::label(&format!("context_filter recall p95 {at}"), filter_p95, "ms"),
                filter,
                filter <= filter_p95,
            ));
            let peak = mib(peak_kb);
            targets.push((goals::label("peak RSS (learned them, then recalled)", rss, "MiB"), peak, peak <= rss));
        }

        let ratio = if first.p50 > 0.0 { last.p50 / first.p50 } else { f64::NAN };
        targets.push((
            format!("learn p50 <= {LEARN_P50_TARGET_MS} ms, first {w} [{name}]"),
            first.p50,
            first.p50 <= LEARN_P50_TARGET_MS,
        ));
        targets.push((
            format!("learn p50 <= {LEARN_P50_TARGET_MS} ms, last {w} [{name}]"),
            last.p50,
            last.p50 <= LEARN_P50_TARGET_MS,
        ));
        targets.push((format!("learn flat: last/first p50 <= {FLAT_RATIO} [{name}]"), ratio, ratio <= FLAT_RATIO));
        targets.push((
            format!("recall p50 <= {RECALL_P50_TARGET_MS} ms at {} [{name}]", k(stored)),
            all.p50,
            all.p50 <= RECALL_P50_TARGET_MS,
        ));

        out_learn.insert(
            name.into(),
            json!({
                "first_window": first.json(),
                "last_window": last.json(),
                "all": total.json(),
                "english": en.json(),
                "chinese": zh.json(),
                "window": w,
                "windows": windows,
                "flat_ratio_p50": (ratio * 1e3).round() / 1e3,
                "throughput_per_s": (n as f64 / run.wall_s).round(),
                "wall_s": (run.wall_s * 1e3).round() / 1e3,
                "duplicates": run.dup_exact + run.dup_jaccard,
                "duplicates_exact": run.dup_exact,
                "duplicates_jaccard": run.dup_jaccard,
                "stored": stored,
                "db_bytes": run.db_bytes,
                "open_ms": (run.open_ms * 1e3).round() / 1e3,
            }),
        );
    }

    println!();
    println!("== memory (process) ==");
    println!("  {:<30} {:>8.1} MiB", "RSS at start (VmRSS)", mib(rss_start_kb));
    println!("  {:<30} {:>8.1} MiB", "RSS after open (VmRSS)", mib(rss_after_open_kb));
    for ((run, learned), recalled) in learns.iter().zip(hwm.0).zip(hwm.1) {
        let d = dur_name(run.durability);
        println!("  {:<30} {:>8.1} MiB", format!("peak RSS after learn [{d}]"), mib(*learned));
        println!("  {:<30} {:>8.1} MiB", format!("peak RSS after recall [{d}]"), mib(*recalled));
    }
    println!("  {:<30} {:>8.1} MiB", "RSS at end (VmRSS)", mib(rss_end_kb));
    println!("  {:<30} {:>8.1} MiB", "peak RSS (VmHWM)", mib(peak_kb));

    println!();
    println!("== targets ==");
    for (what, value, ok) in &targets {
        println!("  {:<52} {:>8.3}  {}", what, value, verdict(*ok));
    }
    if n != 10_000 {
        println!("  (the targets but issue 29's are stated for 10,000 memories; this run used {n})");
    }

    let line = json!({
        "bench": "robotmem-workload",
        "version": robotmem::VERSION,
        "revision": rev,
        "memories": n,
        "recalls": args.recalls,
        "warmup": args.warmup,
        "seed": args.seed,
        "learn": out_learn,
        "recall": out_recall,
        "rss_start_kb": rss_start_kb,
        "rss_after_open_kb": rss_after_open_kb,
        "peak_rss_kb": peak_kb,
        "rss_end_kb": rss_end_kb,
        "targets": targets.iter().map(|(w, v, ok)| json!({"target": w, "value": (v * 1e4).round() / 1e4, "met": ok})).collect::<Vec<_>>(),
    });
    println!();
    println!("{line}");
}
