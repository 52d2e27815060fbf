//! Export → import round trips on in-memory databases.

use super::*;
use crate::options::OpenOptions;
use crate::types::{LearnRequest, PerceptionRequest, PerceptionType, RecallRequest};

fn open() -> Db {
    let mut o = OpenOptions::in_memory();
    o.embeddings = false;
    Db::open(o).unwrap()
}

fn export(db: &Db, o: &ExportOptions) -> String {
    let mut out = String::new();
    db.export_each(o, |l| {
        out.push_str(l.json);
        out.push('\n');
        Ok(())
    })
    .unwrap();
    out
}

fn import(db: &Db, text: &str) -> (ImportSummary, Vec<(u64, LineOutcome)>) {
    let mut seen = Vec::new();
    let sum = db.import_lines(text.as_bytes(), |n, o| seen.push((n, o.clone()))).unwrap();
    (sum, seen)
}

fn learn(db: &Db, text: &str, session: Option<&str>) -> i64 {
    db.learn(&LearnRequest { insight: text, session_id: session, tags: &["Robot Arm"], ..Default::default() })
        .unwrap()
        .memory_id
}

fn recall_texts(db: &Db, q: &str) -> Vec<String> {
    let r = db.recall(&RecallRequest { query: q, n: 20, min_confidence: 0.0, ..Default::default() }).unwrap();
    r.hits.into_iter().map(|h| h.memory.content).collect()
}

#[test]
fn round_trip_keeps_everything() {
    let a = open();
    let s = a.start_session(None, Some("kitchen run")).unwrap().session_id;
    learn(&a, "grasp the red cup with 12.5N force succeeded", Some(&s));
    let forgotten = learn(&a, "the gripper camera is mounted upside down", None);
    a.forget(forgotten, "remounted").unwrap();
    let data = [0u8, 159, 146, 150, 255];
    a.save_perception(&PerceptionRequest {
        description: "contact force trace of the left finger",
        perception_type: PerceptionType::Tactile,
        data: Some(&data),
        metadata: Some(r#"{"rate_hz": 100}"#),
        ..Default::default()
    })
    .unwrap();
    a.end_session(&s, Some(0.75)).unwrap();
    let file = export(&a, &ExportOptions::default());
    assert!(file.lines().next().unwrap().contains(r#""kind":"header""#));

    let b = open();
    let (sum, seen) = import(&b, &file);
    assert_eq!((sum.memories, sum.sessions, sum.errors, sum.duplicates), (3, 1, 0, 0), "{seen:?}");
    assert_eq!(sum.waiting_for_vector, 2, "two active memories");
    // Same file back out (ids and export time aside): everything survived.
    let strip = |t: &str| -> Vec<Value> {
        t.lines()
            .skip(1)
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).unwrap();
                v.as_object_mut().unwrap().remove("id");
                v
            })
            .collect()
    };
    assert_eq!(strip(&export(&b, &ExportOptions::default())), strip(&file));
    assert_eq!(recall_texts(&b, "grasp cup force"), recall_texts(&a, "grasp cup force"));
    assert_eq!(b.tags(1).unwrap(), a.tags(1).unwrap());

    // Again into the same database: nothing is stored twice.
    let (again, _) = import(&b, &file);
    assert_eq!((again.memories, again.duplicates, again.sessions_existing), (0, 3, 1));
}

#[test]
fn superseded_points_at_the_new_id() {
    let a = open();
    let s = a.start_session(None, None).unwrap().session_id;
    // The shorter text first: its replacement comes later in the file.
    for t in [
        "grasp of the blue box slipped at 8N",
        "grasp of the blue box slipped at 8N near the left edge of the conveyor",
        "battery swap took four minutes at the dock",
    ] {
        learn(&a, t, Some(&s));
    }
    // A few memories first so that ids differ in the second database.
    let b = open();
    learn(&b, "an unrelated memory about the charging dock", None);
    a.end_session(&s, None).unwrap();
    let file = export(&a, &ExportOptions::default());
    let superseded: Vec<Value> = file
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["status"] == "superseded")
        .collect();
    assert_eq!(superseded.len(), 1, "{file}");
    let (sum, _) = import(&b, &file);
    assert_eq!(sum.unresolved_superseded, 0);
    // Ids 2-4 here: the superseded memory (2) points at its replacement's new id (3).
    let m = b.get(2).unwrap();
    assert_eq!((m.status, m.superseded_by), (MemoryStatus::Superseded, Some(3)));
    assert!(b.get(3).unwrap().content.ends_with("edge of the conveyor"));
}

#[test]
fn bad_lines_write_nothing_and_the_rest_goes_in() {
    let a = open();
    learn(&a, "first memory about the door sensor", None);
    learn(&a, "second memory about the lidar mount", None);
    let file = export(&a, &ExportOptions::default());
    let lines: Vec<&str> = file.lines().collect();
    let broken = lines[1].replace(r#""category":"#, r#""category":7,"x":"#);
    let text = format!("{}\n{}\n{{not json\n\n{}\n", lines[0], broken, lines[2]);
    let b = open();
    let (sum, seen) = import(&b, &text);
    assert_eq!((sum.memories, sum.errors), (1, 2));
    let errors: Vec<String> = seen
        .iter()
        .filter_map(|(_, o)| match o {
            LineOutcome::Error(e) => Some(e.message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(errors[0], "line 2: category must be a string (got a number)");
    assert!(errors[1].starts_with("line 3: not valid JSON"), "{errors:?}");
    assert_eq!(recall_texts(&b, "lidar door"), ["second memory about the lidar mount"]);
}

#[test]
fn long_lines_are_skipped_whole() {
    let text = format!("{}\n{{}}\r\nlast", "x".repeat(100));
    let mut r = text.as_bytes();
    let mut buf = Vec::new();
    assert_eq!(read_line(&mut r, &mut buf, 50).unwrap(), Some(false));
    assert_eq!(read_line(&mut r, &mut buf, 50).unwrap(), Some(true));
    assert_eq!(buf, b"{}");
    assert_eq!(read_line(&mut r, &mut buf, 50).unwrap(), Some(true));
    assert_eq!(buf, b"last");
    assert_eq!(read_line(&mut r, &mut buf, 50).unwrap(), None);
}

#[test]
fn vectors_keep_their_model() {
    // A database stamped by a model this handle does not load: vectors are
    // exported with the stamp and kept by a database without a model.
    let a = open();
    let id = learn(&a, "the arm homes before every grasp", None);
    let stamp = ModelStamp { name: "test-model".into(), dim: 4, hash: "abc".into() };
    a.write(|tx| {
        vectors::adopt(tx, &stamp)?;
        vectors::put(tx, id, "default", &[0.5, 0.5, 0.5, 0.5]).map(drop)
    })
    .unwrap();
    let file = export(&a, &ExportOptions { vectors: true, ..Default::default() });
    let b = open();
    let (sum, _) = import(&b, &file);
    assert_eq!((sum.vectors, sum.waiting_for_vector), (1, 0));
    assert_eq!(sum.db_model.as_deref(), Some("test-model/4/abc"));
    assert_eq!(b.store.read(|c| vectors::get(c, 1)).unwrap(), Some(vec![0.5; 4]));

    // Another model's database leaves them for reembed.
    let c = open();
    c.write(|tx| vectors::adopt(tx, &ModelStamp { name: "other".into(), dim: 4, hash: "x".into() }).map(drop)).unwrap();
    let (sum, _) = import(&c, &file);
    assert_eq!((sum.vectors, sum.vectors_dropped, sum.waiting_for_vector), (0, 1, 1));
}

#[test]
fn minimal_lines_are_learned() {
    let db = open();
    let known = learn(&db, "the left camera needs recalibration after transport", None);
    let log = [
        r#"{"text": "grasp the red cup with 12.5N force succeeded", "context": {"task": {"success": true}}, "session_id": "ep-1", "time": "2026-03-01T10:00:00+02:00"}"#,
        r#"{"text": "dropped the cup when the force was 4N", "context": "kitchen counter", "session_id": "ep-1", "time": "2026-03-01T10:05:00Z", "tags": ["Grip Test"]}"#,
        r#"{"text": "the left camera needs recalibration after transport"}"#,
        r#"{"text": "avoid the wet floor area near the sink", "collection": "lab"}"#,
        r#"{"text": "x", "robot": "r1"}"#,
        r#"{"text": "", "session_id": "ep-2"}"#,
        r#"{"text": "fine", "time": "yesterday"}"#,
        r#"{"text": "fine", "context": 3}"#,
    ]
    .join("\n");
    let (sum, seen) = import(&db, &log);
    assert_eq!((sum.memories, sum.duplicates, sum.errors, sum.sessions), (3, 1, 4, 1), "{seen:?}");
    let id = |n: u64| match &seen[n as usize - 1].1 {
        LineOutcome::Memory { id, .. } => *id,
        o => panic!("line {n}: {o:?}"),
    };
    assert_eq!(seen[2].1, LineOutcome::Duplicate { existing_id: known }, "learn's dedup applies");
    let first = db.get(id(1)).unwrap();
    assert_eq!(first.created_at, "2026-03-01T08:00:00.000Z", "the line's time, in UTC");
    assert_eq!(first.session_id.as_deref(), Some("ep-1"));
    assert!(first.context.contains(r#""success":true"#), "{}", first.context);
    let second = db.get(id(2)).unwrap();
    assert_ne!(first.category, "", "classified as learn classifies");
    assert!(second.context.contains("kitchen counter"), "{}", second.context);
    assert!(db.tags(id(2)).unwrap().iter().any(|t| t == "grip_test"));
    assert_eq!(db.get(id(4)).unwrap().collection, "lab");
    // The session made for the log's episode spans its lines' times.
    let page = db.sessions(0, 10).unwrap();
    let ep = page.sessions.iter().find(|s| s.session_id == "ep-1").expect("session ep-1 made");
    assert_eq!(
        (ep.created_at.as_str(), ep.ended_at.as_deref()),
        ("2026-03-01T08:00:00.000Z", Some("2026-03-01T10:05:00.000Z"))
    );
    let messages: Vec<String> = seen[4..]
        .iter()
        .map(|(_, o)| match o {
            LineOutcome::Error(e) => e.message.clone(),
            o => panic!("{o:?}"),
        })
        .collect();
    assert!(messages[0].starts_with("line 5: ") && messages[0].contains("\"robot\" is not a field"), "{messages:?}");
    assert!(messages[1].contains("text"), "{messages:?}");
    assert!(messages[2].contains("time") && messages[2].contains("RFC 3339"), "{messages:?}");
    assert!(messages[3].contains("context must be an object or a string"), "{messages:?}");
    assert!(recall_texts(&db, "red cup force").iter().any(|t| t.contains("12.5N")));
}
