//! Grouped recall (`RecallRequest::group_similar`) measured on the robot dev set
//! with repeats, and its guarantees through the engine.
//!
//! A robot logs the same kind of event again and again with other readings
//! ("base-01 could not dock at station 3 at 14:02 …", then at station 1 at
//! 09:40 …). The dev set (tests/data/robot_devset.json) has no such repeats, so
//! this test adds them the way a robot writes them: a fixed, seeded 30 % of the
//! memories get 1–5 repeats each, every number in the text changed (a text
//! without numbers gets "Seen again on shift k." / "第k班再次出现。"). A repeat is
//! the same *fact* as its original. Every query is recalled with n = 10 with and
//! without grouping, on the hybrid handle and on a BM25-only one, and scored by
//! fact: MRR@10 (first hit of a target fact) and the number of distinct facts in
//! the top 10. Fails when grouping makes MRR worse beyond noise, does not raise
//! the distinct facts, or folds two different facts into one hit.

#[path = "devsets/metrics.rs"]
mod metrics;
mod model;
#[path = "common/rng.rs"]
mod rng;
#[path = "common/scratch.rs"]
mod scratch;

use std::collections::{HashMap, HashSet};

use metrics::{mean, metrics, paired_ci, rr10};
use robotmem::*;
use serde_json::Value;

/// The text with every number replaced by another (`k` picks which), or with a
/// "seen again" sentence when it has none.
fn repeat_of(text: &str, zh: bool, k: usize, rng: &mut rng::Rng) -> String {
    let mut out = String::with_capacity(text.len() + 24);
    let mut changed = false;
    let mut digits = String::new();
    let flush = |digits: &mut String, out: &mut String, rng: &mut rng::Rng| {
        if !digits.is_empty() {
            let v: u64 = digits.parse().unwrap_or(0);
            out.push_str(&(v + 1 + rng.below(9) as u64 + k as u64).to_string());
            digits.clear();
        }
    };
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            changed = true;
        } else {
            flush(&mut digits, &mut out, rng);
            out.push(c);
        }
    }
    flush(&mut digits, &mut out, rng);
    if !changed {
        if zh {
            out.push_str(&format!("第{}班再次出现。", k + 1));
        } else {
            out.push_str(&format!(" Seen again on shift {}.", k + 1));
        }
    }
    out
}

struct Run {
    /// First rank of a target fact, per query.
    first: Vec<Option<usize>>,
    /// Distinct facts in the top 10, per query.
    distinct: Vec<f64>,
    /// Hits whose similar ids hold another fact.
    cross_fact: usize,
    hits: usize,
}

fn evaluate(m: &model::Model) {
    let data: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/robot_devset.json")).unwrap(),
    )
    .unwrap();
    let tag = m.dir.file_name().unwrap().to_string_lossy().into_owned();
    let dir = scratch::Scratch::new("grouping");
    let hybrid = Db::open(m.options(dir.db())).unwrap();
    let bm25 = Db::open(OpenOptions { embeddings: false, ..m.options(dir.db()) }).unwrap();

    // (text, context, fact) for every memory and repeat
    let mems = data["memories"].as_array().unwrap();
    let mut rng = rng::Rng(25);
    let mut rows: Vec<(String, String, String)> = Vec::new();
    for x in mems {
        let (fact, text) = (x["id"].as_str().unwrap().to_string(), x["text"].as_str().unwrap());
        let zh = x["lang"] == "zh";
        rows.push((text.to_string(), x["context"].to_string(), fact.clone()));
        if rng.unit() < 0.3 {
            for k in 0..1 + rng.below(5) {
                let t = repeat_of(text, zh, k, &mut rng);
                if t.chars().count() <= 300 {
                    rows.push((t, x["context"].to_string(), fact.clone()));
                }
            }
        }
    }
    let reqs: Vec<LearnRequest> =
        rows.iter().map(|(t, c, _)| LearnRequest { insight: t, context: Some(c), ..Default::default() }).collect();
    let mut fact_of: HashMap<i64, String> = HashMap::new();
    let mut dups = 0;
    for (row, o) in rows.iter().zip(hybrid.learn_batch(&reqs).unwrap()) {
        dups += o.duplicate.is_some() as usize;
        fact_of.entry(o.memory_id).or_insert_with(|| row.2.clone());
    }

    let queries = data["queries"].as_array().unwrap();
    let run = |db: &Db, group: bool| -> Run {
        let mut r = Run { first: Vec::new(), distinct: Vec::new(), cross_fact: 0, hits: 0 };
        for q in queries {
            let targets: HashSet<&str> = q["targets"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
            let req = RecallRequest {
                query: q["query"].as_str().unwrap(),
                n: 10,
                group_similar: group,
                ..Default::default()
            };
            let res = db.recall(&req).unwrap();
            let facts: Vec<&str> = res.hits.iter().map(|h| fact_of[&h.memory.id].as_str()).collect();
            r.first.push(facts.iter().position(|f| targets.contains(f)));
            r.distinct.push(facts.iter().collect::<HashSet<_>>().len() as f64);
            for h in &res.hits {
                r.hits += 1;
                let own = &fact_of[&h.memory.id];
                r.cross_fact += h.similar.iter().any(|id| &fact_of[id] != own) as usize;
                assert!(group || h.similar.is_empty(), "similar ids without group_similar");
            }
        }
        r
    };

    println!(
        "\ngrouped recall, robot devset with repeats, {tag}: {} memories ({} repeats, {dups} merged as duplicates), {} queries, n = 10",
        rows.len(),
        rows.len() - mems.len(),
        queries.len()
    );
    println!("handle  | plain R@1  R@5   R@10  MRR   facts/10 | grouped R@1 R@5  R@10  MRR   facts/10 | dMRR [95% CI]            | merged other facts");
    let mut fails = Vec::new();
    for (name, db) in [("bm25", &bm25), ("hybrid", &hybrid)] {
        let (plain, grouped) = (run(db, false), run(db, true));
        let (mp, mg) = (metrics(&plain.first), metrics(&grouped.first));
        let dm = paired_ci(&rr10(&grouped.first), &rr10(&plain.first));
        let (fp, fg) = (mean(&plain.distinct), mean(&grouped.distinct));
        println!(
            "{name:7} | {:.3}  {:.3}  {:.3}  {:.3}  {fp:.2}     | {:.3}  {:.3}  {:.3}  {:.3}  {fg:.2}     | {:+.4} [{:+.4}, {:+.4}] | {} of {} hits",
            mp[0], mp[1], mp[2], mp[3], mg[0], mg[1], mg[2], mg[3], dm.0, dm.1, dm.2, grouped.cross_fact, grouped.hits
        );
        if dm.2 < 0.0 {
            fails.push(format!("{name}: grouping made MRR worse beyond noise"));
        }
        if fg <= fp {
            fails.push(format!("{name}: grouping did not raise the distinct facts in the top 10 ({fp:.2} → {fg:.2})"));
        }
        if grouped.cross_fact > 0 {
            fails.push(format!("{name}: {} hits folded another fact into them", grouped.cross_fact));
        }
    }
    assert!(fails.is_empty(), "{tag}: {}", fails.join("; "));
}

#[test]
fn grouping_on_robot_repeats_default_model() {
    let Some(m) = model::default_model("grouped recall on robot repeats (default model)") else { return };
    evaluate(&m);
}

#[test]
fn grouping_on_robot_repeats_english_model() {
    let Some(m) = model::english("grouped recall on robot repeats (English model)") else { return };
    evaluate(&m);
}
