//! Opening without the ONNX Runtime library: open succeeds in bm25_only mode
//! with a clear reason; later a handle with the runtime embeds what was learned
//! meanwhile. Its own test binary: ONNX Runtime is loaded once per process.

mod model;

#[path = "common/scratch.rs"]
mod scratch;
use robotmem::*;

#[test]
fn without_runtime_bm25_only_then_reembed() {
    let Some(m) = model::default_model("without_runtime_bm25_only_then_reembed") else { return };
    let dir = scratch::Scratch::new("noort");
    let path = dir.db();
    let mut o = m.options(&path);
    o.ort_library = Some(dir.join("libonnxruntime.so.missing"));
    let db = Db::open(o).unwrap();
    let s = db.embedding_status().unwrap();
    assert_eq!(s.state, EmbeddingState::Unavailable);
    assert!(s.reason.contains("libonnxruntime.so.missing") && s.reason.contains("BM25 only"), "{}", s.reason);
    let learned = model::assert_learns_and_recalls_bm25_only(&db);
    let e = db.reembed(0).unwrap_err();
    assert_eq!(e.status, Status::EmbeddingUnavailable);
    assert_eq!(db.embedding_status().unwrap().pending, 1);
    drop(db);

    // The same process can still load a working runtime later.
    let db = Db::open(m.options(&path)).unwrap();
    assert_eq!(db.embedding_status().unwrap().state, EmbeddingState::Ready);
    assert_eq!(db.reembed(0).unwrap(), ReembedOutcome { embedded: 1, remaining: 0, rebuilt: false });
    let r = db
        .recall(&RecallRequest { query: "transparent surfaces fool the laser scanner", ..Default::default() })
        .unwrap();
    assert_eq!(r.hits[0].memory.id, learned.memory_id);
}
