//! Phases open (open() with the model, first and second in a fresh process, and
//! the pieces of a first open) and rss (peak RSS with jieba + model + the corpus);
//! both read fresh child processes (child.rs).

use std::path::Path;

use serde_json::{json, Map, Value};

use super::child;
use super::{section, Args, Report, OPEN_MS, RSS_10K_MIB};
use crate::stats::{header, Summary};

/// The values of `key` (ms) over the child results `runs`, in ns.
fn series(runs: &[Value], key: &str) -> Vec<u64> {
    runs.iter().map(|r| (r[key].as_f64().unwrap_or(0.0) * 1e6) as u64).collect()
}

/// The largest value of `key` over the child results `runs`.
fn max_of(runs: &[Value], key: &str) -> f64 {
    runs.iter().map(|r| r[key].as_f64().unwrap_or(0.0)).fold(0.0, f64::max)
}

/// Prints a summary row of each (key, label) of `rows` over `runs` and records it as `{prefix}{key}`.
fn summary_rows(runs: &[Value], rows: &[(&str, &str)], prefix: &str, j: &mut Map<String, Value>) {
    for (k, label) in rows {
        let s = Summary::of(&series(runs, k));
        println!("{}", s.row(label));
        j.insert(format!("{prefix}{k}"), s.json());
    }
}

pub(super) fn open_phase(a: &Args, dir: &Path, rep: &mut Report) {
    let runs: Vec<Value> = (0..a.open_runs.max(1)).map(|_| child::spawn(a, dir, "open")).collect();
    section(&format!("open with the model ({} fresh processes, embed_threads 2)", runs.len()));
    println!("{}", header());
    let mut j = Map::new();
    summary_rows(
        &runs,
        &[
            ("first_ms", "first open (loads ORT)"),
            ("second_ms", "second open, new file"),
            ("reopen_ms", "reopen existing file"),
            ("model_load_ms", "embed::load alone"),
            ("bm25_open_ms", "open, embeddings off"),
            ("first_recall_ms", "first recall (cold)"),
            ("second_recall_ms", "first recall, 2nd db"),
        ],
        "",
        &mut j,
    );
    let splits: Vec<Value> = (0..a.open_runs.max(1)).map(|_| child::spawn(a, dir, "open-split")).collect();
    println!("  pieces of a first open ({} more fresh processes, each piece timed alone):", splits.len());
    summary_rows(
        &splits,
        &[
            ("ort_env_ms", "  ORT library + env"),
            ("read_model_ms", "  read model.onnx"),
            ("sha256_model_ms", "  sha256 of model.onnx"),
            ("tokenizer_parse_ms", "  parse tokenizer.json"),
            ("embed_load_ms", "  embed::load (all)"),
            ("db_open_after_env_ms", "  Db::open, ORT loaded"),
        ],
        "split_",
        &mut j,
    );
    let rss_after = max_of(&runs, "rss_after_first_open_mib");
    let rss_before = max_of(&runs, "rss_before_mib");
    println!("  RSS before open {rss_before:.1} MiB, after the first open {rss_after:.1} MiB");
    j.insert("rss_after_first_open_mib".into(), json!(rss_after));
    let first = Summary::of(&series(&runs, "first_ms"));
    let second = Summary::of(&series(&runs, "second_ms"));
    rep.target(format!("open() with model <= {OPEN_MS} ms, first in process (p50)"), first.p50, first.p50 <= OPEN_MS);
    rep.target(
        format!("open() with model <= {OPEN_MS} ms, second in process (p50)"),
        second.p50,
        second.p50 <= OPEN_MS,
    );
    rep.json.insert("open".into(), Value::Object(j));
}

pub(super) fn rss_phase(a: &Args, dir: &Path, rep: &mut Report) {
    section(&format!(
        "peak RSS, fresh process: open (preload: jieba + index) + {} learns + {} recalls",
        a.memories,
        a.samples + a.warmup
    ));
    println!("  {:<26} {:>9} {:>9} {:>9} {:>9} {:>9}", "", "open", "corpus", "learned", "peak end", "RSS end");
    let mut j = Map::new();
    for (what, label) in [
        ("rss-single", "model, learn one by one"),
        ("rss-batch", "model, learn_batch"),
        ("rss-bm25", "no model (BM25 only)"),
    ] {
        let r = child::spawn(a, dir, what);
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
