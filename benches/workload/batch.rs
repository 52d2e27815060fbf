//! Batch-learn benchmark: the `--batch` mode of the workload bench.
//!
//!     cargo bench --bench workload -- --batch                          # sizes 1k,10k at 10k,100k memories
//!     cargo bench --bench workload -- --batch --sizes 1000 --at 10000,40000 --repeats 3
//!
//! For every stored size N of `--at` a fresh database file (BM25 only) is filled
//! to N memories of the robot corpus (corpus.rs) with `Db::learn_batch` in
//! batches of 1,000; then, for every batch size S of `--sizes`, `--repeats`
//! batches of S new short texts ("batch item i xxxxxx", the shape of issue 26's
//! F8, plus corpus texts) are learned one `learn_batch` call each, and S of the
//! same kind of texts one `Db::learn` at a time for comparison. The stored
//! size grows by the measured batches, so the last batch runs at N + repeats·S.
//!
//! Reports per (N, S): batch wall time p50/p95/max, items per second, and the
//! per-item cost of the batch next to one-by-one learns (a batch must cost what
//! its items cost one by one or less). Last line: JSON starting with
//! `{"bench":"robotmem-batch"`. See docs/BENCHMARKS.md.

use std::path::PathBuf;
use std::time::Instant;

use robotmem::{Db, Durability, LearnRequest, Location, OpenOptions};
use serde_json::{json, Value};

use crate::corpus::Corpus;
use crate::stats::Summary;
use crate::{dur_name, num};

pub const USAGE: &str = "usage: cargo bench --bench workload -- --batch [--sizes 1000,10000]
       [--at 10000,100000] [--repeats N] [--durability full|normal] [--dir DIR]

  --sizes LIST     batch sizes (default 1000,10000)
  --at LIST        memories stored before the measured batches (default 10000,100000)
  --repeats N      measured batches per size (default 5)
  --durability D   full (default) or normal
  --dir DIR        where the temporary database directory is made (default target/tmp)";

struct Args {
    sizes: Vec<usize>,
    at: Vec<usize>,
    repeats: usize,
    durability: Durability,
    dir: Option<PathBuf>,
}

fn list(name: &str, v: String) -> Result<Vec<usize>, String> {
    v.split(',').map(|x| num(name, x.to_string()).map(|n| n as usize)).collect()
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        sizes: vec![1000, 10_000],
        at: vec![10_000, 100_000],
        repeats: 5,
        durability: Durability::Full,
        dir: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--bench" | "--batch" => {}
            "--sizes" => a.sizes = list("--sizes", value("--sizes")?)?,
            "--at" => a.at = list("--at", value("--at")?)?,
            "--repeats" => a.repeats = num("--repeats", value("--repeats")?)?.max(1) as usize,
            "--dir" => a.dir = Some(PathBuf::from(value("--dir")?)),
            "--durability" => {
                a.durability = match value("--durability")?.as_str() {
                    "full" => Durability::Full,
                    "normal" => Durability::Normal,
                    d => return Err(format!("--durability: expected full or normal, got {d}")),
                }
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(a)
}

/// `n` new texts, unique across the whole run (`next` counts them): every other
/// one is the short "batch item i xxxxxx", the rest corpus memories.
fn texts(corpus: &mut Corpus, next: &mut usize, n: usize) -> Vec<(String, Option<String>)> {
    (0..n)
        .map(|_| {
            *next += 1;
            if (*next).is_multiple_of(2) {
                (format!("batch item {} {}", *next, letters(*next)), None)
            } else {
                let m = corpus.next_memory();
                let req = m.request();
                (format!("{} #{}", req.insight, *next), req.context.map(str::to_string))
            }
        })
        .collect()
}

/// A letters-only tag of `i` ("xxxxxx" in the issue): keeps texts apart for the word layer too.
fn letters(mut i: usize) -> String {
    let mut s = String::new();
    for _ in 0..6 {
        s.push((b'a' + (i % 26) as u8) as char);
        i /= 26;
    }
    s
}

fn learn_batch(db: &Db, items: &[(String, Option<String>)]) -> f64 {
    let reqs: Vec<LearnRequest> =
        items.iter().map(|(t, c)| LearnRequest { insight: t, context: c.as_deref(), ..Default::default() }).collect();
    let t = Instant::now();
    let out = db.learn_batch(&reqs).unwrap_or_else(|e| panic!("learn_batch: {e}"));
    assert_eq!(out.len(), items.len());
    t.elapsed().as_secs_f64()
}

struct Row {
    at: usize,
    size: usize,
    batches: Summary,
    items_per_s: f64,
    batch_item_us: f64,
    single_item_us: f64,
}

pub fn main() {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("workload --batch: {e}\n{USAGE}");
        std::process::exit(2);
    });
    let dir = crate::make_dir(args.dir.as_deref(), "robotmem-batch");
    let mut rows = Vec::new();
    for &at in &args.at {
        let path = dir.join(format!("batch-{at}.db"));
        let db = Db::open(OpenOptions {
            location: Location::Path(path.clone()),
            durability: args.durability,
            embeddings: false,
            ..OpenOptions::default()
        })
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
        let mut corpus = Corpus::new(crate::corpus::SEED);
        let mut next = 0usize;
        let t = Instant::now();
        while next < at {
            let want = 1000.min(at - next);
            let items = texts(&mut corpus, &mut next, want);
            learn_batch(&db, &items);
        }
        eprintln!("[batch] {at} memories stored in {:.1} s", t.elapsed().as_secs_f64());
        for &size in &args.sizes {
            let mut ns = Vec::new();
            for _ in 0..args.repeats {
                let items = texts(&mut corpus, &mut next, size);
                ns.push((learn_batch(&db, &items) * 1e9) as u64);
            }
            let singles = texts(&mut corpus, &mut next, size.min(2000));
            let t = Instant::now();
            for (text, ctx) in &singles {
                let req = LearnRequest { insight: text, context: ctx.as_deref(), ..Default::default() };
                db.learn(&req).unwrap_or_else(|e| panic!("learn: {e}"));
            }
            let single_item_us = t.elapsed().as_secs_f64() * 1e6 / singles.len() as f64;
            let batches = Summary::of(&ns);
            let total_s = ns.iter().sum::<u64>() as f64 / 1e9;
            let row = Row {
                at,
                size,
                batches,
                items_per_s: (size * ns.len()) as f64 / total_s,
                batch_item_us: batches.p50 * 1e3 / size as f64,
                single_item_us,
            };
            eprintln!("[batch] at {at}: {size} per batch, p50 {:.1} ms", row.batches.p50);
            rows.push(row);
        }
        drop(db);
    }
    report(&args, &rows);
    crate::finish_dir(&dir, false);
}

fn report(args: &Args, rows: &[Row]) {
    println!(
        "robotmem batch-learn benchmark (durability {}, BM25 only, {} batches per size)",
        dur_name(args.durability),
        args.repeats
    );
    println!(
        "  {:>8} {:>7} {:>10} {:>10} {:>10} {:>11} {:>13} {:>13}",
        "stored", "batch", "p50 ms", "p95 ms", "max ms", "items/s", "µs/item batch", "µs/item single"
    );
    for r in rows {
        println!(
            "  {:>8} {:>7} {:>10.1} {:>10.1} {:>10.1} {:>11.0} {:>13.1} {:>13.1}",
            r.at, r.size, r.batches.p50, r.batches.p95, r.batches.max, r.items_per_s, r.batch_item_us, r.single_item_us
        );
    }
    let json_rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({"stored": r.at, "batch": r.size, "batches": r.batches.json(), "items_per_s": r.items_per_s.round(),
                   "us_per_item_batch": r.batch_item_us, "us_per_item_single": r.single_item_us})
        })
        .collect();
    println!("{}", json!({"bench": "robotmem-batch", "durability": dur_name(args.durability), "rows": json_rows}));
}
