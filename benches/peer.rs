//! Side-by-side benchmark with the Python original (robotmem 0.1.3 from PyPI):
//! the robotmem side. scripts/peer-bench.sh drives both; see docs/BENCHMARKS-peer.md.
//!
//!     cargo bench --bench peer -- --emit OPS.jsonl [--corpus robot|squad|cmrc] [--memories N]
//!                                 [--recalls N] [--warmup N] [--seed N]
//!     cargo bench --bench peer -- --replay OPS.jsonl --db FILE [--durability normal|full]
//!                                 [--phase all|learn|recall] [--ranked FILE]
//!     cargo bench --bench peer -- --smoke
//!
//! `--emit` writes one deterministic operation file (JSON Lines): a meta line, the
//! learns (text, context JSON, the corpus key of the text), then the recalls (query,
//! n, context_filter, spatial_sort, gold keys for the real-text questions; the first
//! `--warmup` ones are warm-up). The robot corpus and its query mix come from
//! workload/corpus.rs (as `cargo bench --bench workload`), the real text from
//! ../shared/data through tests/devsets/load.rs and workload/realtext/texts.rs (as
//! `--real-text`), so the file holds exactly what the workload bench sends.
//!
//! `--replay` sends the file to `robotmem::Db` (embeddings off) one call at a time,
//! timing each call with `Instant` (the file is parsed before the clock starts), and
//! prints per-kind p50/p95/p99, throughput, peak RSS (VmHWM) and, last, one JSON line
//! starting with `{"bench":"peer-replay"` — the same shape as scripts/peer_bench.py
//! prints for the Python original. `--smoke` emits a tiny file and replays it.

#[allow(dead_code)]
#[path = "workload/corpus.rs"]
mod corpus;
#[path = "../tests/devsets/load.rs"]
mod load;
#[path = "peer/replay.rs"]
mod replay;
#[allow(dead_code)]
#[path = "workload/stats.rs"]
mod stats;
#[allow(dead_code)]
#[path = "workload/realtext/texts.rs"]
mod texts;

use std::io::Write;
use std::path::{Path, PathBuf};

use robotmem::Durability;
use serde_json::{json, Value};

const USAGE: &str = "usage: cargo bench --bench peer -- --emit FILE [--corpus robot|squad|cmrc] [--memories N]
                                          [--recalls N] [--warmup N] [--seed N]
       cargo bench --bench peer -- --replay FILE --db FILE [--durability normal|full]
                                          [--phase all|learn|recall] [--ranked FILE]
       cargo bench --bench peer -- --smoke

  --emit FILE       write the operation file (JSON Lines) and exit
  --corpus C        robot (workload/corpus.rs, default), squad or cmrc (../shared/data,
                    or $ROBOTMEM_DEVSETS; repeated in suffixed passes above its size)
  --memories N      learns (default 10000)
  --recalls N       measured recalls (default 400 robot, 2000 real text; capped at the
                    number of questions)
  --warmup N        unmeasured recalls before them (default 20)
  --seed N          corpus / query-mix / question-sample seed (default fixed)
  --replay FILE     send the operation file to robotmem::Db (embeddings off)
  --db FILE         the database file (its directory must exist); with --phase all or
                    learn it must not exist yet
  --durability D    normal (default: WAL + synchronous=NORMAL, what the Python original
                    sets) or full (synchronous=FULL, robotmem's default)
  --phase P         all (default), learn (only the learns) or recall (only the recalls,
                    on a database a learn phase made)
  --ranked FILE     write the ranked learn ordinals of every measured recall (JSON Lines)
  --smoke           emit a tiny robot file (and a squad one when the sets are there),
                    replay it and check that it stored and found something";

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if argv.iter().any(|a| a == "-h" || a == "--help") || argv.is_empty() {
        println!("{USAGE}");
        return;
    }
    let result = if argv.iter().any(|a| a == "--smoke") {
        smoke()
    } else if argv.iter().any(|a| a == "--emit") {
        parse_emit(&argv).and_then(|e| emit(&e).map(|_| ()))
    } else {
        replay::parse(&argv).and_then(|r| replay::run(&r).map(|_| ()))
    };
    if let Err(e) = result {
        eprintln!("peer: {e}\n{USAGE}");
        std::process::exit(2);
    }
}

/// The number `v` of option `name` (`_` separators allowed).
pub fn num(name: &str, v: Option<&String>) -> Result<u64, String> {
    let v = v.ok_or_else(|| format!("{name} needs a value"))?;
    v.replace('_', "").parse::<u64>().map_err(|_| format!("{name}: not a number: {v}"))
}

pub struct Emit {
    out: PathBuf,
    corpus: String,
    memories: usize,
    recalls: Option<usize>,
    warmup: usize,
    seed: u64,
}

fn parse_emit(argv: &[String]) -> Result<Emit, String> {
    let mut e = Emit {
        out: PathBuf::new(),
        corpus: "robot".into(),
        memories: 10_000,
        recalls: None,
        warmup: 20,
        seed: corpus::SEED,
    };
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--emit" => e.out = PathBuf::from(it.next().ok_or("--emit needs a file")?),
            "--corpus" => e.corpus = it.next().ok_or("--corpus needs a value")?.clone(),
            "--memories" => e.memories = num(a, it.next())? as usize,
            "--recalls" => e.recalls = Some(num(a, it.next())? as usize),
            "--warmup" => e.warmup = num(a, it.next())? as usize,
            "--seed" => e.seed = num(a, it.next())?,
            other => return Err(format!("unknown argument {other:?} for --emit")),
        }
    }
    if !["robot", "squad", "cmrc"].contains(&e.corpus.as_str()) {
        return Err(format!("--corpus: expected robot, squad or cmrc, got {}", e.corpus));
    }
    if e.memories == 0 {
        return Err("--memories must be at least 1".into());
    }
    Ok(e)
}

/// Writes the operation file of `e`; returns (learns, recalls) written.
fn emit(e: &Emit) -> Result<(usize, usize), String> {
    let file = std::fs::File::create(&e.out).map_err(|x| format!("{}: {x}", e.out.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let mut line = |v: Value| writeln!(w, "{v}").map_err(|x| format!("{}: {x}", e.out.display()));
    let (mut learns, mut recalls) = (0, 0);
    if e.corpus == "robot" {
        let count = e.recalls.unwrap_or(400);
        line(json!({"type": "meta", "corpus": "robot", "memories": e.memories, "recalls": count,
                    "warmup": e.warmup, "seed": e.seed, "n": 5,
                    "source": "benches/workload/corpus.rs (Corpus::next_memory, queries)"}))?;
        let mut c = corpus::Corpus::new(e.seed);
        for i in 0..e.memories {
            let m = c.next_memory();
            line(json!({"op": "learn", "key": i, "text": m.insight, "context": m.context, "zh": m.chinese}))?;
            learns += 1;
        }
        for (i, q) in corpus::queries(e.warmup + count, e.seed).iter().enumerate() {
            line(json!({"op": "recall", "kind": q.kind.name(), "query": q.text, "n": 5, "filter": q.filter,
                        "spatial": q.spatial, "zh": q.chinese, "warmup": i < e.warmup}))?;
            recalls += 1;
        }
    } else {
        let set = load::load(&e.corpus)?;
        let corpus: Vec<String> = set.memories.iter().map(|m| m.text.clone()).collect();
        let mut t = texts::Texts::new(&corpus, e.memories);
        let gold = set.gold_indexes();
        let mut order: Vec<usize> = (0..set.queries.len()).collect();
        let mut r = corpus::Rng::new(e.seed);
        for i in (1..order.len()).rev() {
            order.swap(i, (r.next_u64() % (i as u64 + 1)) as usize);
        }
        // Only questions whose gold sentence is learned (all of them from one full pass on).
        order.retain(|&qi| gold[qi].iter().any(|&g| g < e.memories));
        let answerable = order.len();
        order.truncate((e.warmup + e.recalls.unwrap_or(2000)).min(order.len()));
        let zh = e.corpus == "cmrc";
        line(json!({"type": "meta", "corpus": e.corpus, "memories": e.memories,
                    "recalls": order.len().saturating_sub(e.warmup), "warmup": e.warmup.min(order.len()),
                    "seed": e.seed, "n": 10, "corpus_size": corpus.len(), "questions": set.queries.len(),
                    "answerable_questions": answerable,
                    "repeat": t.describe(), "source": format!("{} via tests/devsets/load.rs", set.path.display())}))?;
        for i in 0..e.memories {
            line(json!({"op": "learn", "key": i % corpus.len(), "text": t.text(i), "zh": zh}))?;
            learns += 1;
        }
        for (j, &qi) in order.iter().enumerate() {
            line(json!({"op": "recall", "kind": "question", "query": set.queries[qi].question, "n": 10,
                        "gold": gold[qi], "zh": zh, "warmup": j < e.warmup}))?;
            recalls += 1;
        }
    }
    w.flush().map_err(|x| format!("{}: {x}", e.out.display()))?;
    eprintln!("peer: wrote {learns} learns and {recalls} recalls to {}", e.out.display());
    Ok((learns, recalls))
}

/// A tiny end-to-end run of emit + replay (robot; squad too when the sets exist).
fn smoke() -> Result<(), String> {
    let base = PathBuf::from(option_env!("CARGO_TARGET_TMPDIR").unwrap_or("target/tmp"));
    let dir = base.join(format!("peer-smoke-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let result = smoke_in(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    println!("peer smoke: passed");
    Ok(())
}

fn smoke_in(dir: &Path) -> Result<(), String> {
    let mut corpora = vec!["robot"];
    if load::path("squad").is_ok_and(|p| p.exists()) {
        corpora.push("squad");
    } else {
        println!("peer smoke: no squad set in {} (skipped)", load::dir().display());
    }
    for c in corpora {
        let ops = dir.join(format!("{c}.jsonl"));
        let e = Emit {
            out: ops.clone(),
            corpus: c.into(),
            memories: 300,
            recalls: Some(40),
            warmup: 4,
            seed: corpus::SEED,
        };
        let (learns, recalls) = emit(&e)?;
        if learns != 300 || recalls != 44 {
            return Err(format!("smoke {c}: emitted {learns} learns and {recalls} recalls"));
        }
        let r = replay::Replay {
            ops,
            db: dir.join(format!("{c}.db")),
            durability: Durability::Normal,
            phase: replay::Phase::All,
            ranked: Some(dir.join(format!("{c}-ranked.jsonl"))),
        };
        let out = replay::run(&r)?;
        let stored = out["learn"]["stored"].as_u64().unwrap_or(0);
        let hits: f64 = out["recall"]["all"]["avg_hits"].as_f64().unwrap_or(0.0);
        if stored == 0 || hits <= 0.0 {
            return Err(format!("smoke {c}: stored {stored}, avg hits {hits}"));
        }
        if c == "squad" && out["recall"]["question"]["gold_hits"].as_u64().unwrap_or(0) == 0 {
            return Err("smoke squad: no question found its gold sentence".into());
        }
    }
    Ok(())
}
