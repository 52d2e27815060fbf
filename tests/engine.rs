//! End-to-end behaviour of the Rust API.

#[path = "common/scratch.rs"]
mod scratch;
use robotmem::*;

fn db() -> Db {
    Db::open(OpenOptions::in_memory()).unwrap()
}

fn learn(db: &Db, text: &str) -> LearnOutcome {
    db.learn(&LearnRequest { insight: text, ..Default::default() }).unwrap()
}

fn learn_ctx(db: &Db, text: &str, ctx: &str) -> LearnOutcome {
    db.learn(&LearnRequest { insight: text, context: Some(ctx), ..Default::default() }).unwrap()
}

fn recall(db: &Db, q: &str) -> RecallResult {
    db.recall(&RecallRequest { query: q, ..Default::default() }).unwrap()
}

#[test]
fn learn_then_recall() {
    let db = db();
    let a = learn(&db, "grip_force=12.5N works best because the sensor was calibrated");
    assert!(a.duplicate.is_none());
    learn(&db, "navigation to the charging dock takes 40 seconds");
    let r = recall(&db, "grip force");
    assert_eq!(r.mode, SearchMode::Bm25Only);
    assert_eq!(r.hits.len(), 1);
    assert_eq!(r.hits[0].memory.id, a.memory_id);
    assert_eq!(r.hits[0].score, 1.0);
    assert!(r.hits[0].memory.context.contains("learn_tool"));
}

#[test]
fn a_lone_number_in_the_query_picks_its_memory() {
    // Robots name things by number: "pallet 7" must rank the memory about pallet 7
    // first, not every pallet alike (single digits used to be dropped from queries).
    let db = db();
    let mut ids = Vec::new();
    for i in [0, 1, 2, 5, 6, 7, 8, 9] {
        ids.push((i, learn(&db, &format!("camera frame {i}: pallet {i} on conveyor belt")).memory_id));
    }
    let seven = ids.iter().find(|(i, _)| *i == 7).unwrap().1;
    let r = recall(&db, "pallet 7 conveyor belt");
    assert_eq!(r.hits[0].memory.id, seven);
    assert!(r.hits[0].score > r.hits[1].score);
    // The same sentence about another pallet is new (the numbers differ).
    assert!(learn(&db, "pallet 3 waits at dock 4").duplicate.is_none());
    assert!(learn(&db, "pallet 4 waits at dock 4").duplicate.is_none());
}

#[test]
fn dots_in_text_do_not_break_dedup_or_search() {
    let db = db();
    let a = learn(&db, "grip_force=12.5N works best");
    let b = learn(&db, "grip_force=12.5N works best");
    assert_eq!(b.duplicate.unwrap().method, DupMethod::Exact);
    assert_eq!(b.memory_id, a.memory_id);
    let c = learn(&db, "grip_force=15N works best");
    assert!(c.duplicate.is_none(), "a different number is a different fact");
    let r = recall(&db, "12.5N \"OR\" NEAR(* -- ;");
    assert_eq!(r.hits[0].memory.id, a.memory_id);
}

#[test]
fn jaccard_duplicate_is_symmetric_and_reported() {
    let db = db();
    let a = learn(&db, "the red cup needs a wider gripper opening before approach");
    let b = learn(&db, "red cup needs wider gripper opening before the approach!");
    let d = b.duplicate.expect("near-identical text is a duplicate");
    assert_eq!(d.existing_id, a.memory_id);
    assert!(d.similarity > 0.7);
}

#[test]
fn chinese_recall() {
    let db = db();
    let a = learn(&db, "推动任务最终距离0.032米，抓取杯子成功");
    learn(&db, "导航到充电桩需要四十秒");
    let r = recall(&db, "抓取杯子");
    assert_eq!(r.hits[0].memory.id, a.memory_id);
}

#[test]
fn context_filter_is_exact_beyond_any_overfetch() {
    let db = db();
    // 60 failures rank above (are newer and equally relevant to) 5 successes.
    for i in 0..5 {
        learn_ctx(&db, &format!("grasp attempt {i} on mug"), r#"{"task": {"success": true}}"#);
    }
    for i in 0..60 {
        learn_ctx(&db, &format!("grasp attempt {} on mug", 100 + i), r#"{"task": {"success": false}}"#);
    }
    let r = db
        .recall(&RecallRequest {
            query: "grasp mug",
            n: 5,
            context_filter: Some(r#"{"task.success": true}"#),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(r.hits.len(), 5);
}

#[test]
fn spatial_sort_orders_by_distance() {
    let db = db();
    let far = learn_ctx(&db, "pick box at far shelf", r#"{"spatial": {"pos": [5.0, 5.0, 0.0]}}"#);
    let near = learn_ctx(&db, "pick box at near table", r#"{"spatial": {"pos": [0.1, 0.0, 0.0]}}"#);
    let r = db
        .recall(&RecallRequest {
            query: "pick box",
            spatial_sort: Some(r#"{"field": "spatial.pos", "target": [0, 0, 0]}"#),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(r.hits[0].memory.id, near.memory_id);
    assert_eq!(r.hits[1].memory.id, far.memory_id);
    assert!((r.hits[0].distance.unwrap() - 0.1).abs() < 1e-9);
    let r = db
        .recall(&RecallRequest {
            query: "pick box",
            spatial_sort: Some(r#"{"field": "spatial.pos", "target": [0, 0, 0], "max_distance": 1}"#),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(r.hits.len(), 1);
}

#[test]
fn forget_and_update() {
    let db = db();
    let a = learn(&db, "grip force 15N optimal for mugs");
    let f = db.forget(a.memory_id, "sensor calibration error").unwrap();
    assert_eq!(f.content, "grip force 15N optimal for mugs");
    assert!(recall(&db, "grip force mugs").hits.is_empty());
    assert_eq!(db.forget(a.memory_id, "again").unwrap_err().status, Status::InvalidState);
    assert_eq!(db.update(a.memory_id, "x", None).unwrap_err().status, Status::InvalidState);
    assert_eq!(db.forget(999, "x").unwrap_err().status, Status::NotFound);

    let b = learn(&db, "approach mugs from the left side");
    let u = db.update(b.memory_id, "approach mugs from the right side", None).unwrap();
    assert_eq!(u.old_content, "approach mugs from the left side");
    assert_eq!(recall(&db, "right").hits[0].memory.id, b.memory_id);
    assert!(recall(&db, "left").hits.is_empty());
    // the old text may be learned again: its hash left with the update
    assert!(learn(&db, "approach mugs from the left side").duplicate.is_none());
}

#[test]
fn sessions() {
    let db = db();
    let s = db.start_session(None, Some(r#"{"robot": "ur5e"}"#)).unwrap();
    assert_eq!(s.session_id.len(), 36);
    let other = learn(&db, "wipe table with sponge at 5N");
    db.learn(&LearnRequest {
        insight: "sponge wiping leaves streaks at 5N",
        session_id: Some(&s.session_id),
        ..Default::default()
    })
    .unwrap();
    let e = db.end_session(&s.session_id, Some(0.8)).unwrap();
    assert_eq!(e.summary.memory_count, 1);
    assert_eq!(e.outcome_score, Some(0.8));
    assert!(e.related.iter().any(|h| h.memory.id == other.memory_id));
    let bad = db.learn(&LearnRequest { insight: "x y", session_id: Some("nope"), ..Default::default() });
    assert_eq!(bad.unwrap_err().status, Status::NotFound);
}

#[test]
fn validation_errors() {
    let db = db();
    let e = |r: Result<LearnOutcome>| r.unwrap_err().status;
    assert_eq!(e(db.learn(&LearnRequest { insight: "  ", ..Default::default() })), Status::InvalidArgument);
    assert_eq!(e(db.learn(&LearnRequest { insight: &"x".repeat(301), ..Default::default() })), Status::InvalidArgument);
    let bad = |f: &str| db.recall(&RecallRequest { query: "q", context_filter: Some(f), ..Default::default() });
    assert!(bad("[1,2,3]").is_err());
    assert!(bad(r#"{"a": {"$regex": "x"}}"#).is_err());
    let eleven: String = format!("{{{}}}", (0..11).map(|i| format!("\"k{i}\": {i}")).collect::<Vec<_>>().join(","));
    assert!(bad(&eleven).is_err());
    assert!(db.recall(&RecallRequest { query: "q", min_confidence: 1.5, ..Default::default() }).is_err());
}

#[test]
fn file_database_persists_across_opens() {
    let dir = scratch::Scratch::new("engine");
    let path = dir.db();
    let id = {
        let db = Db::open(OpenOptions::path(&path)).unwrap();
        let id = learn(&db, "door handle needs 20 degrees of rotation").memory_id;
        assert_eq!(recall(&db, "door handle").hits.len(), 1);
        // A recall that only looks (counting, previews) is not an access.
        let look = RecallRequest { query: "door handle", ..Default::default() };
        for _ in 0..3 {
            assert_eq!(db.recall_unrecorded(&look).unwrap().hits.len(), 1);
        }
        id
    };
    let db = Db::open(OpenOptions::path(&path)).unwrap();
    let m = db.get(id).unwrap();
    assert_eq!(m.access_count, 1, "recall touches are flushed on close; unrecorded recalls are not touches");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
}

#[test]
fn spatial_sort_returns_the_global_nearest() {
    let db = db();
    for i in 0..12 {
        learn_ctx(&db, &format!("waypoint {i} recorded"), &format!(r#"{{"spatial": {{"pos": [{i}, 0, 0]}}}}"#));
    }
    for q in ["*", "waypoint recorded"] {
        let r = db
            .recall(&RecallRequest {
                query: q,
                n: 1,
                spatial_sort: Some(r#"{"field": "spatial.pos", "target": [0, 0, 0]}"#),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(r.hits[0].memory.content, "waypoint 0 recorded", "query {q}");
        assert_eq!(r.hits[0].distance, Some(0.0));
    }
}

#[test]
fn update_context_none_keeps_some_replaces() {
    let db = db();
    let a = learn_ctx(&db, "arm parked at home pose", r#"{"robot": {"type": "ur5e"}}"#);
    db.update(a.memory_id, "arm parked at the home pose", None).unwrap();
    assert!(db.get(a.memory_id).unwrap().context.contains("ur5e"));
    db.update(a.memory_id, "arm parked at home", Some("")).unwrap();
    assert_eq!(db.get(a.memory_id).unwrap().context, r#"{"source":"learn_tool"}"#);
}

#[test]
fn ended_sessions_refuse_writes() {
    let db = db();
    let s = db.start_session(None, None).unwrap().session_id;
    db.end_session(&s, None).unwrap();
    assert_eq!(db.end_session(&s, None).unwrap_err().status, Status::InvalidState);
    let r = db.learn(&LearnRequest { insight: "late note", session_id: Some(&s), ..Default::default() });
    assert_eq!(r.unwrap_err().status, Status::InvalidState);
}

#[test]
fn perceptions_are_observations_unless_their_text_says_more() {
    let db = db();
    let p = db
        .save_perception(&PerceptionRequest {
            description: "tactile force readings while lifting the ceramic mug",
            perception_type: PerceptionType::Tactile,
            data: Some(b"{\"forces\": [1.0, 2.5]}"),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(db.get(p.memory_id).unwrap().category, "observation");
}

#[test]
fn dedup_verdicts_are_symmetric() {
    let pairs = [
        (
            "grasp of red mug succeeded at 12.5N, approach 30deg",
            "Grasp of the red mug succeeded at 12.5N, approach 30deg!",
        ),
        ("grasp of red mug succeeded at 12.5N", "grasp of red mug succeeded at 15N"),
        (
            "grasp of blue tray succeeded with vacuum gripper on belt",
            "grasp of blue apple succeeded with vacuum gripper on belt",
        ),
        ("xArm7 succeeded grasping the can from the top shelf", "xArm7 failed grasping the can from the top shelf"),
        ("navigate from dock to door took 61.8 s", "navigate from door to dock took 61.8 s"),
        ("hello world test content", "hello world test content extra"),
        ("抓取白色海绵成功，夹持力34.1牛", "抓取白色海绵成功，夹持力34.1牛。"),
    ];
    for (a, b) in pairs {
        let verdict = |first: &str, second: &str| {
            let db = db();
            learn(&db, first);
            learn(&db, second).duplicate.map(|d| (d.method, (d.similarity * 1e6).round()))
        };
        assert_eq!(verdict(a, b), verdict(b, a), "{a:?} / {b:?}");
    }
    let db = db();
    learn(&db, "hello world test content");
    assert!(learn(&db, "hello world test content extra").duplicate.is_some(), "added word: duplicate");
    learn(&db, "navigate from dock to door took 61.8 s");
    assert!(learn(&db, "navigate from door to dock took 61.8 s").duplicate.is_none(), "moved words: different");
}
