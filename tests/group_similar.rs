//! `group_similar` through the engine and the C ABI: repeats of one event fold
//! into the best-ranked of them with their ids; n groups are found however deep
//! the repeats go; the constraints still hold exactly for every hit and every id
//! folded into it; a success and a failure never fold together.

#[path = "common/c_abi.rs"]
mod c_abi;

use std::collections::HashSet;
use std::ffi::CString;
use std::ptr::null_mut;

use robotmem::ffi::*;
use robotmem::*;

fn lexical() -> Db {
    Db::open(OpenOptions { embeddings: false, ..OpenOptions::path(":memory:") }).unwrap()
}

fn learn(db: &Db, text: &str, context: &str) -> i64 {
    db.learn(&LearnRequest { insight: text, context: Some(context), ..Default::default() }).unwrap().memory_id
}

/// The web console's case (issue 25): six dock failures on a wet floor crowd out
/// the wet suction cup for "gripper slips on wet objects".
fn dock_and_cup(db: &Db) -> (Vec<i64>, i64) {
    let docks: Vec<i64> = (0..6)
        .map(|i| {
            let t = format!("base-01 could not dock at station {i} at 1{i}:0{i}: the wheels slipped on the wet floor");
            learn(db, &t, &format!(r#"{{"robot": "base-01", "spatial": {{"pos": [{i}, 0]}}}}"#))
        })
        .collect();
    let cup = learn(
        db,
        "suction cup slipped off the wet bottle: condensation broke the seal",
        r#"{"robot": "arm-2", "spatial": {"pos": [9, 9]}}"#,
    );
    learn(db, "gripper pads replaced after 300 cycles, grip on dry boxes fine", r#"{"robot": "arm-2"}"#);
    (docks, cup)
}

#[test]
fn repeats_fold_into_one_hit_that_lists_them() {
    let db = lexical();
    let (docks, cup) = dock_and_cup(&db);
    let q = RecallRequest { query: "slipped on the wet floor", n: 3, ..Default::default() };
    let plain = db.recall(&q).unwrap();
    assert!(plain.hits.iter().all(|h| docks.contains(&h.memory.id)), "plain: the repeats fill the top 3");
    assert!(plain.hits.iter().all(|h| h.similar.is_empty()));

    let grouped = db.recall(&RecallRequest { group_similar: true, ..q }).unwrap();
    let ids: Vec<i64> = grouped.hits.iter().map(|h| h.memory.id).collect();
    assert!(ids.contains(&cup), "grouped: the suction cup is in the top 3: {ids:?}");
    let head = grouped.hits.iter().find(|h| docks.contains(&h.memory.id)).unwrap();
    let mut all: Vec<i64> = std::iter::once(head.memory.id).chain(head.similar.iter().copied()).collect();
    all.sort();
    assert_eq!(all, docks, "one hit stands for the six repeats and lists the other five");
    assert_eq!(grouped.hits[0].score, 1.0, "scores stay normalised to the best hit");
}

#[test]
fn n_groups_are_found_however_deep_the_repeats_go() {
    let db = lexical();
    // 150 repeats of each of two events rank above three single facts.
    for i in 0..150 {
        learn(&db, &format!("arm-1 joint {i} over temperature alarm valve stuck cycle {}", i * 7), "{}");
        learn(&db, &format!("arm-1 valve stuck closed alarm on line {i} temperature reading {}", i * 3 + 1), "{}");
    }
    for t in [
        "valve replaced on arm-3 after the leak",
        "temperature probe moved on the conveyor",
        "alarm test of the fire panel passed",
    ] {
        learn(&db, t, "{}");
    }
    let r = db
        .recall(&RecallRequest {
            query: "arm-1 valve stuck temperature alarm",
            n: 5,
            group_similar: true,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(r.hits.len(), 5, "five groups: the two repeated events and the three single facts");
    let seen: HashSet<i64> =
        r.hits.iter().flat_map(|h| std::iter::once(h.memory.id).chain(h.similar.iter().copied())).collect();
    let listed: usize = r.hits.iter().map(|h| 1 + h.similar.len()).sum();
    assert_eq!(seen.len(), listed, "no memory is listed twice");
}

#[test]
fn constraints_hold_for_every_hit_and_every_folded_id() {
    let db = lexical();
    let (docks, _) = dock_and_cup(&db);
    // Filter: only base-01; every id, heads and folded, satisfies it.
    let r = db
        .recall(&RecallRequest {
            query: "slipped on wet",
            n: 5,
            context_filter: Some(r#"{"robot": "base-01"}"#),
            group_similar: true,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(r.hits.len(), 1);
    for id in std::iter::once(r.hits[0].memory.id).chain(r.hits[0].similar.iter().copied()) {
        assert!(docks.contains(&id), "{id} does not satisfy the filter");
    }
    // Spatial: the nearest repeat heads the group, and max_distance bounds the folded ones too.
    let r = db
        .recall(&RecallRequest {
            query: "slipped on wet",
            n: 5,
            spatial_sort: Some(r#"{"field": "spatial.pos", "target": [4.2, 0], "max_distance": 1.5}"#),
            group_similar: true,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(r.hits.len(), 1);
    assert_eq!(r.hits[0].memory.id, docks[4], "nearest first");
    let mut folded = r.hits[0].similar.clone();
    folded.sort();
    assert_eq!(folded, vec![docks[3], docks[5]], "only the repeats within max_distance");
}

#[test]
fn a_success_and_a_failure_never_fold_together() {
    let db = lexical();
    let a = learn(&db, "grasp of the blue cup on shelf 2 failed at 12 N", "{}");
    let b = learn(&db, "grasp of the blue cup on shelf 3 succeeded at 14 N", "{}");
    let r = db
        .recall(&RecallRequest { query: "grasp blue cup shelf", n: 5, group_similar: true, ..Default::default() })
        .unwrap();
    let ids: HashSet<i64> = r.hits.iter().map(|h| h.memory.id).collect();
    assert_eq!(ids, HashSet::from([a, b]));
    assert!(r.hits.iter().all(|h| h.similar.is_empty()));
}

#[test]
fn c_abi_lists_the_folded_ids_and_defaults_to_off() {
    let db = c_abi::open_in_memory();
    let mut ids = Vec::new();
    for i in 0..4 {
        let text = CString::new(format!("base-01 could not dock at station {i}: the wheels slipped on the wet floor"))
            .unwrap();
        let mut out = null_mut();
        // SAFETY: valid handle, text and out pointer.
        assert_eq!(
            unsafe { rm_learn(db, text.as_ptr(), std::ptr::null(), &mut out) },
            rm_status::RM_OK,
            "{}",
            c_abi::last_error()
        );
        // SAFETY: out was written on success.
        ids.push(unsafe { (*out).memory_id });
        unsafe { rm_learn_result_free(out) };
    }
    let mut opts = std::mem::MaybeUninit::<rm_recall_options>::uninit();
    // SAFETY: init writes every field.
    let mut opts = unsafe {
        assert_eq!(rm_recall_options_init(opts.as_mut_ptr()), rm_status::RM_OK);
        opts.assume_init()
    };
    assert!(!opts.group_similar, "off by default");
    let query = c"wet floor dock";
    for group in [false, true] {
        opts.group_similar = group;
        let mut r = null_mut();
        // SAFETY: valid handle, query, options and out pointer.
        assert_eq!(
            unsafe { rm_recall(db, query.as_ptr(), &opts, &mut r) },
            rm_status::RM_OK,
            "{}",
            c_abi::last_error()
        );
        // SAFETY: r was written on success; its hits and ids live until it is freed.
        let res = unsafe { &*r };
        let hits = unsafe { std::slice::from_raw_parts(res.hits, res.count) };
        if group {
            assert_eq!(res.count, 1);
            let similar = unsafe { std::slice::from_raw_parts(hits[0].similar_ids, hits[0].similar_count) };
            let mut all: Vec<i64> = std::iter::once(hits[0].memory.id).chain(similar.iter().copied()).collect();
            all.sort();
            assert_eq!(all, ids);
        } else {
            assert_eq!(res.count, 4);
            assert!(hits.iter().all(|h| h.similar_ids.is_null() && h.similar_count == 0));
        }
        unsafe { rm_recall_result_free(r) };
    }
    assert_eq!(rm_close(db), rm_status::RM_OK);
}
