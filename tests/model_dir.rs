//! Hostile model directories: the default model's weights live in `model.data`
//! beside `model.onnx` (ONNX external data, memory-mapped by ONNX Runtime). A
//! missing, truncated or garbage `model.data` (or tokenizer) gives a handle in
//! BM25-only mode with a reason naming the file, never a crash; weights swapped
//! for others of the same size load, under another model stamp.

mod model;

#[path = "common/scratch.rs"]
mod scratch;
use std::path::Path;

use robotmem::*;

/// A copy of the model directory of `m` in `into`, `model.data` left out.
fn copy_model_dir(m: &model::Model, into: &Path) {
    for f in ["model.onnx", "tokenizer.json", "robotmem-model.json"] {
        std::fs::copy(m.dir.join(f), into.join(f)).unwrap();
    }
}

fn open_with(m: &model::Model, dir: &Path, db: &Path) -> Db {
    let mut o = m.options(db);
    o.model_dir = Some(dir.to_path_buf());
    Db::open(o).unwrap()
}

/// Opens a database with the model directory `dir`: embeddings unavailable, the
/// reason contains every one of `expect`; BM25 learn and recall still work.
fn assert_bm25_only(m: &model::Model, dir: &Path, expect: &[&str]) {
    let db = open_with(m, dir, &dir.join("m.db"));
    let s = db.embedding_status().unwrap();
    assert_eq!(s.state, EmbeddingState::Unavailable, "{}: {}", dir.display(), s.reason);
    for e in expect {
        assert!(s.reason.contains(e), "{:?} not in the reason: {}", e, s.reason);
    }
    model::assert_learns_and_recalls_bm25_only(&db);
}

fn has_external_data(m: &model::Model) -> bool {
    let yes = m.dir.join("model.data").is_file();
    if !yes {
        eprintln!("SKIPPED: {} has no model.data (an older layout; run scripts/fetch-model.sh)", m.dir.display());
    }
    yes
}

#[test]
fn a_missing_truncated_or_garbage_model_data_leaves_bm25_only() {
    let Some(m) = model::default_model("model_data_hostile") else { return };
    if !has_external_data(&m) {
        return;
    }
    let weights = std::fs::read(m.dir.join("model.data")).unwrap();
    let root = scratch::Scratch::new("model-data");
    let case = |name: &str, data: Option<&[u8]>| {
        let dir = root.join(name);
        std::fs::create_dir(&dir).unwrap();
        copy_model_dir(&m, &dir);
        if let Some(d) = data {
            std::fs::write(dir.join("model.data"), d).unwrap();
        }
        dir
    };
    let model_onnx = |d: &Path| format!("cannot load {}", d.join("model.onnx").display());

    let d = case("missing", None);
    assert_bm25_only(&m, &d, &[&model_onnx(&d), "model.data"]);
    for (name, len) in [("truncated", weights.len() / 2), ("one-byte-short", weights.len() - 1), ("empty", 0)] {
        let d = case(name, Some(&weights[..len]));
        assert_bm25_only(&m, &d, &[&model_onnx(&d), "out of bounds"]);
    }
    let d = case("garbage", Some(b"<html>404 not found</html>\n"));
    assert_bm25_only(&m, &d, &[&model_onnx(&d), "out of bounds"]);
    // Not a file: the stamp hash cannot read it.
    let d = case("directory", None);
    std::fs::create_dir(d.join("model.data")).unwrap();
    assert_bm25_only(&m, &d, &[&format!("cannot read {}", d.join("model.data").display())]);
    // The tokenizer is checked first, as before.
    let d = case("bad-tokenizer", None);
    std::fs::write(d.join("tokenizer.json"), b"{\"not\": \"a tokenizer\"}").unwrap();
    assert_bm25_only(&m, &d, &[&format!("{} is not a usable tokenizer", d.join("tokenizer.json").display())]);
}

/// Weights of the right size but other bytes: ONNX Runtime cannot tell, the
/// model stamp does (it hashes model.data), so the vectors stored with the real
/// weights are another model's.
#[test]
fn other_weights_of_the_same_size_change_the_stamp() {
    let Some(m) = model::default_model("model_data_stamp") else { return };
    if !has_external_data(&m) {
        return;
    }
    let root = scratch::Scratch::new("model-stamp");
    let path = root.db();
    let real = {
        let db = Db::open(m.options(&path)).unwrap();
        db.learn(&LearnRequest { insight: "the charging dock is behind the kitchen door", ..Default::default() })
            .unwrap();
        db.embedding_status().unwrap().model.unwrap()
    };
    let dir = root.join("zeros");
    std::fs::create_dir(&dir).unwrap();
    copy_model_dir(&m, &dir);
    let f = std::fs::File::create(dir.join("model.data")).unwrap();
    f.set_len(std::fs::metadata(m.dir.join("model.data")).unwrap().len()).unwrap();
    drop(f);
    let db = open_with(&m, &dir, &path);
    let s = db.embedding_status().unwrap();
    let other = s.model.clone().unwrap();
    assert_ne!(other, real);
    assert_eq!(other.rsplit_once('/').unwrap().0, real.rsplit_once('/').unwrap().0, "same name and dim");
    assert_eq!(s.state, EmbeddingState::ModelMismatch, "{}", s.reason);
}

/// ONNX Runtime maps model.data rather than copying it into the heap: after
/// open, the file is mapped into this process.
#[test]
fn the_weights_are_memory_mapped() {
    let Some(m) = model::default_model("model_data_mapped") else { return };
    if !has_external_data(&m) {
        return;
    }
    let root = scratch::Scratch::new("model-mapped");
    let db = Db::open(m.options(root.db())).unwrap();
    assert_eq!(db.embedding_status().unwrap().state, EmbeddingState::Ready);
    let data = std::fs::canonicalize(m.dir.join("model.data")).unwrap();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let mapped: u64 = maps
        .lines()
        .filter(|l| l.ends_with(data.to_str().unwrap()))
        .filter_map(|l| {
            let (a, b) = l.split_whitespace().next()?.split_once('-')?;
            Some(u64::from_str_radix(b, 16).ok()? - u64::from_str_radix(a, 16).ok()?)
        })
        .sum();
    eprintln!("{} mapped: {:.1} MiB", data.display(), mapped as f64 / 1048576.0);
    assert!(mapped > 0, "{} is not mapped into the process", data.display());
}
