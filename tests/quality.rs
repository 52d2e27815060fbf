//! Paraphrase quality: on queries that reword one intended memory (English, and
//! Chinese queries against Chinese memories; tests/data/paraphrase_quality.json),
//! how often is the intended memory in the top 3 — hybrid (BM25 + vectors, RRF)
//! against BM25 alone on the same file — with the default, multilingual model
//! (USE) and with the English option (MiniLM). Prints the tables recorded in docs/BENCHMARKS.md.

mod model;
#[path = "devsets/tune.rs"]
mod tune;

#[path = "common/scratch.rs"]
mod scratch;
use std::collections::{BTreeMap, HashMap};

use robotmem::*;
use serde_json::Value;

#[derive(Default)]
struct Tally {
    hybrid: usize,
    bm25: usize,
    total: usize,
}

/// Top-3 hits per language: (hybrid, bm25), and which memories got a vector.
fn evaluate(m: &model::Model, tag: &str) -> (BTreeMap<String, (usize, usize)>, HashMap<String, bool>) {
    let data: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/paraphrase_quality.json")).unwrap(),
    )
    .unwrap();
    let dir = scratch::Scratch::new(&format!("quality-{tag}"));
    let path = dir.join("q.db");
    let hybrid = Db::open(m.options(&path)).unwrap();
    let status = hybrid.embedding_status().unwrap();
    assert_eq!(status.state, EmbeddingState::Ready, "{}", status.reason);
    let mut bm25_opts = m.options(&path);
    bm25_opts.embeddings = false;
    let bm25 = Db::open(bm25_opts).unwrap();

    let mems = data["memories"].as_array().unwrap();
    let reqs: Vec<LearnRequest> =
        mems.iter().map(|x| LearnRequest { insight: x["text"].as_str().unwrap(), ..Default::default() }).collect();
    let (mut ids, mut embedded) = (HashMap::new(), HashMap::new());
    for (x, o) in mems.iter().zip(hybrid.learn_batch(&reqs).unwrap()) {
        let key = x["id"].as_str().unwrap().to_string();
        assert!(o.duplicate.is_none(), "{key} stored as a duplicate of #{}", o.memory_id);
        ids.insert(key.clone(), o.memory_id);
        embedded.insert(key, o.has_embedding);
    }
    let top3 = |db: &Db, q: &str, want: i64| {
        let r = db.recall(&RecallRequest { query: q, n: 3, ..Default::default() }).unwrap();
        (r.hits.iter().any(|h| h.memory.id == want), r.mode)
    };
    let mut tuner =
        tune::dir().map(|_| tune::Tuner::open(&m.options(&path), &format!("paraphrase-{tag}.jsonl"), false));
    let mut table: BTreeMap<(String, String), Tally> = BTreeMap::new();
    for (i, q) in data["queries"].as_array().unwrap().iter().enumerate() {
        let text = q["query"].as_str().unwrap();
        let want = ids[q["target"].as_str().unwrap()];
        let lang = q["lang"].as_str().unwrap().to_string();
        let kind = q["kind"].as_str().unwrap().to_string();
        if let Some(t) = &mut tuner {
            t.dump(&format!("{i}"), &format!("{lang}-{kind}"), text, |id| id == want);
        }
        let t = table.entry((lang, kind)).or_default();
        t.total += 1;
        let (found, mode) = top3(&bm25, text, want);
        assert!(matches!(mode, SearchMode::Bm25Only | SearchMode::Scan), "{text}: {mode:?}");
        t.bm25 += found as usize;
        t.hybrid += top3(&hybrid, text, want).0 as usize;
    }
    println!("\n{tag} ({})", status.model.unwrap_or_default());
    println!("lang kind        queries  BM25 top-3  hybrid top-3");
    let mut sums: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for ((lang, kind), t) in &table {
        println!("{lang:4} {kind:11} {:7}  {:10}  {:12}", t.total, t.bm25, t.hybrid);
        let e = sums.entry(lang.clone()).or_default();
        e.0 += t.hybrid;
        e.1 += t.bm25;
    }
    drop((hybrid, bm25, tuner));
    (sums, embedded)
}

#[test]
fn english_model_beats_bm25_on_english_and_leaves_chinese_alone() {
    let Some(m) = model::english("quality (English model)") else { return };
    let (sums, embedded) = evaluate(&m, "all-MiniLM-L6-v2-int8");
    // The English vocabulary maps ~80 % of Chinese characters to [UNK]: Chinese
    // texts and queries get no vector, so their results are BM25's, never worse.
    for (id, e) in &embedded {
        assert_eq!(*e, id.starts_with("en-"), "{id}");
    }
    let ((eh, eb), (zh, zb)) = (sums["en"], sums["zh"]);
    assert!(eh > eb, "English: hybrid {eh} must beat BM25 {eb}");
    assert_eq!(zh, zb, "Chinese: the English-only model must not change Chinese results");
}

#[test]
fn default_model_beats_bm25_on_english_and_chinese() {
    let Some(m) = model::default_model("quality (default model, multilingual)") else { return };
    let (sums, embedded) = evaluate(&m, "use-multilingual-v3-int8");
    assert!(embedded.values().all(|e| *e), "every memory is representable by the multilingual model");
    let ((eh, eb), (zh, zb)) = (sums["en"], sums["zh"]);
    assert!(eh > eb, "English: hybrid {eh} must beat BM25 {eb}");
    assert!(zh > zb, "Chinese: hybrid {zh} must beat BM25 {zb}");
}

/// The model named by `ROBOTMEM_DEVSETS_MODEL` (a directory under the test
/// models), for evaluating candidates and dumping them for tuning; a no-op when
/// unset. Prints the table; asserts only that hybrid is not behind BM25.
#[test]
fn named_model_on_the_paraphrase_set() {
    let Ok(name) = std::env::var("ROBOTMEM_DEVSETS_MODEL") else { return };
    let Some(m) = model::named("quality (named model)", &name) else { return };
    let (sums, _) = evaluate(&m, &name);
    for (lang, (h, b)) in &sums {
        assert!(h >= b, "{name}, {lang}: hybrid {h} behind BM25 {b}");
    }
}
