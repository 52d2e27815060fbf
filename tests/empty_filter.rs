//! Issue 26, F5: a context_filter with zero conditions (`{}`) constrains nothing,
//! so a recall with it returns exactly what the same recall without a filter
//! returns, through the Rust API and through rm_recall, for a query with words
//! and for "*". Before: `{}` returned RM_OK with 0 hits.

use std::ffi::{CStr, CString};
use std::ptr::{null, null_mut};

use robotmem::ffi::*;
use robotmem::*;

#[path = "common/c_abi.rs"]
mod c_abi;

const TEXTS: [&str; 3] = [
    "gripper force 12.5N works best on the red cup",
    "the blue box slipped at gripper force 8N",
    "camera exposure 20ms is enough in the lab",
];

fn db_with_memories() -> Db {
    let mut o = OpenOptions::in_memory();
    o.embeddings = false;
    let db = Db::open(o).unwrap();
    for (i, t) in TEXTS.iter().enumerate() {
        let ctx = format!(r#"{{"task": {{"success": {}}}, "robot": {{"id": "r{i}"}}}}"#, i % 2 == 0);
        db.learn(&LearnRequest { insight: t, context: Some(&ctx), ..Default::default() }).unwrap();
    }
    db
}

fn ids(db: &Db, query: &str, filter: Option<&str>) -> Vec<i64> {
    let req = RecallRequest { query, n: 100, min_confidence: 0.0, context_filter: filter, ..Default::default() };
    db.recall(&req).unwrap().hits.iter().map(|h| h.memory.id).collect()
}

#[test]
fn an_empty_context_filter_matches_every_memory() {
    let db = db_with_memories();
    for query in ["gripper force", "*"] {
        let plain = ids(&db, query, None);
        assert!(!plain.is_empty(), "premise: {query:?} finds memories");
        assert_eq!(ids(&db, query, Some("{}")), plain, "{query:?} with {{}}");
        assert_eq!(ids(&db, query, Some(" { } ")), plain, "{query:?} with {{ }}");
    }
    assert_eq!(ids(&db, "*", None).len(), TEXTS.len());
    // A real condition still filters.
    assert_eq!(ids(&db, "*", Some(r#"{"task.success": true}"#)).len(), 2);
}

fn c_ids(db: *mut rm_db, query: &str, filter: Option<&CStr>) -> Vec<i64> {
    let mut o = std::mem::MaybeUninit::<rm_recall_options>::uninit();
    // SAFETY: init writes every field.
    let mut o = unsafe {
        assert_eq!(rm_recall_options_init(o.as_mut_ptr()), rm_status::RM_OK);
        o.assume_init()
    };
    o.n = 100;
    o.min_confidence = 0.0;
    o.context_filter = filter.map_or(null(), CStr::as_ptr);
    let q = CString::new(query).unwrap();
    let mut out = null_mut();
    // SAFETY: valid handle, strings and out pointer.
    let status = unsafe { rm_recall(db, q.as_ptr(), &o, &mut out) };
    assert_eq!(status, rm_status::RM_OK);
    // SAFETY: RM_OK wrote a result of `count` hits.
    let r = unsafe { &*out };
    let hits = if r.count == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(r.hits, r.count) } };
    let v = hits.iter().map(|h| h.memory.id).collect();
    // SAFETY: the result of rm_recall, freed once.
    unsafe { rm_recall_result_free(out) };
    v
}

#[test]
fn an_empty_context_filter_matches_every_memory_through_the_c_abi() {
    let db = c_abi::open_in_memory();
    for t in TEXTS {
        let t = CString::new(t).unwrap();
        // SAFETY: valid handle and text; NULL options and out are allowed.
        assert_eq!(unsafe { rm_learn(db, t.as_ptr(), null(), null_mut()) }, rm_status::RM_OK);
    }
    for query in ["gripper force", "*"] {
        let plain = c_ids(db, query, None);
        assert!(!plain.is_empty(), "premise: {query:?} finds memories");
        assert_eq!(c_ids(db, query, Some(c"{}")), plain, "{query:?} with {{}}");
    }
    assert_eq!(c_ids(db, "*", Some(c"{}")).len(), TEXTS.len());
    // The handle opened above, closed once.
    assert_eq!(rm_close(db), rm_status::RM_OK);
}
