//! `robotmem import` of a robot's log: 10,000 minimal lines (text, optional
//! context, session and time; no `kind`), learned as `learn` learns them, in
//! batches, through the real binary. BM25 only.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

const LINES: usize = 10_000;
const SESSIONS: usize = 100;

fn command(db: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_robotmem"));
    c.arg("--db").arg(db).args(["--no-embeddings", "--durability", "normal"]).args(args);
    c.env_remove("ROBOTMEM_MODEL_DIR");
    c
}

fn ok_json(db: &Path, args: &[&str]) -> Value {
    let o: Output = command(db, &[&["--json"], args].concat()).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Line `i` of the log: a grasp with its force and outcome, or a navigation
/// note; every 7th without context, every 5th without a session.
fn line(i: usize) -> String {
    let objects = ["red cup", "blue box", "steel bolt", "sponge", "glass jar"];
    let obj = objects[i % objects.len()];
    let force = 2.0 + (i % 97) as f64 * 0.25;
    let ok = force >= 6.0 && obj != "glass jar";
    let text = if i.is_multiple_of(3) {
        format!("trial {i}: path to the {obj} shelf blocked, detour of {} cm", 10 + i % 50)
    } else {
        format!("trial {i}: grasp of the {obj} at {force:.2} N {}", if ok { "held" } else { "slipped" })
    };
    let minute = i as i64;
    let time = format!("2026-05-{:02}T{:02}:{:02}:00Z", 1 + minute / 1440, (minute / 60) % 24, minute % 60);
    let mut v = json!({"text": text, "time": time});
    if !i.is_multiple_of(7) {
        v["context"] =
            json!({"task": {"name": format!("pick {obj}"), "success": ok}, "robot": {"id": format!("arm-{}", i % 4)}});
    }
    if !i.is_multiple_of(5) {
        v["session_id"] = json!(format!("episode-{}", i / (LINES / SESSIONS)));
    }
    v.to_string()
}

#[test]
fn ten_thousand_log_lines_are_learned() {
    let d = tempfile::Builder::new().prefix("robotmem-import-log").tempdir().unwrap();
    let db = d.path().join("m.db");
    let log = d.path().join("robot.log.jsonl");
    let mut text: String = (0..LINES).map(|i| line(i) + "\n").collect();
    // Three repeats of earlier lines (learn's dedup), and two lines it cannot read.
    for i in [10, 20, 30] {
        text += &(line(i) + "\n");
    }
    text += "{\"text\": \"grasp of the red cup\", \"robot\": \"arm-1\"}\nnot json\n";
    std::fs::write(&log, &text).unwrap();

    let start = std::time::Instant::now();
    let o = command(&db, &["--json", "import", log.to_str().unwrap()]).output().unwrap();
    let secs = start.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&o.stderr);
    // Lines it could not read make the exit status that of invalid input (11); the rest went in.
    assert_eq!(o.status.code(), Some(11), "{err}");
    assert!(err.contains("2 of 10005 lines were not imported"), "{err}");
    let s: Value = serde_json::from_slice(&o.stdout).unwrap();
    eprintln!("imported {LINES} log lines in {secs:.1} s ({:.0} lines/s): {s}", LINES as f64 / secs);
    assert_eq!(s["memories"], LINES, "{s}");
    assert_eq!(s["duplicates"], 3, "{s}");
    assert_eq!(s["errors"], 2, "{s}");
    assert_eq!(s["sessions"], SESSIONS, "a session per episode of the log: {s}");
    let errors: Vec<&str> =
        s["error_lines"].as_array().unwrap().iter().map(|e| e["message"].as_str().unwrap()).collect();
    assert!(errors[0].contains("\"robot\" is not a field of a line to learn"), "{errors:?}");
    assert!(errors[1].contains("not valid JSON"), "{errors:?}");

    let stats = ok_json(&db, &["stats"]);
    assert_eq!(
        (stats["memories"].as_u64(), stats["sessions"].as_u64()),
        (Some(LINES as u64), Some(SESSIONS as u64)),
        "{stats}"
    );
    // Classified as learn classifies, at the log's time, in its episodes.
    let hits = ok_json(&db, &["recall", "grasp of the glass jar slipped", "-n", "5"]);
    let first = &hits["memories"][0];
    assert!(first["content"].as_str().unwrap().contains("glass jar"), "{hits}");
    assert!(first["created_at"].as_str().unwrap().starts_with("2026-05-"), "{first}");
    let m = ok_json(&db, &["get", "1"]);
    assert_eq!(m["content"], "trial 0: path to the red cup shelf blocked, detour of 10 cm");
    assert_eq!(m["created_at"], "2026-05-01T00:00:00.000Z");
    assert!(m["category"].as_str().is_some_and(|c| !c.is_empty()));
    // The contexts are filterable as learned ones are.
    let failed = ok_json(&db, &["recall", "grasp slipped", "--filter", r#"{"task.success": false}"#, "-n", "20"]);
    let failed = failed["memories"].as_array().unwrap();
    assert_eq!(failed.len(), 20);
    assert!(failed.iter().all(|m| m["content"].as_str().unwrap().contains("slipped")), "{failed:?}");
    let sessions = ok_json(&db, &["sessions", "--per-page", "500"]);
    assert_eq!(sessions["total"], SESSIONS, "{sessions}");

    // The same log again: every line is held already.
    let o = command(&db, &["--json", "import", log.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(11));
    let again: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (again["memories"].as_i64(), again["duplicates"].as_i64()),
        (Some(0), Some(LINES as i64 + 3)),
        "{again}"
    );
}

#[test]
fn a_log_on_standard_input() {
    let d = tempfile::Builder::new().prefix("robotmem-import-stdin").tempdir().unwrap();
    let db = d.path().join("m.db");
    let mut child = command(&db, &["import", "-"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    writeln!(input, "{}", json!({"text": "the charger at dock 2 is faulty", "context": "maintenance"})).unwrap();
    writeln!(input, "{}", json!({"text": "dock 3 charges at 40 W"})).unwrap();
    drop(input);
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("imported 2 memories"), "{out}");
    let r = ok_json(&db, &["recall", "charger dock"]);
    assert_eq!(r["memories"].as_array().unwrap().len(), 2, "{r}");
}
