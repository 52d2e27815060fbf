//! Retrieval quality on robot memories: tests/data/robot_devset.json (420
//! memories, 30 % Chinese; 484 queries — paraphrase, keyword, cross-lingual EN↔ZH
//! and mixed; tests/data/robot_devset.md). Development data: the fusion settings
//! are tuned on it (with ../shared/data), so it is not a held-out result.
//!
//! Every memory is learned with its context into a fresh file; every query is
//! recalled with n = 10 on a BM25-only handle and on a hybrid handle of the
//! same file. Prints R@1/5/10 and MRR@10 per kind and query language with the
//! paired bootstrap 95 % CI of hybrid − bm25_only, and fails when hybrid is worse
//! beyond noise on any kind (the CI's upper bound below 0), or is not better
//! beyond noise on English paraphrases (and, for a multilingual model, on Chinese
//! paraphrases and cross-lingual queries).
//!
//! `ROBOTMEM_FUSION_DUMP=DIR` writes fusion tuning dumps (tests/devsets/tune.rs).

#[path = "devsets/metrics.rs"]
mod metrics;
mod model;
#[path = "common/rng.rs"]
mod rng;
#[path = "common/scratch.rs"]
mod scratch;
#[path = "devsets/tune.rs"]
mod tune;

use std::collections::{BTreeMap, HashMap};

use metrics::{hit_at, metrics, paired_ci, rr10};
use robotmem::*;
use serde_json::Value;

/// Per group (kind, language): (first gold rank with BM25, with hybrid) per query.
type Table = BTreeMap<(String, String), (Vec<Option<usize>>, Vec<Option<usize>>)>;

fn first_gold(r: &RecallResult, gold: &dyn Fn(i64) -> bool) -> Option<usize> {
    r.hits.iter().position(|h| gold(h.memory.id))
}

fn evaluate(m: &model::Model, multilingual: bool) {
    let data: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/robot_devset.json")).unwrap(),
    )
    .unwrap();
    let tag = m.dir.file_name().unwrap().to_string_lossy().into_owned();
    let dir = scratch::Scratch::new("robotset");
    let hybrid = Db::open(m.options(dir.db())).unwrap();
    assert_eq!(hybrid.embedding_status().unwrap().state, EmbeddingState::Ready);
    let bm25 = Db::open(OpenOptions { embeddings: false, ..m.options(dir.db()) }).unwrap();

    let mems = data["memories"].as_array().unwrap();
    let ctx: Vec<String> = mems.iter().map(|x| x["context"].to_string()).collect();
    let reqs: Vec<LearnRequest> = mems
        .iter()
        .zip(&ctx)
        .map(|(x, c)| LearnRequest { insight: x["text"].as_str().unwrap(), context: Some(c), ..Default::default() })
        .collect();
    // dataset id → robotmem id (a merged duplicate stands for its dataset memory)
    let mut id: HashMap<String, i64> = HashMap::new();
    let mut dups = 0;
    for (x, o) in mems.iter().zip(hybrid.learn_batch(&reqs).unwrap()) {
        id.insert(x["id"].as_str().unwrap().to_string(), o.memory_id);
        dups += o.duplicate.is_some() as usize;
    }
    let mut tuner = tune::dir().map(|_| tune::Tuner::open(&m.options(dir.db()), &format!("robot-{tag}.jsonl"), false));
    let mut table = Table::new();
    let mut embedded = 0;
    let queries = data["queries"].as_array().unwrap();
    for q in queries {
        let text = q["query"].as_str().unwrap();
        let targets: Vec<i64> = q["targets"].as_array().unwrap().iter().map(|t| id[t.as_str().unwrap()]).collect();
        let gold = |m: i64| targets.contains(&m);
        let kind = q["kind"].as_str().unwrap().to_string();
        let lang = q["lang"].as_str().unwrap().to_string();
        if let Some(t) = &mut tuner {
            t.dump(q["id"].as_str().unwrap(), &format!("{kind}-{lang}"), text, gold);
        }
        let req = RecallRequest { query: text, n: 10, ..Default::default() };
        let (b, h) = (bm25.recall(&req).unwrap(), hybrid.recall(&req).unwrap());
        embedded += (h.query_vector == QueryVector::Embedded) as usize;
        let e = table.entry((kind, lang)).or_default();
        e.0.push(first_gold(&b, &gold));
        e.1.push(first_gold(&h, &gold));
    }
    drop((hybrid, bm25, tuner));

    println!(
        "\nrobot devset, {tag}: {} memories ({dups} duplicates), {} queries ({embedded} embedded), n = 10",
        mems.len(),
        queries.len()
    );
    println!("kind         lang queries | bm25 R@1  R@5    R@10   MRR    | hybrid R@1 R@5  R@10   MRR    | dR@10 [95% CI]            dMRR [95% CI]");
    let mut fails = Vec::new();
    for ((kind, lang), (b, h)) in &table {
        let (mb, mh) = (metrics(b), metrics(h));
        let d10 = paired_ci(&hit_at(h, 10), &hit_at(b, 10));
        let dm = paired_ci(&rr10(h), &rr10(b));
        println!(
            "{kind:12} {lang:4} {:7} | {:.3}  {:.3}  {:.3}  {:.3}  | {:.3}  {:.3}  {:.3}  {:.3}  | {:+.3} [{:+.3}, {:+.3}]  {:+.3} [{:+.3}, {:+.3}]",
            b.len(), mb[0], mb[1], mb[2], mb[3], mh[0], mh[1], mh[2], mh[3], d10.0, d10.1, d10.2, dm.0, dm.1, dm.2
        );
        if d10.2 < 0.0 || dm.2 < 0.0 {
            fails.push(format!("{kind}/{lang}: hybrid worse than BM25 beyond noise"));
        }
        let must_gain =
            (kind == "paraphrase" && (lang == "en" || multilingual)) || (kind == "crosslingual" && multilingual);
        if must_gain && dm.1 <= 0.0 {
            fails.push(format!(
                "{kind}/{lang}: hybrid not better than BM25 beyond noise (MRR CI [{:+.3}, {:+.3}])",
                dm.1, dm.2
            ));
        }
    }
    assert!(fails.is_empty(), "{tag}: {}", fails.join("; "));
}

#[test]
fn robot_devset_english_model() {
    let Some(m) = model::english("robot devset (English model)") else { return };
    evaluate(&m, false);
}

#[test]
fn robot_devset_default_model() {
    let Some(m) = model::default_model("robot devset (default model, multilingual)") else { return };
    evaluate(&m, true);
}

/// The model named by `ROBOTMEM_DEVSETS_MODEL` (a directory under the test
/// models), for evaluating candidates; a no-op when unset.
#[test]
fn robot_devset_named_model() {
    let Ok(name) = std::env::var("ROBOTMEM_DEVSETS_MODEL") else { return };
    let Some(m) = model::named("robot devset (named model)", &name) else { return };
    evaluate(&m, name.contains("multilingual") || name.contains("e5"));
}
