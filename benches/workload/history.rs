//! `--history FILE`: the cost of a view as of a past time (`Db::as_of`) on a
//! database the bench made before (`--keep`; the file is changed: 1 % of its
//! memories are updated and 1 % forgotten after the time the views show). Prints
//! the view's build time, its first recall and the recall mix on it (p50 / p95),
//! and the process RSS before and after.
//!
//!     cargo bench --bench workload -- --history DIR/normal.db --recalls 200

use std::path::Path;
use std::time::Instant;

use robotmem::{Db, Durability, ListRequest, Location, MemoryStatus, OpenOptions};
use serde_json::json;

use crate::corpus;
use crate::stats::{header, mib, proc_status_kb, Summary};

/// Views built to time the build.
const BUILDS: usize = 3;

pub fn run(file: &Path, recalls: usize, warmup: usize, seed: u64) {
    let opts = OpenOptions {
        location: Location::Path(file.to_path_buf()),
        durability: Durability::Normal,
        ..OpenOptions::default()
    };
    let db = Db::open(opts).unwrap_or_else(|e| panic!("open {}: {e}", file.display()));
    let active = db.stats().map(|s| s.active).unwrap_or(0);
    // The time the views show, then changes after it.
    std::thread::sleep(std::time::Duration::from_millis(5));
    let at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    std::thread::sleep(std::time::Duration::from_millis(5));
    let page =
        db.list(&ListRequest { status: Some(MemoryStatus::Active), limit: 500, ..Default::default() }).expect("list");
    let changed = ((active / 100) as usize).clamp(1, page.memories.len() / 2);
    for (i, m) in page.memories.iter().take(2 * changed).enumerate() {
        if i % 2 == 0 {
            let text = format!("{} (revised {i})", m.content.chars().take(280).collect::<String>());
            db.update(m.id, &text, None).expect("update");
        } else {
            db.forget(m.id, "history bench").expect("forget");
        }
    }
    let rss_before = proc_status_kb("VmRSS");
    let mut builds = Vec::new();
    let mut view = None;
    for _ in 0..BUILDS {
        drop(view.take());
        let t = Instant::now();
        view = Some(db.as_of(&at).expect("as_of"));
        builds.push(t.elapsed().as_nanos() as u64);
    }
    let view = view.expect("a view");
    let rss_view = proc_status_kb("VmRSS");
    let mut lat = Vec::new();
    let mut first_ms = None;
    for (i, q) in corpus::queries(warmup + recalls, seed).iter().enumerate() {
        let t = Instant::now();
        view.recall(&q.request()).unwrap_or_else(|e| panic!("recall {:?}: {e}", q.text));
        let dt = t.elapsed().as_nanos() as u64;
        first_ms.get_or_insert(dt as f64 / 1e6);
        if i >= warmup {
            lat.push(dt);
        }
    }
    let peak = proc_status_kb("VmHWM");
    let build = Summary::of(&builds);
    let mix = Summary::of(&lat);
    println!("robotmem workload benchmark, --history (robotmem {})", robotmem::VERSION);
    println!(
        "file {} ({active} active memories; {changed} updated and {changed} forgotten after the view's time)",
        file.display()
    );
    println!("  view build (as_of), {BUILDS} builds: p50 {:.1} ms, max {:.1} ms", build.p50, build.max);
    println!("  first recall on the view {:.1} ms", first_ms.unwrap_or(0.0));
    println!();
    println!("== recall mix on the view (n=5) ==");
    println!("{}", header());
    println!("{}", mix.row("overall"));
    println!();
    println!("== memory (process) ==");
    println!("  {:<30} {:>8.1} MiB", "RSS before the views", mib(rss_before));
    println!("  {:<30} {:>8.1} MiB", "RSS with a view", mib(rss_view));
    println!("  {:<30} {:>8.1} MiB", "peak RSS (VmHWM)", mib(peak));
    let line = json!({"bench": "robotmem-workload-history", "version": robotmem::VERSION, "memories": active,
        "changed": changed, "build": build.json(), "first_recall_ms": first_ms, "recall": mix.json(),
        "rss_before_kb": rss_before, "rss_view_kb": rss_view, "peak_rss_kb": peak});
    println!();
    println!("{line}");
}
