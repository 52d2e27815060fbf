//! Measurements that need a fresh process: the bench runs itself again with
//! `--child what` and reads the JSON line the child prints.

use std::path::Path;
use std::time::Instant;

use robotmem::internals::embed;
use robotmem::{Db, Durability, LearnRequest, RecallRequest, RecallResult};
use serde_json::{json, Value};

use super::knn::{time_knn, Knn};
use super::model::{encode, inputs, session_builder, tokenizer};
use super::util::{
    default_threads, embedder, english_texts, fill_random, hwm, memories, ms, open_db, opts, random_unit, raw_conn,
    rss, rss_parts, timed,
};
use super::{Args, RECALL_K};
use crate::corpus::{self, Rng};

/// Runs this benchmark binary again with `--child what`; returns its JSON line.
pub(super) fn spawn(a: &Args, dir: &Path, what: &str) -> Value {
    spawn_on(a, dir, what, None)
}

/// [`spawn`] with `--large-db large` when given.
pub(super) fn spawn_on(a: &Args, dir: &Path, what: &str, large: Option<&Path>) -> Value {
    let exe = std::env::current_exe().expect("current_exe");
    let cdir = dir.join(format!(
        "child-{what}-{}",
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
    ));
    std::fs::create_dir_all(&cdir).expect("child dir");
    let out = std::process::Command::new(exe)
        .args(["--embedding", "--child", what])
        .arg("--dir")
        .arg(&cdir)
        .arg("--model-dir")
        .arg(&a.model_dir)
        .arg("--ort-library")
        .arg(&a.ort)
        .args(["--memories", &a.memories.to_string()])
        .args(["--samples", &a.samples.to_string()])
        .args(["--warmup", &a.warmup.to_string()])
        .args(["--batch", &a.batch.to_string()])
        .args(["--seed", &a.seed.to_string()])
        .args(large.map(|p| [std::ffi::OsStr::new("--large-db"), p.as_os_str()]).into_iter().flatten())
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("spawn child");
    let _ = std::fs::remove_dir_all(&cdir);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child {what} failed: {text}");
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{') && l.contains("\"child\":"))
        .unwrap_or_else(|| panic!("child {what}: no result in {text}"));
    serde_json::from_str(line).expect("child json")
}

/// The measurement of a child process (`--child what`), as one JSON value.
pub(super) fn run(a: &Args, what: &str) -> Value {
    let dir = a.dir.clone().expect("--dir");
    match what {
        "open" => open(a, &dir),
        "open-split" => open_split(a, &dir),
        v if v.starts_with("session-") => session(a, v),
        "knn-random" => knn_random(a, &dir),
        "large-open" => large_open(a),
        "rss-single" | "rss-batch" | "rss-bm25" => rss_child(a, &dir, what),
        other => panic!("unknown child {other}"),
    }
}

/// A recall of one fixed query (the first one of a handle is cold).
fn recall_once(db: &Db) -> RecallResult {
    db.recall(&RecallRequest { query: "grasp red mug", ..Default::default() }).expect("recall")
}

fn open(a: &Args, dir: &Path) -> Value {
    let rss0 = rss();
    let p1 = dir.join("first.db");
    let (db, first) = timed(|| open_db(a, &p1, Durability::Full, default_threads(), true));
    let rss1 = rss();
    let (_, first_recall) = timed(|| recall_once(&db));
    drop(db);
    let p2 = dir.join("second.db");
    let (db, second) = timed(|| open_db(a, &p2, Durability::Full, default_threads(), true));
    let (_, second_recall) = timed(|| recall_once(&db));
    drop(db);
    let (db, reopen) = timed(|| open_db(a, &p1, Durability::Full, default_threads(), true));
    drop(db);
    let (db, bm25) = timed(|| open_db(a, &dir.join("bm25.db"), Durability::Full, default_threads(), false));
    drop(db);
    let (e, load) = timed(|| embedder(a, 2, 32));
    drop(e);
    json!({"child": "open", "first_ms": ms(first), "first_recall_ms": ms(first_recall),
           "second_ms": ms(second), "second_recall_ms": ms(second_recall), "reopen_ms": ms(reopen),
           "bm25_open_ms": ms(bm25), "model_load_ms": ms(load),
           "rss_before_mib": rss0, "rss_after_first_open_mib": rss1, "hwm_mib": hwm()})
}

/// A process that opens the large database with the model, recalls once (the
/// first hybrid recall: the vector index is loaded or built), makes the recall
/// mix and closes the file cleanly (which stores the index snapshots).
fn large_open(a: &Args) -> Value {
    let path = a.large_db.clone().expect("--large-db");
    let (db, open) = timed(|| open_db(a, &path, Durability::Normal, default_threads(), true));
    let hwm_open = hwm();
    let (first, first_recall) = timed(|| recall_once(&db));
    let hwm_first = hwm();
    for q in corpus::queries(a.samples + a.warmup, a.seed) {
        db.recall(&q.request()).expect("recall");
    }
    let hwm_mix = hwm();
    let (anon_mix, file_mix) = rss_parts();
    let (_, close) = timed(|| db.close().expect("close"));
    json!({"child": "large-open", "open_ms": ms(open), "first_recall_ms": ms(first_recall),
           "open_and_first_ms": ms(open + first_recall), "first_mode": format!("{:?}", first.mode),
           "hwm_open_mib": hwm_open, "hwm_first_mib": hwm_first, "hwm_mix_mib": hwm_mix,
           "rss_anon_mix_mib": anon_mix, "rss_file_mix_mib": file_mix, "close_ms": ms(close), "hwm_mib": hwm()})
}

/// The pieces of a first open, in a fresh process: ONNX Runtime library + environment,
/// then what embed::load does (read, hash, tokenizer, session), then Db::open.
fn open_split(a: &Args, dir: &Path) -> Value {
    use sha2::Digest;
    let (_, env) = timed(|| embed::runtime::environment(Some(&a.ort)).expect("ONNX Runtime"));
    let rss_env = rss();
    let (model, read) = timed(|| std::fs::read(a.model_dir.join("model.onnx")).expect("model"));
    let (_, hash) = timed(|| sha2::Sha256::digest(&model));
    let tok_bytes = std::fs::read(a.model_dir.join("tokenizer.json")).expect("tokenizer");
    let (_, tok) = timed(|| embed::unigram::from_bytes(&tok_bytes).expect("tokenizer"));
    drop(model);
    let (e, load) = timed(|| embedder(a, 2, 32));
    drop(e);
    let (db, open) = timed(|| open_db(a, &dir.join("split.db"), Durability::Full, default_threads(), true));
    drop(db);
    json!({"child": "open-split", "ort_env_ms": ms(env), "rss_after_env_mib": rss_env, "read_model_ms": ms(read),
           "sha256_model_ms": ms(hash), "tokenizer_parse_ms": ms(tok), "embed_load_ms": ms(load),
           "db_open_after_env_ms": ms(open)})
}

/// Peak RSS of creating one ONNX Runtime session, fresh process:
/// session-{memory|file}[-noprepack][-nopattern] for the model of --model-dir.
fn session(a: &Args, v: &str) -> Value {
    let env = embed::runtime::environment(Some(&a.ort)).expect("ONNX Runtime");
    let (hwm0, rss0) = (hwm(), rss());
    let fail = |e: &dyn std::fmt::Display| -> ! { panic!("ort session: {e}") };
    let started = Instant::now();
    let mut b = session_builder(env, 2, None, false);
    if v.contains("-noprepack") {
        b = b.with_config_entry("session.disable_prepacking", "1").unwrap_or_else(|e| fail(&e));
    }
    if v.contains("-nopattern") {
        b = b.with_memory_pattern(false).unwrap_or_else(|e| fail(&e));
    }
    let path = a.model_dir.join("model.onnx");
    let mut sess = if v.starts_with("session-file") {
        b.commit_from_file(&path).unwrap_or_else(|e| fail(&e))
    } else {
        let bytes = std::fs::read(&path).expect("model");
        b.commit_from_memory(&bytes).unwrap_or_else(|e| fail(&e))
    };
    let create = started.elapsed().as_secs_f64() * 1e3;
    let (hwm1, rss1) = (hwm(), rss());
    // One query and one batch of 32 memory texts, then the steady state.
    let tok = tokenizer(a);
    let texts: Vec<String> = english_texts(64, a.seed).into_iter().take(32).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut lat = Vec::new();
    for t in [vec!["grasp red mug"], texts] {
        let input = encode(&tok, &t);
        for _ in 0..5 {
            let inputs = inputs(&input, true);
            let (_, dt) = timed(|| sess.run(inputs).expect("run").len());
            lat.push(dt);
        }
    }
    json!({"child": v, "create_ms": create, "hwm_before_mib": hwm0, "rss_before_mib": rss0, "hwm_after_create_mib": hwm1,
           "rss_after_create_mib": rss1, "hwm_after_runs_mib": hwm(), "rss_after_runs_mib": rss(),
           "query_ms": ms(lat[4]), "batch32_ms": ms(lat[9])})
}

/// sqlite-vec alone, for a profiler: --large random vectors, --samples KNN calls (k = 80).
fn knn_random(a: &Args, dir: &Path) -> Value {
    let c = raw_conn(&dir.join("knn.db"), false);
    c.execute_batch("CREATE VIRTUAL TABLE memory_vec USING vec0(collection text partition key, embedding float[384]);")
        .unwrap();
    let mut r = Rng::new(a.seed);
    fill_random(&c, &mut r, &mut 0, a.large, 384);
    let qv: Vec<Vec<f32>> = (0..16).map(|_| random_unit(&mut r, 384)).collect();
    let (s, _) = time_knn(&Knn::Vec0(&c), &qv, RECALL_K, a.samples, a.warmup);
    json!({"child": "knn-random", "vectors": a.large, "knn": s.json()})
}

/// Peak RSS of open (preload) + `--memories` learns (one by one, batched, or without
/// the model) + the recall mix.
fn rss_child(a: &Args, dir: &Path, what: &str) -> Value {
    let model = what != "rss-bm25";
    let path = dir.join("rss.db");
    let mut o = opts(a, &path, Durability::Normal, 2, model);
    o.preload = true; // jieba dictionary + in-process index at open
    let db = Db::open(o).expect("open");
    let hwm_open = hwm();
    let mems = memories(a.memories, a.seed);
    let hwm_corpus = hwm();
    if what == "rss-batch" {
        for chunk in mems.chunks(a.batch) {
            let reqs: Vec<LearnRequest> = chunk.iter().map(|m| m.request()).collect();
            db.learn_batch(&reqs).expect("learn_batch");
        }
    } else {
        for m in &mems {
            db.learn(&m.request()).expect("learn");
        }
    }
    drop(mems);
    let hwm_learn = hwm();
    for q in corpus::queries(a.samples + a.warmup, a.seed) {
        db.recall(&q.request()).expect("recall");
    }
    let st = db.embedding_status().expect("status");
    json!({"child": what, "hwm_open_mib": hwm_open, "hwm_corpus_mib": hwm_corpus, "hwm_learn_mib": hwm_learn,
           "hwm_end_mib": hwm(), "rss_end_mib": rss(), "model": st.model.is_some(),
           "memories": a.memories, "db_mib": crate::file_bytes(&path) as f64 / 1048576.0})
}
