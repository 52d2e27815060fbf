//! Real-text benchmark: the `--real-text` mode of the workload bench.
//!
//!     cargo bench --bench workload -- --real-text                       # both sets, 100k memories, FULL
//!     cargo bench --bench workload -- --real-text --corpus squad --memories 10000
//!     cargo bench --bench workload -- --real-text --contention 1.5      # learn with 1.5 cores busy elsewhere
//!
//! Learns every memory sentence of a development set of `../shared/data`
//! (SQuAD v1.1 dev, English; CMRC 2018 dev, Chinese; loaded by
//! tests/devsets/load.rs) one `Db::learn` at a time into a fresh database file,
//! repeating the corpus when more memories are asked for than it has (see
//! texts.rs: every pass gets a letters-only suffix), then recalls every question
//! (n = 10) and reports learn latency p50/p95 per window of 1,000 learns (the
//! windows ending at 1k, 2k, 5k, 10k, 20k, 50k, 100k …, all learns and the
//! number-free ones apart), duplicates, recall latency p50/p95 by mode, and peak
//! RSS. BM25 only unless `--embedding-model` is given. `--contention C` keeps C
//! cores busy with child processes during the learn phase (spin.rs).
//!
//! Every latency is a plain `std::time::Instant` around one call, percentiles
//! nearest-rank (stats.rs). Prints a plain-text report and, last, one JSON line
//! starting with `{"bench":"robotmem-realtext"`. See docs/BENCHMARKS.md.

#[path = "../../../tests/devsets/load.rs"]
mod load;
mod spin;
mod texts;
use std::path::{Path, PathBuf};
use std::time::Instant;

use robotmem::{Db, Durability, LearnRequest, Location, OpenOptions, RecallRequest};
use serde_json::{json, Value};

use crate::corpus::Rng;
use crate::stats::{header, mib, proc_status_kb, Summary};
use crate::{dur_name, num};
use load::Devset;
use texts::Texts;

pub const USAGE: &str = "usage: cargo bench --bench workload -- --real-text [--corpus squad|cmrc|both]
       [--memories N] [--durability full|normal|both] [--queries N] [--n N]
       [--embedding-model [DIR]] [--ort-library FILE] [--contention C] [--threads T] [--max-seconds S]
       [--dir DIR] [--keep] [--seed N]

  --corpus C          squad (SQuAD v1.1 dev, English), cmrc (CMRC 2018 dev, Chinese) or both
                      (default both); read from $ROBOTMEM_DEVSETS, else ../shared/data
  --memories N        memories to learn (default 100000); above the corpus size the corpus is
                      repeated, every pass with its own letters-only suffix (said in the output)
  --durability D      full (default, as OpenOptions), normal, or both (a fresh database each)
  --queries N         recall a fixed-seed sample of N questions (default: every question)
  --n N               hits per recall (default 10)
  --embedding-model [DIR]  learn and recall with the embedding model (default DIR:
                      .cache/models/all-MiniLM-L6-v2-int8); without it BM25 only
  --ort-library F     default .cache/models/onnxruntime/libonnxruntime.so
  --threads T         learn from T threads sharing the handle (default 1): memory i is
                      learned by thread i mod T; latencies are per call (group commit)
  --contention C      during the learn phase keep C cores (e.g. 1 or 1.5) busy with ceil(C)
                      busy-loop child processes (default 0)
  --max-seconds S     stop the learn phase after S seconds (windows not reached are not reported)
  --dir DIR           where the temporary database directory is made (default: cargo's target/tmp)
  --keep              keep the database files (their path is printed)
  --seed N            seed of the question sample (default fixed)";

struct Args {
    corpora: Vec<&'static str>,
    memories: usize,
    durabilities: Vec<Durability>,
    queries: Option<usize>,
    n: i64,
    model: Option<PathBuf>,
    ort: PathBuf,
    contention: f64,
    threads: usize,
    max_seconds: Option<f64>,
    dir: Option<PathBuf>,
    keep: bool,
    seed: u64,
}

fn parse_args(argv: &[String]) -> Result<Args, String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut a = Args {
        corpora: vec!["squad", "cmrc"],
        memories: 100_000,
        durabilities: vec![Durability::Full],
        queries: None,
        n: 10,
        model: None,
        ort: root.join(".cache/models/onnxruntime/libonnxruntime.so"),
        contention: 0.0,
        threads: 1,
        max_seconds: None,
        dir: None,
        keep: false,
        seed: crate::corpus::SEED,
    };
    let mut it = argv.iter().peekable();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--bench" | "--real-text" => {}
            "--corpus" => {
                a.corpora = match value("--corpus")?.as_str() {
                    "squad" => vec!["squad"],
                    "cmrc" => vec!["cmrc"],
                    "both" => vec!["squad", "cmrc"],
                    c => return Err(format!("--corpus: expected squad, cmrc or both, got {c}")),
                }
            }
            "--memories" => a.memories = num("--memories", value("--memories")?)? as usize,
            "--queries" => a.queries = Some(num("--queries", value("--queries")?)? as usize),
            "--n" => a.n = num("--n", value("--n")?)? as i64,
            "--seed" => a.seed = num("--seed", value("--seed")?)?,
            "--ort-library" => a.ort = PathBuf::from(value("--ort-library")?),
            "--dir" => a.dir = Some(PathBuf::from(value("--dir")?)),
            "--keep" => a.keep = true,
            "--durability" => {
                let v = value("--durability")?;
                a.durabilities = [Durability::Full, Durability::Normal]
                    .into_iter()
                    .filter(|d| v == "both" || v == dur_name(*d))
                    .collect();
                if a.durabilities.is_empty() {
                    return Err(format!("--durability: expected full, normal or both, got {v}"));
                }
            }
            "--contention" => {
                let v = value("--contention")?;
                a.contention = v.parse().map_err(|_| format!("--contention: not a number: {v}"))?;
                if !(0.0..=16.0).contains(&a.contention) {
                    return Err("--contention: expected 0 to 16 cores".into());
                }
            }
            "--threads" => {
                a.threads = num("--threads", value("--threads")?)? as usize;
                if !(1..=64).contains(&a.threads) {
                    return Err("--threads: expected 1 to 64".into());
                }
            }
            "--max-seconds" => {
                let v = value("--max-seconds")?;
                a.max_seconds = Some(v.parse().map_err(|_| format!("--max-seconds: not a number: {v}"))?);
            }
            "--embedding-model" => {
                let dir = match it.peek() {
                    Some(d) if !d.starts_with("--") => PathBuf::from(it.next().unwrap()),
                    _ => root.join(".cache/models/all-MiniLM-L6-v2-int8"),
                };
                a.model = Some(dir);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    (a.memories > 0).then_some(a).ok_or_else(|| "--memories must be at least 1".into())
}

/// Learn-phase results of one database.
struct Learned {
    /// Per-call latencies in order of the calls, ns.
    lat: Vec<u64>,
    /// Whether the text of each call has no number (robotmem::internals::text::numbers is empty).
    number_free: Vec<bool>,
    dups: Vec<(&'static str, usize)>,
    /// Up to 3 (new text, stored text it was merged into, method, similarity).
    dup_examples: Vec<(String, String, &'static str, f64)>,
    wall_s: f64,
    stopped_early: bool,
    /// The 1-minute load average of the machine (/proc/loadavg: runnable and
    /// uninterruptible tasks, so I/O waits count too) after every 1,000 learns.
    load: Vec<f64>,
    /// (spinner processes, their duty, cores they used) during the phase.
    contention: Option<(usize, f64, f64)>,
    /// Writes and the transactions that committed them (group commit) during the phase.
    commits: (u64, u64),
    passes: usize,
    describe: String,
    cut: usize,
}

/// Recall-phase results of one database.
struct Recalled {
    first_ms: f64,
    all: Vec<u64>,
    by_mode: Vec<(&'static str, Vec<u64>)>,
    hits: usize,
}

pub fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if let Some(p) = argv.iter().position(|a| a == "--spin") {
        spin::child(&argv[p + 1..]);
    }
    if argv.iter().any(|x| x == "-h" || x == "--help") {
        println!("{USAGE}");
        return;
    }
    let a = parse_args(&argv).unwrap_or_else(|e| {
        eprintln!("workload --real-text: {e}\n{USAGE}");
        std::process::exit(2);
    });
    if let Some(m) = &a.model {
        for p in [&m.join("model.onnx"), &a.ort] {
            if !p.exists() {
                eprintln!("workload --real-text: {} is missing (scripts/fetch-model.sh)", p.display());
                std::process::exit(2);
            }
        }
    }
    let dir = crate::make_dir(a.dir.as_deref(), "robotmem-realtext");
    let rev = crate::revision();
    println!("robotmem real-text benchmark (robotmem {}, revision {rev})", robotmem::VERSION);
    println!(
        "memories {}, durability {}, {}, n {}, {} CPUs, contention {} cores, database dir {} [{}]",
        a.memories,
        a.durabilities.iter().map(|d| dur_name(*d)).collect::<Vec<_>>().join("+"),
        match &a.model {
            Some(m) => format!("embeddings with {}", m.display()),
            None => "BM25 only (embeddings = false)".into(),
        },
        a.n,
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        a.contention,
        dir.display(),
        crate::fs_type(&dir)
    );
    let mut runs = Vec::new();
    for name in &a.corpora {
        let set = load::load(name).unwrap_or_else(|e| {
            eprintln!("workload --real-text: {e} (set ROBOTMEM_DEVSETS to the directory of the sets)");
            std::process::exit(2);
        });
        for &d in &a.durabilities {
            let path = dir.join(format!("{name}-{}.db", dur_name(d)));
            runs.push(run(&a, &set, d, &path));
            if !a.keep {
                for suffix in ["", "-wal", "-shm", "-lock"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
            }
        }
    }
    let peak = proc_status_kb("VmHWM");
    println!();
    println!("peak RSS of the process (VmHWM) {:.1} MiB", mib(peak));
    let line = json!({
        "bench": "robotmem-realtext",
        "version": robotmem::VERSION,
        "revision": rev,
        "memories": a.memories,
        "n": a.n,
        "embeddings": a.model.is_some(),
        "contention_cores": a.contention,
        "runs": runs,
        "peak_rss_kb": peak,
    });
    println!();
    println!("{line}");
    crate::finish_dir(&dir, a.keep);
}

fn open(a: &Args, path: &Path, d: Durability) -> Db {
    let db = Db::open(OpenOptions {
        location: Location::Path(path.to_path_buf()),
        durability: d,
        embeddings: a.model.is_some(),
        model_dir: a.model.clone(),
        ort_library: a.model.as_ref().map(|_| a.ort.clone()),
        ..OpenOptions::default()
    })
    .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    if a.model.is_some() {
        let s = db.embedding_status().expect("embedding_status");
        assert!(s.model.is_some(), "no embedding model: {}", s.reason);
    }
    db
}

/// One database: learn, recall, report; its JSON.
fn run(a: &Args, set: &Devset, d: Durability, path: &Path) -> Value {
    let db = open(a, path, d);
    eprintln!("[real-text {} {}] learning {} memories into {} ...", set.name, dur_name(d), a.memories, path.display());
    let learned = learn_phase(a, &db, set);
    let hwm_learn = proc_status_kb("VmHWM");
    eprintln!("[real-text {} {}] recalling ...", set.name, dur_name(d));
    let recalled = recall_phase(a, &db, set);
    drop(db);
    report(a, set, d, &learned, &recalled, hwm_learn)
}

fn learn_phase(a: &Args, db: &Db, set: &Devset) -> Learned {
    let corpus: Vec<String> = set.memories.iter().map(|m| m.text.clone()).collect();
    let mut texts = Texts::new(&corpus, a.memories);
    let spinners = (a.contention > 0.0).then(|| spin::Spinners::start(a.contention));
    let mut l = Learned {
        lat: Vec::with_capacity(a.memories),
        number_free: Vec::with_capacity(a.memories),
        dups: Vec::new(),
        dup_examples: Vec::new(),
        wall_s: 0.0,
        stopped_early: false,
        load: Vec::new(),
        contention: None,
        commits: (0, 0),
        passes: texts.passes,
        describe: texts.describe(),
        cut: 0,
    };
    let all: Vec<String> = (0..a.memories).map(|i| texts.text(i)).collect();
    let before = db.commit_counts();
    let started = Instant::now();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let done = std::sync::atomic::AtomicUsize::new(0);
    let loads = std::sync::Mutex::new(Vec::new());
    // One thread learns memories t, t + T, t + 2T ...; results are merged by index.
    let learn_from = |t: usize| {
        let mut out: Vec<LearnedOne> = Vec::new();
        for i in (t..a.memories).step_by(a.threads) {
            if a.max_seconds.is_some_and(|s| started.elapsed().as_secs_f64() > s) {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                break;
            }
            let text = &all[i];
            let t0 = Instant::now();
            let res = db.learn(&LearnRequest { insight: text, ..Default::default() });
            let dt = t0.elapsed().as_nanos() as u64;
            let res = res.unwrap_or_else(|e| panic!("learn #{i} {text:?}: {e}"));
            out.push((i, dt, res.duplicate.map(|d| (text.clone(), d.existing_id, d.method.as_str(), d.similarity))));
            let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            if n.is_multiple_of(1000) {
                loads.lock().unwrap().push(load1());
            }
            if n.is_multiple_of((a.memories / 20).max(1)) {
                eprint!("\r  {}/{} ({:.0} s)", n, a.memories, started.elapsed().as_secs_f64());
            }
        }
        out
    };
    let mut results: Vec<_> = if a.threads == 1 {
        learn_from(0)
    } else {
        std::thread::scope(|s| {
            let hs: Vec<_> = (0..a.threads).map(|t| s.spawn(move || learn_from(t))).collect();
            hs.into_iter().flat_map(|h| h.join().expect("learn thread")).collect()
        })
    };
    results.sort_unstable_by_key(|r| r.0);
    l.stopped_early = stop.into_inner();
    l.load = loads.into_inner().unwrap();
    let after = db.commit_counts();
    l.commits = (after.0 - before.0, after.1 - before.1);
    for (i, dt, dup) in results {
        l.lat.push(dt);
        l.number_free.push(robotmem::internals::text::numbers(&all[i]).is_empty());
        if let Some((text, existing, m, similarity)) = dup {
            match l.dups.iter_mut().find(|x| x.0 == m) {
                Some(x) => x.1 += 1,
                None => l.dups.push((m, 1)),
            }
            if l.dup_examples.len() < 3 {
                let kept = db.get(existing).map(|m| m.content).unwrap_or_default();
                l.dup_examples.push((text, kept, m, similarity));
            }
        }
    }
    eprintln!();
    l.wall_s = started.elapsed().as_secs_f64();
    l.cut = texts.cut;
    l.contention = spinners.map(|s| (s.count(), s.duty, s.cores_used()));
    l
}

fn recall_phase(a: &Args, db: &Db, set: &Devset) -> Recalled {
    let mut order: Vec<usize> = (0..set.queries.len()).collect();
    if let Some(k) = a.queries {
        let mut r = Rng::new(a.seed);
        for i in (1..order.len()).rev() {
            order.swap(i, (r.next_u64() % (i as u64 + 1)) as usize);
        }
        order.truncate(k.min(order.len()));
        order.sort_unstable();
    }
    let mut rec = Recalled { first_ms: 0.0, all: Vec::new(), by_mode: Vec::new(), hits: 0 };
    for (j, &qi) in order.iter().enumerate() {
        let q = &set.queries[qi].question;
        let t = Instant::now();
        let out = db.recall(&RecallRequest { query: q, n: a.n, ..Default::default() });
        let dt = t.elapsed().as_nanos() as u64;
        let out = out.unwrap_or_else(|e| panic!("recall {q:?}: {e}"));
        if j == 0 {
            // Not counted: the first recall of a handle may build its in-process index.
            rec.first_ms = dt as f64 / 1e6;
            continue;
        }
        rec.all.push(dt);
        rec.hits += out.hits.len();
        let m = out.mode.as_str();
        match rec.by_mode.iter_mut().find(|x| x.0 == m) {
            Some(x) => x.1.push(dt),
            None => rec.by_mode.push((m, vec![dt])),
        }
    }
    rec
}

/// The 1-minute load average (first field of /proc/loadavg); NaN when unreadable.
fn load1() -> f64 {
    let s = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    s.split_whitespace().next().and_then(|x| x.parse().ok()).unwrap_or(f64::NAN)
}

/// Ends of the 1,000-learn windows reported: 1k, 2k, 5k, 10k, 20k, 50k … up to
/// `done`, and `done` itself.
fn window_ends(done: usize, w: usize) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut decade = 1000;
    'outer: loop {
        for m in [1, 2, 5] {
            let e = decade * m;
            if e > done {
                break 'outer;
            }
            ends.push(e);
        }
        decade *= 10;
    }
    if done >= w && ends.last() != Some(&done) {
        ends.push(done);
    }
    ends
}

fn k(x: usize) -> String {
    if x.is_multiple_of(1000) {
        format!("{}k", x / 1000)
    } else {
        x.to_string()
    }
}

fn report(a: &Args, set: &Devset, d: Durability, l: &Learned, r: &Recalled, hwm_learn: u64) -> Value {
    let done = l.lat.len();
    let w = 1000.min(done).max(1);
    let dups: usize = l.dups.iter().map(|x| x.1).sum();
    let free_share = l.number_free.iter().filter(|&&f| f).count() as f64 / done.max(1) as f64;
    println!();
    println!(
        "== {} ({} memories in the corpus, {} questions), durability {} ==",
        set.name,
        set.memories.len(),
        set.queries.len(),
        dur_name(d)
    );
    println!("  {}", l.describe);
    if l.cut > 0 {
        println!("  {} texts were cut to make room for their suffix (300 characters at most)", l.cut);
    }
    println!(
        "  learned {done} of {} in {:.1} s{}; {:.1} % of the texts have no number",
        a.memories,
        l.wall_s,
        if l.stopped_early { " (stopped by --max-seconds)" } else { "" },
        free_share * 100.0
    );
    if let Some((count, duty, used)) = l.contention {
        println!("  contention: {count} busy-loop processes at duty {duty:.2}, measured {used:.2} cores during learn");
    }
    let (writes, commits) = l.commits;
    println!(
        "  {} learning thread(s); {writes} writes in {commits} transactions ({:.2} per commit)",
        a.threads,
        writes as f64 / commits.max(1) as f64
    );
    println!("  duplicates reported {dups} {:?}; stored {}", l.dups, done - dups);
    for (new, kept, method, sim) in &l.dup_examples {
        println!("    {method} {sim:.2}: {new:?}\n{:>15} {kept:?}", "merged into");
    }
    println!("  learn latency per window of {w} learns (the window ending at the count shown):");
    println!("{}", header());
    let mut windows = Vec::new();
    let mut loads = Vec::new();
    for end in window_ends(done, w) {
        let lat = &l.lat[end - w..end];
        let free: Vec<u64> = lat.iter().zip(&l.number_free[end - w..end]).filter(|x| *x.1).map(|x| *x.0).collect();
        let (all, nf) = (Summary::of(lat), Summary::of(&free));
        println!("{}", all.row(&format!("[{}, {})", k(end - w), k(end))));
        println!("{}", nf.row("  number-free"));
        let load = end.is_multiple_of(1000).then(|| l.load.get(end / 1000 - 1).copied()).flatten();
        if let Some(x) = load {
            loads.push(format!("{} {x:.2}", k(end)));
        }
        windows.push(json!({"end": end, "all": all.json(), "number_free": nf.json(), "load1": load}));
    }
    let all = Summary::of(&l.lat);
    println!("{}", all.row("all learns"));
    println!("  machine load (1-min load average, /proc/loadavg) at the window ends: {}", loads.join(", "));
    println!();
    println!(
        "  recall of {} questions at {} stored memories (n = {}; first recall {:.1} ms, not counted):",
        r.all.len() + 1,
        done - dups,
        a.n,
        r.first_ms
    );
    println!("{}", header());
    let overall = Summary::of(&r.all);
    println!("{}", overall.row("all"));
    let mut modes = serde_json::Map::new();
    for (m, lat) in &r.by_mode {
        let s = Summary::of(lat);
        println!("{}", s.row(&format!("  mode {m}")));
        modes.insert(m.to_string(), s.json());
    }
    println!(
        "  avg hits {:.2}; peak RSS after learn {:.1} MiB",
        r.hits as f64 / r.all.len().max(1) as f64,
        mib(hwm_learn)
    );
    json!({
        "corpus": set.name,
        "durability": dur_name(d),
        "learned": done,
        "stopped_early": l.stopped_early,
        "passes": l.passes,
        "repeat": l.describe,
        "cut_texts": l.cut,
        "number_free_share": (free_share * 1e4).round() / 1e4,
        "wall_s": (l.wall_s * 1e3).round() / 1e3,
        "threads": a.threads,
        "writes_per_commit": (l.commits.0 as f64 / l.commits.1.max(1) as f64 * 100.0).round() / 100.0,
        "contention": l.contention.map(|(c, duty, used)| json!({"processes": c, "duty": duty, "cores_used": (used * 100.0).round() / 100.0})),
        "duplicates": dups,
        "duplicates_by_method": l.dups.iter().map(|(m, c)| json!({"method": m, "count": c})).collect::<Vec<_>>(),
        "stored": done - dups,
        "learn": {"window": w, "windows": windows, "all": all.json()},
        "recall": {"queries": r.all.len(), "first_ms": (r.first_ms * 1e3).round() / 1e3, "all": overall.json(), "by_mode": modes},
        "hwm_after_learn_kb": hwm_learn,
    })
}

/// One learned memory: its index, the learn time in µs, and (text, id, kind, score) of a duplicate.
type LearnedOne = (usize, u64, Option<(String, i64, &'static str, f64)>);
