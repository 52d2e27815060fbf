//! `--reuse FILE`: the recall mix on a database the bench made before (`--keep`),
//! in a fresh process that only opens and recalls — the cold-start RSS of a robot
//! that restarts, and a quick way to compare builds on one large file. Prints the
//! mix by kind and each context_filter on its own row.
//!
//!     cargo bench --bench workload -- --reuse DIR/normal.db --recalls 800 --warmup 20 [--kinds filter,spatial]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use robotmem::{Db, Durability, Location, OpenOptions};
use serde_json::{json, Map, Value};

use crate::corpus::{self, Kind};
use crate::stats::{header, mib, proc_status_kb, Summary};

pub fn run(file: &Path, recalls: usize, warmup: usize, seed: u64, kinds: &[String]) {
    let t = Instant::now();
    let opts = OpenOptions {
        location: Location::Path(file.to_path_buf()),
        durability: Durability::Normal,
        ..OpenOptions::default()
    };
    let db = Db::open(opts).unwrap_or_else(|e| panic!("open {}: {e}", file.display()));
    let open_ms = t.elapsed().as_secs_f64() * 1e3;
    let rss_open = proc_status_kb("VmRSS");
    let mut by_kind: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    let mut by_filter: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut all = Vec::new();
    let mut first_ms = None;
    let mut hwm_steps = Vec::new();
    let wanted = |k: Kind| kinds.is_empty() || kinds.iter().any(|x| x == k.name());
    let queries: Vec<_> =
        corpus::queries(4 * (warmup + recalls), seed).into_iter().filter(|q| wanted(q.kind)).collect();
    for (i, q) in queries.iter().take(warmup + recalls).enumerate() {
        if i.is_power_of_two() {
            hwm_steps.push((i, proc_status_kb("VmHWM")));
        }
        let t = Instant::now();
        db.recall(&q.request()).unwrap_or_else(|e| panic!("recall {:?}: {e}", q.text));
        let dt = t.elapsed().as_nanos() as u64;
        first_ms.get_or_insert(dt as f64 / 1e6);
        if i < warmup {
            continue;
        }
        all.push(dt);
        by_kind.entry(q.kind.name()).or_default().push(dt);
        if q.kind == Kind::Filter {
            by_filter.entry(q.filter.clone().unwrap_or_default()).or_default().push(dt);
        }
    }
    let peak = proc_status_kb("VmHWM");
    let stats = db.stats().map(|s| s.active).unwrap_or(0);
    println!("robotmem workload benchmark, --reuse (robotmem {})", robotmem::VERSION);
    println!(
        "file {} ({stats} active memories), recalls {recalls} (+{warmup} warm-up), seed {seed:#x}",
        file.display()
    );
    println!("  open {open_ms:.1} ms, first recall {:.1} ms", first_ms.unwrap_or(0.0));
    println!();
    println!("== recall (n=5) ==");
    println!("{}", header());
    let mut j = Map::new();
    for (kind, lat) in &by_kind {
        println!("{}", Summary::of(lat).row(kind));
        j.insert(kind.to_string(), Summary::of(lat).json());
    }
    println!("{}", Summary::of(&all).row("overall"));
    j.insert("overall".into(), Summary::of(&all).json());
    println!("  by context_filter:");
    let mut f = Map::new();
    for (filter, lat) in &by_filter {
        println!("{}", Summary::of(lat).row(&format!("  {}", short(filter))));
        f.insert(filter.clone(), Summary::of(lat).json());
    }
    drop(db);
    // The close stores the indexes the recalls built when the file had none.
    let closed = proc_status_kb("VmHWM");
    println!();
    println!("== memory (process) ==");
    println!("  {:<30} {:>8.1} MiB", "RSS after open (VmRSS)", mib(rss_open));
    println!("  {:<30} {:>8.1} MiB", "peak RSS (VmHWM)", mib(peak));
    println!("  {:<30} {:>8.1} MiB", "peak RSS after the close", mib(closed));
    let steps: Vec<String> = hwm_steps.iter().map(|(i, kb)| format!("{i}: {:.0}", mib(*kb))).collect();
    println!("  peak RSS before recall i (MiB): {}", steps.join(", "));
    if let Some((filter_p95, rss)) = crate::goals::bm25(stats as usize) {
        let filter = by_kind.get(Kind::Filter.name()).map_or(f64::NAN, |l| Summary::of(l).p95);
        println!();
        println!("== targets ==");
        for (what, value, limit, unit) in [
            (format!("context_filter recall p95 at {stats}"), filter, filter_p95, "ms"),
            ("peak RSS (a fresh process: opened, recalled, closed)".to_string(), mib(closed), rss, "MiB"),
        ] {
            let what = crate::goals::label(&what, limit, unit);
            println!("  {what:<52} {value:>8.3}  {}", crate::verdict(value <= limit));
        }
    }
    let line = json!({"bench": "robotmem-workload-reuse", "version": robotmem::VERSION, "memories": stats,
        "open_ms": open_ms, "recall": Value::Object(j), "by_filter": Value::Object(f),
        "rss_after_open_kb": rss_open, "peak_rss_kb": peak, "peak_rss_after_close_kb": closed});
    println!();
    println!("{line}");
}

/// A filter shortened to fit the row label.
fn short(filter: &str) -> String {
    let s: String = filter.chars().filter(|c| !c.is_whitespace() && *c != '"').collect();
    match s.chars().count() > 24 {
        true => s.chars().take(23).collect::<String>() + "…",
        false => s,
    }
}
