//! `robotmem export` / `import` run as processes on temporary files: a lossless
//! round trip (facts, perceptions with binary data, tags, sessions with
//! outcomes, forgotten, updated and superseded memories) with the same recall
//! results, duplicates reported, bad lines reported by number with nothing of
//! them written, vectors kept only for their model, and a streaming export.
//! BM25 only (no model needed).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use robotmem::{Db, OpenOptions, PerceptionRequest, PerceptionType};
use serde_json::{json, Value};

fn dir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("robotmem-transfer-test").tempdir().unwrap()
}

fn command(db: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_robotmem"));
    c.arg("--db")
        .arg(db)
        .args(["--no-embeddings", "--durability", "normal"])
        .args(args)
        .env_remove("ROBOTMEM_MODEL_DIR");
    c
}

fn run(db: &Path, args: &[&str]) -> Output {
    command(db, args).output().unwrap()
}

/// Runs with `--json`, asserts success, parses stdout.
fn json(db: &Path, args: &[&str]) -> Value {
    let o = run(db, &[&["--json"], args].concat());
    assert!(o.status.success(), "{args:?}: {:?} {}", o.status, String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&o.stdout)))
}

/// Contents of a recall, best first.
fn recall(db: &Path, query: &str) -> Vec<String> {
    let r = json(db, &["recall", query, "-n", "20", "--min-confidence", "0"]);
    r["memories"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap().to_string()).collect()
}

/// The lines of an export without the header (whose export time differs).
fn body(text: &str) -> Vec<Value> {
    text.lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// A database with one of everything the format carries.
fn filled(path: &Path) {
    let sid =
        json(path, &["session", "start", "--context", "kitchen shift"])["session_id"].as_str().unwrap().to_string();
    for (text, tags) in [
        ("grasp of the blue box slipped at 8N", &["gripper"][..]),
        ("grasp of the blue box slipped at 8N near the left edge of the conveyor", &[]),
        ("battery swap took four minutes at the dock", &["power", "dock"]),
    ] {
        let mut args = vec!["learn", text, "--session", &sid, "--context", r#"{"env": {"sim_or_real": "real"}}"#];
        for t in tags {
            args.extend(["--tag", t]);
        }
        json(path, &args);
    }
    let forgotten = json(path, &["learn", "the lidar is mounted upside down"])["memory_id"].as_i64().unwrap();
    json(path, &["forget", &forgotten.to_string(), "--reason", "remounted on Tuesday"]);
    let updated = json(path, &["learn", "the door sensor reads open when closed"])["memory_id"].as_i64().unwrap();
    json(path, &["update", &updated.to_string(), "the door sensor reads open when closed after rain"]);
    json(path, &["learn", "the red cup is kept on the top shelf", "--collection", "kitchen"]);
    let ended = json(path, &["session", "end", &sid, "--outcome", "0.75"]);
    assert_eq!(ended["consolidated"]["superseded_count"], 1, "{ended}");
    let mut o = OpenOptions::path(path);
    o.embeddings = false;
    let db = Db::open(o).unwrap();
    db.save_perception(&PerceptionRequest {
        description: "contact force trace of the left finger",
        perception_type: PerceptionType::Tactile,
        data: Some(&[0, 159, 146, 150, 255, b'\n', b'"']),
        metadata: Some(r#"{"rate_hz": 100, "unit": "N"}"#),
        tags: &["force"],
        ..Default::default()
    })
    .unwrap();
    db.close().unwrap();
}

const QUERIES: [&str; 5] = ["blue box grasp", "battery dock", "door sensor", "force trace finger", "*"];

#[test]
fn export_then_import_into_a_new_file_is_lossless() {
    let d = dir();
    let (a, b, file) = (d.path().join("a.db"), d.path().join("b.db"), d.path().join("a.jsonl"));
    filled(&a);
    let out = json(&a, &["export", "--out", file.to_str().unwrap()]);
    assert_eq!((out["memories"].as_u64(), out["sessions"].as_u64()), (Some(7), Some(1)), "{out}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!d.path().join("a.jsonl.partial").exists());

    let sum = json(&b, &["import", file.to_str().unwrap()]);
    assert_eq!(
        (sum["memories"].as_u64(), sum["sessions"].as_u64(), sum["errors"].as_u64()),
        (Some(7), Some(1), Some(0)),
        "{sum}"
    );
    assert_eq!(sum["unresolved_superseded"], 0);
    // Exported again, the new file says the same, line for line (a new file gives the same ids).
    let again = run(&b, &["export"]);
    assert!(again.status.success());
    assert_eq!(body(&String::from_utf8(again.stdout).unwrap()), body(&text));
    for q in QUERIES {
        assert_eq!(recall(&b, q), recall(&a, q), "{q}");
    }
    let kinds: Vec<(String, String)> =
        body(&text).iter().map(|v| (v["kind"].to_string(), v["status"].to_string())).collect();
    for want in ["\"superseded\"", "\"invalidated\"", "\"active\""] {
        assert!(kinds.iter().any(|(_, s)| s == want), "{want}: {kinds:?}");
    }
    // The binary data survived byte for byte (shown as base64 by get).
    let p = json(&b, &["get", "7"]);
    assert_eq!(p["perception_data"]["base64"], "AJ+Slv8KIg==", "{p}");
    assert_eq!(p["perception_metadata"], r#"{"rate_hz": 100, "unit": "N"}"#);
    assert_eq!(json(&b, &["get", "4"])["status"], "invalidated");
}

#[test]
fn export_piped_into_import_and_one_collection() {
    let d = dir();
    let (a, b) = (d.path().join("a.db"), d.path().join("b.db"));
    filled(&a);
    let mut export = command(&a, &["export", "--collection", "kitchen"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let import =
        command(&b, &["--json", "import", "-"]).stdin(Stdio::from(export.stdout.take().unwrap())).output().unwrap();
    assert!(export.wait().unwrap().success() && import.status.success(), "{}", String::from_utf8_lossy(&import.stderr));
    let sum: Value = serde_json::from_slice(&import.stdout).unwrap();
    assert_eq!((sum["memories"].as_u64(), sum["sessions"].as_u64()), (Some(1), Some(0)), "{sum}");
    let r = json(&b, &["recall", "red cup", "--collection", "kitchen"]);
    assert_eq!(r["memories"][0]["content"], "the red cup is kept on the top shelf");
}

#[test]
fn import_into_a_non_empty_database_reports_duplicates() {
    let d = dir();
    let (a, b, file) = (d.path().join("a.db"), d.path().join("b.db"), d.path().join("a.jsonl"));
    filled(&a);
    json(&a, &["export", "--out", file.to_str().unwrap()]);
    let existing = json(&b, &["learn", "battery swap took four minutes at the dock"])["memory_id"].as_i64().unwrap();
    let sum = json(&b, &["import", file.to_str().unwrap()]);
    assert_eq!((sum["memories"].as_u64(), sum["duplicates"].as_u64()), (Some(6), Some(1)), "{sum}");
    assert_eq!(sum["duplicate_lines"][0]["existing_id"], existing);
    assert_eq!(recall(&b, "battery dock"), ["battery swap took four minutes at the dock"]);

    // The same file again: every line is already held, nothing is stored twice.
    let o = run(&b, &["import", file.to_str().unwrap()]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.starts_with("imported 0 memories and 0 sessions from "), "{text}");
    assert!(text.contains("7 duplicates not stored again") && text.contains("1 session was already present"), "{text}");
    assert_eq!(json(&b, &["stats"])["memories"], 7);
}

#[test]
fn bad_lines_are_reported_by_number_and_nothing_of_them_is_written() {
    let d = dir();
    let (a, b, file) = (d.path().join("a.db"), d.path().join("b.db"), d.path().join("bad.jsonl"));
    json(&a, &["learn", "the arm homes before every grasp"]);
    let good = run(&a, &["export"]).stdout;
    let lines: Vec<Value> =
        String::from_utf8(good).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let memory = |f: &dyn Fn(&mut serde_json::Map<String, Value>)| {
        let mut m = lines[1].clone();
        f(m.as_object_mut().unwrap());
        m.to_string()
    };
    let bad = [
        lines[0].to_string(),                                                       // 1 header
        "{\"kind\": \"memory\", \"content\": ".to_string(),                         // 2 broken JSON
        memory(&|m| drop(m.remove("content"))),                                     // 3 missing field
        memory(&|m| drop(m.insert("confidence".into(), json!("high")))),            // 4 wrong type
        memory(&|m| drop(m.insert("content".into(), json!("x".repeat(301))))),      // 5 oversize text
        memory(&|m| drop(m.insert("session_id".into(), json!("no-such-session")))), // 6 refused by the database
        lines[1].to_string(),                                                       // 7 good
    ];
    std::fs::File::create(&file).unwrap().write_all(bad.join("\n").as_bytes()).unwrap();
    let o = run(&b, &["--json", "import", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(11), "{}", String::from_utf8_lossy(&o.stderr));
    let sum: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((sum["memories"].as_u64(), sum["errors"].as_u64()), (Some(1), Some(5)), "{sum}");
    let errors: Vec<(u64, String)> = sum["error_lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["line"].as_u64().unwrap(), e["message"].as_str().unwrap().to_string()))
        .collect();
    let expect = [
        (2, "line 2: not valid JSON"),
        (3, "line 3: content is missing"),
        (4, "line 4: confidence must be a number (got a string)"),
        (5, "line 5: content has 301 characters after trimming; the limit is 300"),
        (6, "line 6: session_id \"no-such-session\" names no session"),
    ];
    for ((line, msg), (want_line, want)) in errors.iter().zip(expect) {
        assert_eq!(*line, want_line);
        assert!(msg.starts_with(want), "{msg}");
    }
    let err: Value = serde_json::from_slice(&o.stderr).unwrap();
    assert_eq!(err["error"]["status"], "RM_INVALID_ARGUMENT");
    // Only the good line is in the database, with its tags and nothing else.
    let stats = json(&b, &["stats"]);
    assert_eq!(stats["memories"], 1, "{stats}");
    assert_eq!(recall(&b, "grasp"), ["the arm homes before every grasp"]);

    // In text, each bad line goes to stderr as it is met.
    let c = d.path().join("c.db");
    let o = run(&c, &["import", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(11));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.starts_with("robotmem: line 2: not valid JSON"), "{err}");
    assert!(err.contains("robotmem: 5 of 7 lines were not imported"), "{err}");
    assert!(!err.contains("panicked") && !err.contains(".rs:"), "{err}");
}

/// A memory line as an exporter would write it (`id` ≥ 1).
fn memory_line(id: usize, content: &str, vector: Option<&[f32]>) -> String {
    let vector = vector.map(|v| robotmem::render::base64(&v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()));
    json!({
        "kind": "memory", "id": id, "type": "fact", "collection": "default", "content": content,
        "context": {"source": "learn_tool"}, "category": "observation", "confidence": 0.9, "decay_rate": 0.01,
        "status": "active", "created_at": "2026-01-01T00:00:00.000Z", "updated_at": "2026-01-01T00:00:00.000Z",
        "vector": vector,
    })
    .to_string()
}

fn header(model: &str) -> String {
    json!({"kind": "header", "format": "robotmem-export", "version": 1, "vectors": true, "model": model}).to_string()
}

#[test]
fn vectors_are_kept_only_for_the_same_model() {
    let d = dir();
    let (v, file, other) = (d.path().join("v.db"), d.path().join("v.jsonl"), d.path().join("o.jsonl"));
    let vector = [0.5f32, -0.5, 0.5, -0.5];
    let text =
        [header("test-model/4/abc"), memory_line(1, "the arm homes before every grasp", Some(&vector))].join("\n");
    std::fs::write(&file, text).unwrap();
    let sum = json(&v, &["import", file.to_str().unwrap()]);
    assert_eq!((sum["vectors"].as_u64(), sum["waiting_for_vector"].as_u64()), (Some(1), Some(0)), "{sum}");
    assert_eq!(json(&v, &["status"])["stored_model"], "test-model/4/abc");
    let out = String::from_utf8(run(&v, &["export", "--vectors"]).stdout).unwrap();
    let lines = body(&out);
    assert_eq!(
        lines[0]["vector"],
        serde_json::from_str::<Value>(&memory_line(1, "x", Some(&vector))).unwrap()["vector"]
    );

    // Another model's vectors are not kept: the memory waits for reembed.
    let text = [header("other-model/4/xyz"), memory_line(7, "the gripper closes in 300 ms", Some(&vector))].join("\n");
    std::fs::write(&other, text).unwrap();
    let sum = json(&v, &["import", other.to_str().unwrap()]);
    assert_eq!(
        (sum["memories"].as_u64(), sum["vectors_dropped"].as_u64(), sum["waiting_for_vector"].as_u64()),
        (Some(1), Some(1), Some(1)),
        "{sum}"
    );
    // A vector of the wrong size is a bad line.
    let text = [header("test-model/4/abc"), memory_line(8, "the camera runs at 30 fps", Some(&[1.0, 0.0]))].join("\n");
    std::fs::write(&other, text).unwrap();
    let o = run(&v, &["--json", "import", other.to_str().unwrap()]);
    let sum: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(sum["error_lines"][0]["message"], "line 2: vector has 2 values; the header's model has 4");
}

#[test]
fn export_streams_twenty_thousand_memories() {
    const N: usize = 20_000;
    let d = dir();
    let (a, b, file) = (d.path().join("a.db"), d.path().join("b.db"), d.path().join("big.jsonl"));
    let mut w = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
    for i in 1..=N {
        writeln!(w, "{}", memory_line(i, &format!("probe {i} read {} mm at station {}", i * 7, i % 97), None)).unwrap();
    }
    w.flush().unwrap();
    let sum = json(&a, &["import", file.to_str().unwrap()]);
    assert_eq!(sum["memories"].as_u64(), Some(N as u64), "{sum}");

    // The export is still running when its first lines arrive: it writes as it
    // reads (its ~10 MB cannot sit in a pipe), and import reads as it comes.
    let mut export = command(&a, &["export"]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut out = BufReader::new(export.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let head: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(head["memories"].as_u64(), Some(N as u64));
    assert!(export.try_wait().unwrap().is_none(), "export finished before its output was read");
    let mut import = command(&b, &["--json", "import"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut stdin = import.stdin.take().unwrap();
    stdin.write_all(first.as_bytes()).unwrap();
    std::io::copy(&mut out, &mut stdin).unwrap();
    drop(stdin);
    assert!(export.wait().unwrap().success());
    let o = import.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sum: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((sum["memories"].as_u64(), sum["lines"].as_u64()), (Some(N as u64), Some(N as u64 + 1)), "{sum}");
    assert_eq!(recall(&b, "probe 12345"), recall(&a, "probe 12345"));
}

#[test]
fn a_missing_file_or_a_newer_format_is_refused() {
    let d = dir();
    let db: PathBuf = d.path().join("m.db");
    let o = run(&db, &["import", d.path().join("nope.jsonl").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(15), "{}", String::from_utf8_lossy(&o.stderr));
    let newer = d.path().join("newer.jsonl");
    std::fs::write(&newer, r#"{"kind": "header", "format": "robotmem-export", "version": 2}"#).unwrap();
    let o = run(&db, &["import", newer.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(20), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("line 1: version 2 is newer than this robotmem reads (1)"));
}
