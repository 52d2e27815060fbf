//! The `robotmem` command, run as a process on temporary files: every
//! subcommand's JSON and text output, exit codes per status, and errors that
//! name the field and never show a panic or a source path. BM25 only (no model
//! needed); the model path is covered by the library's tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

struct Run {
    dir: tempfile::TempDir,
}

impl Run {
    fn new() -> Run {
        Run { dir: tempfile::Builder::new().prefix("robotmem-cli-test").tempdir().unwrap() }
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("m.db")
    }

    fn raw(&self, args: &[&str]) -> Output {
        let db = self.db();
        Command::new(env!("CARGO_BIN_EXE_robotmem"))
            .arg("--db")
            .arg(&db)
            .args(["--no-embeddings", "--durability", "normal"])
            .args(args)
            .env_remove("ROBOTMEM_MODEL_DIR")
            .output()
            .unwrap()
    }

    /// Runs with `--json`; asserts success; the parsed stdout.
    fn json(&self, args: &[&str]) -> Value {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        let o = self.raw(&a);
        assert!(o.status.success(), "{args:?}: {:?} {}", o.status, String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&o.stdout)))
    }

    /// Runs with `--json`, expecting failure with exit code 10 + status; the error document (stderr).
    fn fails(&self, args: &[&str], code: i32) -> Value {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        let o = self.raw(&a);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(o.stdout.is_empty(), "{args:?}: nothing on stdout");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked") && !err.contains(".rs:"), "{args:?}: {err}");
        serde_json::from_str(&err).unwrap_or_else(|e| panic!("{args:?}: {e}: {err}"))
    }

    fn text(&self, args: &[&str]) -> String {
        let o = self.raw(args);
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    }
}

fn learn(r: &Run, text: &str, extra: &[&str]) -> i64 {
    let mut a = vec!["learn", text];
    a.extend_from_slice(extra);
    let v = r.json(&a);
    assert_eq!(v["status"], "created", "{v}");
    v["memory_id"].as_i64().unwrap()
}

#[test]
fn learn_recall_get_update_forget() {
    let r = Run::new();
    let cup = learn(
        &r,
        "grip_force=12.5N works best for the ceramic cup",
        &["--context", r#"{"task": {"success": true}, "spatial": {"pos": [1, 2, 0]}}"#, "--tag", "Ceramic Cup"],
    );
    let lidar = learn(&r, "Lidar gets confused by glass walls in the lobby", &["--collection", "nav"]);
    let dup = r.json(&["learn", "grip_force=12.5N works best for the ceramic cup"]);
    assert_eq!((dup["status"].as_str(), dup["existing_id"].as_i64()), (Some("duplicate"), Some(cup)));

    let hits = r.json(&["recall", "ceramic cup force", "-n", "3"]);
    assert_eq!(hits["mode"], "bm25_only");
    assert_eq!(hits["memories"][0]["id"].as_i64(), Some(cup));
    let filtered = r.json(&["recall", "anything", "--filter", r#"{"task.success": true}"#]);
    assert_eq!(filtered["memories"][0]["id"].as_i64(), Some(cup), "a filter is a constraint over all memories");
    let spatial = r.json(&["recall", "*", "--spatial", r#"{"field": "spatial.pos", "target": [1, 2, 0]}"#]);
    assert_eq!(spatial["memories"][0]["_distance"].as_f64(), Some(0.0), "{spatial}");
    assert_eq!(r.json(&["recall", "glass", "--collection", "nav"])["memories"][0]["id"].as_i64(), Some(lidar));
    for i in 1..=3 {
        learn(&r, &format!("dock {i} failed: wheels slipped on the wet floor at {i}0:15"), &[]);
    }
    let g = r.json(&["recall", "wheels slipped wet floor", "--group-similar"]);
    assert_eq!(g["memories"].as_array().unwrap().len(), 1, "{g}");
    assert_eq!(g["memories"][0]["_similar"].as_array().unwrap().len(), 2, "{g}");
    assert!(r.text(&["recall", "wheels slipped wet floor", "--group-similar"]).contains("+ 2 similar: #"));

    let got = r.json(&["get", &cup.to_string()]);
    assert_eq!(got["content"], "grip_force=12.5N works best for the ceramic cup");
    assert!(got["tags"].as_array().unwrap().iter().any(|t| t == "ceramic_cup"), "{got}");
    let text = r.text(&["get", &cup.to_string()]);
    assert!(text.contains("ceramic_cup") && text.contains("\"success\": true"), "{text}");

    let up = r.json(&["update", &lidar.to_string(), "Lidar is confused by glass doors in the lobby"]);
    assert_eq!(up["status"], "updated");
    let f = r.json(&["forget", &lidar.to_string(), "--reason", "miscalibrated sensor"]);
    assert_eq!(f["status"], "forgotten");
    let again = r.fails(&["forget", &lidar.to_string(), "--reason", "twice"], 19);
    assert_eq!(again["error"]["status"], "RM_INVALID_STATE");
    assert!(r.json(&["recall", "glass", "--collection", "nav"])["memories"].as_array().unwrap().is_empty());
}

#[test]
fn expiry_by_ttl_time_and_expire() {
    let r = Run::new();
    let gone = learn(&r, "the loading ramp at gate 7 is closed", &["--expires-at", "2020-01-01T00:00:00Z"]);
    let soon = learn(&r, "the lift at gate 7 is out of order", &["--ttl", "3600"]);
    let m = r.json(&["get", &gone.to_string()]);
    assert_eq!((m["expired"].as_bool(), m["status"].as_str()), (Some(true), Some("active")), "{m}");
    assert!(r.text(&["get", &gone.to_string()]).contains("[active, expired]"));
    assert!(r.text(&["get", &soon.to_string()]).contains("expires at 20"));
    let ids = |r: &Run| -> Vec<i64> {
        let v = r.json(&["recall", "gate 7", "--min-confidence", "0"]);
        v["memories"].as_array().unwrap().iter().map(|m| m["id"].as_i64().unwrap()).collect()
    };
    assert_eq!(ids(&r), vec![soon]);
    assert_eq!(r.json(&["stats"])["expired"], 1);
    assert!(r.text(&["expire", &gone.to_string(), "--ttl", "60"]).contains("expires at"));
    assert_eq!(ids(&r).len(), 2);
    assert_eq!(r.text(&["expire", &soon.to_string()]), format!("#{soon}: never expires\n"));
    let e = r.fails(&["learn", "x", "--ttl", "0"], 11);
    assert!(e["error"]["message"].as_str().unwrap().contains("ttl_seconds"), "{e}");
    r.fails(&["expire", &soon.to_string(), "--ttl", "5", "--expires-at", "2030-01-01T00:00:00Z"], 11);
    r.fails(&["expire", "999", "--ttl", "5"], 12);
}

#[test]
fn history_and_as_of() {
    let r = Run::new();
    let id = learn(&r, "the left gripper pad is worn; grip force 12 N holds mugs", &[]);
    let learned = r.json(&["get", &id.to_string()])["created_at"].as_str().unwrap().to_string();
    r.json(&["update", &id.to_string(), "the left gripper pad was replaced; grip force 8 N holds mugs"]);
    r.json(&["forget", &id.to_string(), "--reason", "swapped for a suction cup"]);
    let h = r.json(&["history", &id.to_string()]);
    let versions = h["versions"].as_array().unwrap();
    let causes: Vec<&str> = versions.iter().map(|v| v["cause"].as_str().unwrap()).collect();
    assert_eq!(causes, ["learn", "update", "forget"], "{h}");
    assert_eq!(versions[2]["invalidated_reason"], "swapped for a suction cup");
    let text = r.text(&["history", &id.to_string()]);
    assert!(text.contains("3 version(s)") && text.contains("update") && text.contains("worn"), "{text}");
    // As of the learn: the first text, active, recalled and listed.
    let then = r.json(&["get", &id.to_string(), "--as-of", &learned]);
    assert_eq!((then["status"].as_str(), then["as_of"].as_str()), (Some("active"), Some(learned.as_str())), "{then}");
    assert!(then["content"].as_str().unwrap().contains("worn"));
    let hits = r.json(&["recall", "gripper pad", "--as-of", &learned]);
    assert_eq!(hits["memories"][0]["id"].as_i64(), Some(id), "{hits}");
    assert!(r.json(&["recall", "gripper pad"])["memories"].as_array().unwrap().is_empty(), "forgotten now");
    assert_eq!(r.json(&["list", "--as-of", &learned])["total"], 1);
    assert_eq!(r.json(&["list"])["total"], 0, "the active listing of now");
    // Bad times: invalid argument (exit 11), naming the field; an unknown memory: not found (12).
    let e = r.fails(&["recall", "gripper", "--as-of", "yesterday"], 11);
    assert!(e["error"]["message"].as_str().unwrap().contains("as_of"), "{e}");
    r.fails(&["get", &id.to_string(), "--as-of", "2999-01-01T00:00:00Z"], 11);
    r.fails(&["history", "999"], 12);
    r.fails(&["history", "0"], 11);
}

#[test]
fn errors_name_the_field_and_map_to_exit_codes() {
    let r = Run::new();
    let e = r.fails(&["learn", "   "], 11);
    assert!(e["error"]["message"].as_str().unwrap().contains("insight"), "{e}");
    let e = r.fails(&["recall", "x", "--min-confidence", "2"], 11);
    assert!(e["error"]["message"].as_str().unwrap().contains("min_confidence"), "{e}");
    let e = r.fails(&["recall", "x", "--filter", "{not json"], 11);
    assert!(e["error"]["message"].as_str().unwrap().contains("context_filter"), "{e}");
    r.fails(&["get", "999"], 12);
    let e = r.fails(&["get", "0"], 11);
    assert!(e["error"]["message"].as_str().unwrap().contains("memory_id"), "{e}");
    r.fails(&["session", "end", "no-such-session"], 12);
    r.fails(&["list", "--per-page", "501"], 11);
    r.fails(&["list", "--page", "0"], 11);
    // A usage error is clap's (exit 2), with a message and no panic.
    let o = r.raw(&["recall"]);
    assert_eq!(o.status.code(), Some(2));
    // Not a database: corrupt (16), the message says so and the file is untouched.
    let bogus = r.dir.path().join("not-a-db");
    std::fs::write(&bogus, b"hello, this is not sqlite at all, not even close......................................")
        .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_robotmem"))
        .arg("--db")
        .arg(&bogus)
        .args(["--no-embeddings", "stats"])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(16) | Some(15)), "{:?} {}", o.status, String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("robotmem: ") && !err.contains(".rs:"), "{err}");
}

#[test]
fn sessions_list_stats_doctor() {
    let r = Run::new();
    for i in 1..=7 {
        learn(&r, &format!("grasp {i} of the red cup at {i}.5N succeeded"), &[]);
    }
    let s = r.json(&["session", "start", "--context", r#"{"robot": {"id": "arm-1"}}"#]);
    let sid = s["session_id"].as_str().unwrap().to_string();
    learn(&r, "pushed the box 0.3 m toward the wall", &["--session", &sid]);
    learn(&r, "the box tipped over at the edge", &["--session", &sid]);
    let ended = r.json(&["session", "end", &sid, "--outcome", "0.75"]);
    assert_eq!(ended["status"], "ended");
    r.json(&["forget", "2", "--reason", "wrong force sensor"]);
    r.json(&["recall", "zebra crossing"]); // matches nothing

    let p = r.json(&["list", "--per-page", "4"]);
    assert_eq!(p["total"], 8);
    let ids: Vec<i64> = p["memories"].as_array().unwrap().iter().map(|m| m["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [9, 8, 7, 6], "newest first");
    let p2 = r.json(&["list", "--per-page", "4", "--page", "2"]);
    let ids: Vec<i64> = p2["memories"].as_array().unwrap().iter().map(|m| m["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [5, 4, 3, 1], "the forgotten #2 is not active");
    assert_eq!(r.json(&["list", "--status", "forgotten"])["memories"][0]["id"], 2);
    assert_eq!(r.json(&["list", "--status", "all"])["total"], 9);
    assert_eq!(
        r.json(&["list", "--session", &sid, "--oldest-first"])["memories"][0]["content"],
        "pushed the box 0.3 m toward the wall"
    );
    assert_eq!(r.json(&["list", "--min-confidence", "0.99"])["total"], 0);
    assert_eq!(r.json(&["list", "--days", "1"])["total"], 8);

    let st = r.json(&["stats"]);
    assert_eq!((st["memories"].as_i64(), st["active"].as_i64(), st["forgotten"].as_i64()), (Some(9), Some(8), Some(1)));
    assert_eq!(st["sessions"], 1);
    assert_eq!(st["confidence_histogram"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).sum::<i64>(), 8);
    assert!(st["recalls"].as_i64().unwrap() >= 1 && st["zero_hit_recalls"].as_i64().unwrap() >= 1, "{st}");

    let ss = r.json(&["sessions"]);
    assert_eq!(ss["sessions"][0]["memory_count"], 2);
    assert_eq!(ss["sessions"][0]["outcome_score"], 0.75);
    let tl = r.json(&["sessions", &sid]);
    assert_eq!(tl["total"], 2);

    let d = r.json(&["doctor", "--full"]);
    assert_eq!(d["ok"], true, "{d}");
    assert!(d["checks"].as_array().unwrap().iter().any(|c| c["name"] == "checksums"));
}

#[test]
fn perceive_status_reembed() {
    let r = Run::new();
    let data = r.dir.path().join("trace.json");
    std::fs::write(&data, r#"{"force": [0.1, 0.5, 2.0, 4.5, 4.4], "units": "N"}"#).unwrap();
    let p = r.json(&[
        "perceive",
        "force while grasping the red cup",
        "--type",
        "tactile",
        "--data",
        data.to_str().unwrap(),
        "--metadata",
        r#"{"rate_hz": 100}"#,
    ]);
    assert_eq!((p["status"].as_str(), p["perception_type"].as_str()), (Some("created"), Some("tactile")), "{p}");
    let id = p["memory_id"].as_i64().unwrap();
    let got = r.json(&["get", &id.to_string()]);
    assert_eq!(got["perception_data"]["force"][3], 4.5);
    assert_eq!(got["perception_metadata"], r#"{"rate_hz": 100}"#);
    let bin = r.dir.path().join("frame.bin");
    std::fs::write(&bin, [0u8, 159, 146, 150, 255]).unwrap();
    let b = r.json(&["perceive", "a depth frame of the shelf", "--type", "visual", "--data", bin.to_str().unwrap()]);
    let got = r.json(&["get", &b["memory_id"].to_string()]);
    assert_eq!(got["perception_data"]["base64"], "AJ+Slv8=", "binary data comes back as base64");
    let e = r.fails(&["perceive", "force while grasping", "--type", "smell"], 11);
    assert!(e["error"]["message"].as_str().unwrap().contains("perception_type"), "{e}");
    let e =
        r.fails(&["perceive", "force while grasping", "--type", "tactile", "--data", "/nonexistent/trace.json"], 15);
    assert!(e["error"]["message"].as_str().unwrap().contains("data"), "{e}");

    let st = r.json(&["status"]);
    assert_eq!(st["state"], "unavailable");
    assert_eq!(st["pending"], 2);
    let e = r.fails(&["reembed"], 17);
    assert_eq!(e["error"]["status"], "RM_EMBEDDING_UNAVAILABLE");
}

/// With the default model: memories get vectors, and doctor checks the vector
/// index against the table (skipped loudly without the provisioned model).
#[test]
fn doctor_with_the_model() {
    let models = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.cache/models");
    let (dir, ort) = (models.join("use-multilingual-v3-int8"), models.join("onnxruntime/libonnxruntime.so"));
    if !dir.join("model.onnx").is_file() || !ort.is_file() {
        assert_ne!(std::env::var("ROBOTMEM_REQUIRE_MODEL").as_deref(), Ok("1"), "no model under {}", models.display());
        eprintln!("SKIPPED doctor_with_the_model: no model under {} (run scripts/fetch-model.sh)", models.display());
        return;
    }
    let r = Run::new();
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_robotmem"))
            .arg("--db")
            .arg(r.db())
            .arg("--model-dir")
            .arg(&dir)
            .arg("--ort-library")
            .arg(&ort)
            .args(["--durability", "normal", "--json"])
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<Value>(&o.stdout).unwrap()
    };
    assert_eq!(run(&["learn", "Lidar gets confused by glass walls in the lobby"])["has_embedding"], true);
    assert_eq!(run(&["learn", "激光雷达在大厅里会被玻璃墙干扰"])["has_embedding"], true);
    let d = run(&["doctor", "--full"]);
    let check = |name: &str| {
        d["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} check: {d}"))
    };
    assert_eq!(check("vector index")["ok"], true, "{d}");
    assert!(check("vector index")["detail"].as_str().unwrap().starts_with("2 stored vectors"), "{d}");
    assert_eq!(check("model")["ok"], true);
    assert_eq!(run(&["status"])["state"], "ready");
}

/// A damaged memory text: doctor --full fails (exit 16) and names the memory.
#[test]
fn doctor_reports_damage() {
    let r = Run::new();
    learn(&r, "the charging dock is behind the kitchen door", &[]);
    let id = learn(&r, "lidar gets confused by glass walls", &[]);
    flip_text(&r.db(), id);
    let o = r.raw(&["doctor", "--full"]);
    assert_eq!(o.status.code(), Some(16), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("FAIL") && out.contains(&format!("[{id}]")), "{out}");
}

/// Changes a memory's stored text behind robotmem's back (as a storage fault would).
fn flip_text(db: &Path, id: i64) {
    let c = rusqlite::Connection::open(db).unwrap();
    c.execute("UPDATE memories SET content = 'lidar gets confused by glass wallz' WHERE id = ?1", [id]).unwrap();
}

#[test]
fn a_memory_budget_evicts_and_says_so_and_purge_removes_what_left_recall() {
    let r = Run::new();
    let budget = ["--max-memories", "2"];
    let a = r.json(&[&budget[..], &["learn", "conveyor 1 stopped for 20 seconds at noon"]].concat());
    let b = r.json(&[&budget[..], &["learn", "the arm must never enter zone 7 with people inside"]].concat());
    assert!(a.get("evicted").is_none());
    let c = r.json(&[&budget[..], &["learn", "conveyor 2 stopped for 30 seconds at noon"]].concat());
    assert_eq!(c["evicted"], serde_json::json!([a["memory_id"]]));
    let text = r.text(&[&budget[..], &["learn", "conveyor 3 stopped for 40 seconds at noon"]].concat());
    assert!(text.contains(&format!("evicted to keep the memory budget: #{}", c["memory_id"])), "{text}");
    // Only the constraint left to evict: over budget (exit 25), nothing written.
    let e = r.fails(&["--max-memories", "1", "learn", "conveyor 4 stopped at noon"], 25);
    assert_eq!(e["error"]["status"], "RM_OVER_BUDGET");
    r.json(&["--max-memories-json", r#"{"default": 5}"#, "learn", "conveyor 5 stopped at noon"]);
    for bad in [r#"{"default": -1}"#, r#"{"default": 0}"#, "[]", r#"{"default": "2"}"#] {
        let e = r.fails(&["--max-memories-json", bad, "stats"], 11);
        assert!(e["error"]["message"].as_str().unwrap().contains("memories"), "{bad}: {e}");
    }
    assert_eq!(r.json(&["get", &b["memory_id"].to_string()])["category"], "constraint");
    // Purge: forgotten memories older than the age; a hostile age is a usage error.
    let forgotten = r.json(&["learn", "dock 9 is free at 10"])["memory_id"].to_string();
    r.json(&["forget", &forgotten, "--reason", "stale"]);
    assert_eq!(r.json(&["purge", "--older-than", "7d"])["purged"], 0);
    let p = r.json(&["purge", "--older-than", "0"]);
    assert_eq!((p["status"].as_str(), p["purged"].as_u64()), (Some("purged"), Some(1)), "{p}");
    r.fails(&["get", &forgotten], 12);
    for bad in ["-1d", "1y", "NaN", "1e30w"] {
        assert_eq!(r.raw(&["purge", "--older-than", bad]).status.code(), Some(2), "{bad}");
    }
    let o = r.raw(&["--read-only", "purge", "--older-than", "0"]);
    assert_eq!(o.status.code(), Some(22), "{}", String::from_utf8_lossy(&o.stderr));
}
