//! The shared peer-suite cases (from the Python original's own tests) that concern
//! the engine rather than the classifier (those run in src/classify/tests.rs).
//!
//! Every case of these areas is either checked here or listed in `NOT_APPLICABLE`
//! with the reason; where a case encodes one of the original's flaws, our
//! behaviour is asserted instead and the reason is given next to it.

use robotmem::internals::search::filter::{resolve, ContextFilter, SpatialSort};
use robotmem::internals::{fingerprint, search, session, text};
use robotmem::*;
use serde_json::{json, Value};

type Check = std::result::Result<(), String>;

const CASES: &str = include_str!("data/peer-suite-cases.json");

/// Areas covered elsewhere (src/classify/tests.rs).
const CLASSIFIER_AREAS: &[&str] = &[
    "classify_category",
    "classify_tags",
    "estimate_confidence",
    "extract_scope",
    "normalize_scope_files",
    "build_context_json",
    "tags",
    "tag_tree",
];

/// Cases that test something robotmem does not have, with the reason.
const NOT_APPLICABLE: &[(&str, &str)] = &[
    ("dedup-006", "cosine dedup layer: embeddings issue (vectors) — not in the BM25 engine yet"),
    ("dedup-007", "cosine dedup layer: embeddings issue"),
    ("blob-001", "float vector blobs: embeddings issue"),
    ("dedup-009", "cleanup_exact_duplicates: exact duplicates cannot arise (hash unique per collection at write)"),
    ("dedup-010", "cleanup_exact_duplicates: see dedup-009"),
    ("conflict-002", "negation/conflict detection is not part of the specified pipeline (spec 000-003)"),
    ("conflict-004", "see conflict-002"),
    ("conflict-005", "see conflict-002"),
    ("conflict-006", "see conflict-002"),
    ("conflict-013", "see conflict-002"),
    ("conflict-014", "see conflict-002"),
    ("conflict-015", "see conflict-002"),
    ("conflict-018", "see conflict-002"),
    ("rrf-004", "lists of typed ids cannot hold an entry without an id"),
    ("tokenize-003", "None input: the Rust/C API takes non-NULL text (NULL is RM_INVALID_ARGUMENT in C)"),
    ("validation-010", "context_filter=123: a non-string cannot be passed through the typed Rust/C API"),
    ("insert_memory-003", "unknown memory type: types are an enum in the Rust/C API"),
    ("sdk_errors-009", "use after close is tested through the C ABI (RM_CLOSED) in tests/c/test_bad_input.c"),
];

fn cases() -> Vec<Value> {
    serde_json::from_str(CASES).unwrap()
}

fn db() -> Db {
    Db::open(OpenOptions::in_memory()).unwrap()
}

fn approx(a: f64, b: f64, eps: f64) -> bool {
    (a - b).abs() <= eps
}

fn learn(db: &Db, text: &str, ctx: Option<&str>, session: Option<&str>) -> LearnOutcome {
    db.learn(&LearnRequest { insight: text, context: ctx, session_id: session, ..Default::default() }).unwrap()
}

/// Runs one case; Err(message) on mismatch.
fn check(case: &Value) -> Check {
    let id = case["id"].as_str().unwrap();
    let input = &case["input"];
    let expected = &case["expected"];
    let s = |k: &str| input[k].as_str().unwrap_or_default().to_string();
    let fail = |got: String| Err(format!("{id}: expected {expected}, got {got}"));
    match case["area"].as_str().unwrap() {
        "jaccard" => {
            let got = text::jaccard(&s("a"), &s("b"));
            if approx(got, expected.as_f64().unwrap(), 1e-9) {
                Ok(())
            } else {
                fail(got.to_string())
            }
        }
        "dedup" if id == "dedup-005" => {
            // Excluding the memory itself (update) finds no duplicate.
            let db = db();
            let a = learn(&db, "same content exactly", None, None);
            match db.update(a.memory_id, "same content exactly", None) {
                Ok(_) => Ok(()),
                Err(e) => fail(e.to_string()),
            }
        }
        "dedup" => {
            let cand = input["fts_candidates"][0].as_str().unwrap();
            let a = fingerprint::Terms::of(&s("assertion"));
            let b = fingerprint::Terms::of(cand);
            let sim = text::jaccard_sets(&a.set, &b.set);
            let is_dup = a.duplicate_similarity(&b).is_some();
            let ok = is_dup == expected["is_dup"].as_bool().unwrap()
                && approx(sim, expected["similarity"].as_f64().unwrap(), 1e-9);
            if ok {
                Ok(())
            } else {
                fail(format!("is_dup={is_dup} sim={sim}"))
            }
        }
        "rrf" => {
            let lists: Vec<Vec<i64>> = serde_json::from_value(input["lists"].clone()).unwrap();
            let refs: Vec<&[i64]> = lists.iter().map(Vec::as_slice).collect();
            let merged = search::rrf_merge(&refs, 60.0);
            let got = if id == "rrf-005" {
                json!(merged.iter().map(|x| x.1).collect::<Vec<_>>())
            } else {
                json!(merged.iter().map(|x| x.0).collect::<Vec<_>>())
            };
            if &got == expected {
                Ok(())
            } else {
                fail(got.to_string())
            }
        }
        "source_weight" => {
            let got: Vec<f64> = input["contexts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| if c.as_object().is_some_and(search::is_real_world) { 1.5 } else { 1.0 })
                .collect();
            if json!(got) == *expected {
                Ok(())
            } else {
                fail(format!("{got:?}"))
            }
        }
        "dotpath" => {
            let path: Vec<String> = s("path").split('.').map(String::from).collect();
            let got = resolve(&input["d"], &path).cloned().unwrap_or(json!("<MISSING>"));
            if &got == expected {
                Ok(())
            } else {
                fail(got.to_string())
            }
        }
        "context_filter" => {
            let f = ContextFilter::parse(&input["spec"].to_string()).map_err(|e| e.to_string())?;
            let got = f.matches(&input["mem"]);
            if json!(got) == *expected {
                Ok(())
            } else {
                fail(got.to_string())
            }
        }
        "spatial_sort" => {
            let spec = json!({"field": input["field"], "target": input["target"]});
            let d = SpatialSort::parse(&spec.to_string()).map_err(|e| e.to_string())?.distance(&input["mem"]);
            let ok = match expected {
                Value::String(x) if x == "inf" => d.is_infinite(),
                e => approx(d, e.as_f64().unwrap(), 1e-9),
            };
            if ok {
                Ok(())
            } else {
                fail(d.to_string())
            }
        }
        "context_fields" => {
            let db = db();
            let a = learn(&db, "grip force tuned for cylinders", Some(&input["context"].to_string()), None);
            let v = render::memory(&db.get(a.memory_id).unwrap());
            let got = json!({"params": v["params"]});
            if &got == expected {
                Ok(())
            } else {
                fail(got.to_string())
            }
        }
        "tokenize" => {
            let got = text::index_text(&s("text")).to_string();
            if json!(got) == *expected {
                Ok(())
            } else {
                fail(got)
            }
        }
        "fts_query" => {
            let got = text::fts_query(&s("query"));
            if json!(got) == *expected {
                Ok(())
            } else {
                fail(format!("{got:?}"))
            }
        }
        "decay" => {
            let conf = input["confidence"].as_f64().unwrap();
            let days =
                input["days_since_last_access"].as_i64().or(input["days"].as_i64()).or(input["age_days"].as_i64());
            let rate = input["decay_rate"].as_f64().unwrap_or(0.01);
            let got = session::decayed(conf, rate, days.unwrap());
            if approx(got, expected.as_f64().unwrap(), 5e-4) {
                Ok(())
            } else {
                fail(got.to_string())
            }
        }
        "recall_pipeline" => recall_pipeline(id, expected),
        "consolidation" => consolidation(id, input, expected),
        "validation" | "sdk_errors" | "mcp_errors" | "insert_memory" => errors(id, input, expected),
        other => Err(format!("{id}: area {other} has no handler")),
    }
}

fn recall_pipeline(id: &str, expected: &Value) -> Check {
    let db = db();
    let ids = |r: RecallResult, base: i64| -> Value {
        json!(r.hits.iter().map(|h| h.memory.id - base + 1).collect::<Vec<_>>())
    };
    let got = match id {
        "recall_pipeline-001" | "recall_pipeline-002" => {
            let s1 = db.start_session(None, None).unwrap().session_id;
            let s2 = db.start_session(None, None).unwrap().session_id;
            let a = learn(&db, "gripper memory one", None, Some(&s1));
            learn(&db, "gripper memory two", None, Some(&s2));
            let sess = if id.ends_with("001") { Some(s1.as_str()) } else { Some("") };
            let mut r =
                db.recall(&RecallRequest { query: "gripper memory", session_id: sess, ..Default::default() }).unwrap();
            r.hits.sort_by_key(|h| h.memory.id);
            ids(r, a.memory_id)
        }
        "recall_pipeline-003" => {
            // A memory at confidence 0.80 is filtered by min_confidence 0.9 (the
            // case's 0.1 < 0.5 cannot be produced through the API: confidences start ≥ 0.8).
            learn(&db, "gripper memory one", None, None);
            let r = db.recall(&RecallRequest { query: "gripper", min_confidence: 0.9, ..Default::default() }).unwrap();
            json!(r.hits.len())
        }
        "recall_pipeline-004" => {
            let a = learn(&db, "box at origin", Some(r#"{"spatial": {"p": [0, 0]}}"#), None);
            learn(&db, "box far away", Some(r#"{"spatial": {"p": [100, 100]}}"#), None);
            let spec = r#"{"field": "spatial.p", "target": [0, 0], "max_distance": 1}"#;
            let r = db.recall(&RecallRequest { query: "box", spatial_sort: Some(spec), ..Default::default() }).unwrap();
            ids(r, a.memory_id)
        }
        "recall_pipeline-006" => {
            // Flaw kept out: the original ignores an invalid spatial_sort inside the
            // pipeline (returning 1 result); we reject it with a precise error, as its
            // own MCP layer does (mcp_errors-004).
            learn(&db, "box at origin", None, None);
            let r = db.recall(&RecallRequest {
                query: "box",
                spatial_sort: Some(r#"{"bad": "format"}"#),
                ..Default::default()
            });
            return match r {
                Err(e) if e.status == Status::InvalidArgument => Ok(()),
                other => Err(format!("{id}: expected InvalidArgument, got {other:?}")),
            };
        }
        _ => return Err(format!("{id}: no handler")),
    };
    if &got == expected {
        Ok(())
    } else {
        Err(format!("{id}: expected {expected}, got {got}"))
    }
}

fn consolidation(id: &str, input: &Value, expected: &Value) -> Check {
    let db = db();
    let sid = db.start_session(None, None).unwrap().session_id;
    if id == "consolidation-005" {
        // Our API rejects a blank session id instead of silently reporting zeros.
        return match db.end_session("", None) {
            Err(e) if e.status == Status::InvalidArgument => Ok(()),
            other => Err(format!("{id}: {other:?}")),
        };
    }
    for m in input["memories"].as_array().unwrap() {
        let text = m.as_str().unwrap();
        let mut text = text.split(" (").next().unwrap().to_string(); // "(0.8)" annotates confidence
        if text.ends_with("eta iota") {
            // The case's second text substitutes a word of the first ("theta" ->
            // "iota"), and the original merges them: one of the two facts is lost.
            // Our consolidation merges only texts of which one holds all the other's
            // words (issue 11), and learn already reports Jaccard > 0.70 as a
            // duplicate. So the pair that tests the pairwise clustering is the first
            // text plus four words: nested, Jaccard 8/12 = 0.67, in consolidation's
            // band (> 0.50) and below learn's.
            text = text.replace("eta iota", "eta theta sigma tau upsilon phi");
        }
        let out = learn(&db, &text, None, Some(&sid));
        assert!(out.duplicate.is_none(), "{text} was stored");
    }
    let c = db.end_session(&sid, None).unwrap().consolidated;
    let got = json!({"merged_groups": c.merged_groups, "superseded_count": c.superseded_count,
        "compression_ratio": c.compression_ratio, "avg_similarity": c.avg_similarity});
    let ok = expected.as_object().unwrap().iter().all(|(k, v)| got[k] == *v);
    if ok {
        Ok(())
    } else {
        Err(format!("{id}: expected {expected}, got {got}"))
    }
}

/// Validation and error cases: the status must be the right one and the message
/// must name the field. (The original's Chinese pydantic texts are not copied.)
fn errors(id: &str, input: &Value, expected: &Value) -> Check {
    let db = db();
    let s = |k: &str| input[k].as_str().map(String::from);
    let expect_err = |r: Result<()>, status: Status, needle: &str| match r {
        Err(e) if e.status == status && e.message.contains(needle) => Ok(()),
        other => Err(format!("{id}: expected {status:?} mentioning {needle:?}, got {other:?}")),
    };
    let field = expected.as_str().and_then(|e| e.split('(').nth(1)).and_then(|x| x.split(')').next());
    match id {
        "validation-001" | "validation-002" | "sdk_errors-005" | "insert_memory-004" => {
            let text = s("insight").or(s("content")).unwrap_or_default();
            expect_err(
                db.learn(&LearnRequest { insight: &text, ..Default::default() }).map(drop),
                Status::InvalidArgument,
                "insight",
            )
        }
        "validation-005" => {
            // The original rejects n=0; the issue asks for clamping to 1–100.
            learn(&db, "test memory", None, None);
            let r =
                db.recall(&RecallRequest { query: "test", n: 0, ..Default::default() }).map_err(|e| e.to_string())?;
            if r.hits.len() == 1 {
                Ok(())
            } else {
                Err(format!("{id}: n=0 should clamp to 1"))
            }
        }
        "validation-007" | "validation-009" | "sdk_errors-003" => {
            let q = s("query").unwrap_or_default();
            let mc = input["min_confidence"].as_f64().unwrap_or(0.3);
            let r = db.recall(&RecallRequest { query: &q, min_confidence: mc, ..Default::default() }).map(drop);
            expect_err(r, Status::InvalidArgument, field.unwrap_or("query"))
        }
        "validation-011" | "validation-012" | "sdk_errors-004" => {
            let d = s("description").unwrap_or("abc".into());
            let r = db.save_perception(&PerceptionRequest { description: &d, ..Default::default() }).map(drop);
            expect_err(r, Status::InvalidArgument, "description")
        }
        "validation-014" | "insert_memory-002" => {
            expect_err(PerceptionType::parse("invalid").map(drop), Status::InvalidArgument, "perception_type")
        }
        "validation-015" | "validation-016" | "validation-017" => {
            let r = db.forget(input["memory_id"].as_i64().unwrap(), &s("reason").unwrap()).map(drop);
            expect_err(r, Status::InvalidArgument, field.unwrap())
        }
        "validation-018" | "validation-019" => {
            let a = learn(&db, "original", None, None);
            let content = if id.ends_with("018") { "x".repeat(301) } else { s("new_content").unwrap() };
            expect_err(db.update(a.memory_id, &content, None).map(drop), Status::InvalidArgument, "new_content")
        }
        "validation-020" | "validation-021" | "validation-022" | "validation-023" => {
            let sid = db.start_session(None, None).unwrap().session_id;
            let given = s("session_id").unwrap();
            let use_sid = if given == "abc" { sid } else { given };
            let r = db.end_session(&use_sid, input["outcome_score"].as_f64()).map(drop);
            expect_err(r, Status::InvalidArgument, field.unwrap())
        }
        "sdk_errors-002" => expect_err(db.update(99999, "new", None).map(drop), Status::NotFound, "#99999"),
        "sdk_errors-006" | "sdk_errors-007" => {
            let a = learn(&db, "to be forgotten", None, None);
            db.forget(a.memory_id, "test").unwrap();
            let r = if id.ends_with("006") {
                db.forget(a.memory_id, "again").map(drop)
            } else {
                db.update(a.memory_id, "new", None).map(drop)
            };
            expect_err(r, Status::InvalidState, "invalidated")
        }
        "sdk_errors-008" => {
            learn(&db, "test memory", None, None);
            let r = db.recall(&RecallRequest { query: "test", min_confidence: 0.99, ..Default::default() }).unwrap();
            if r.hits.is_empty() {
                Ok(())
            } else {
                Err(format!("{id}: expected 0 hits"))
            }
        }
        "mcp_errors-002" | "mcp_errors-003" => {
            let f = s("context_filter").unwrap();
            let r =
                db.recall(&RecallRequest { query: "test", context_filter: Some(&f), ..Default::default() }).map(drop);
            expect_err(r, Status::InvalidArgument, "context_filter")
        }
        "mcp_errors-004" | "mcp_errors-005" => {
            let f = s("spatial_sort").unwrap();
            let r = db.recall(&RecallRequest { query: "test", spatial_sort: Some(&f), ..Default::default() }).map(drop);
            expect_err(r, Status::InvalidArgument, "spatial_sort")
        }
        "mcp_errors-009" | "mcp_errors-010" | "mcp_errors-011" | "mcp_errors-012" => {
            let got = limits::collection(input["collection"].as_str(), "default").map_err(|e| e.to_string())?;
            if json!(got) == *expected {
                Ok(())
            } else {
                Err(format!("{id}: got {got}"))
            }
        }
        "insert_memory-001" => {
            // Flaw kept out: the original silently truncates 500 characters to 300
            // (silent data loss); we refuse with a message naming the limit.
            let long = "x".repeat(500);
            expect_err(
                db.learn(&LearnRequest { insight: &long, ..Default::default() }).map(drop),
                Status::InvalidArgument,
                "300",
            )
        }
        "insert_memory-005" => {
            // Blank collection resolves to the default collection (as mcp_errors-009).
            let r = db.learn(&LearnRequest { insight: "test", collection: Some(""), ..Default::default() }).unwrap();
            if db.get(r.memory_id).unwrap().collection == "default" {
                Ok(())
            } else {
                Err(id.to_string())
            }
        }
        "insert_memory-006" => {
            let a = learn(&db, &s("content").unwrap(), None, None);
            let b = learn(&db, &s("content").unwrap(), None, None);
            if a.duplicate.is_none() && b.duplicate.is_some_and(|d| d.existing_id == a.memory_id) {
                Ok(())
            } else {
                Err(format!("{id}: second insert must be a duplicate of the first"))
            }
        }
        _ => Err(format!("{id}: no handler")),
    }
}

#[test]
fn peer_suite_engine_cases() {
    let mut failures = Vec::new();
    let (mut ran, mut skipped) = (0, 0);
    for case in cases() {
        let id = case["id"].as_str().unwrap();
        if CLASSIFIER_AREAS.contains(&case["area"].as_str().unwrap()) {
            continue;
        }
        if let Some((_, why)) = NOT_APPLICABLE.iter().find(|(c, _)| *c == id) {
            println!("not applicable: {id}: {why}");
            skipped += 1;
            continue;
        }
        ran += 1;
        if let Err(e) = check(&case) {
            failures.push(e);
        }
    }
    println!("peer cases: {ran} checked, {skipped} not applicable");
    assert!(failures.is_empty(), "{} failing cases:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn shared_cases_file_is_the_committed_copy() {
    // tests/data holds a copy so the suite runs without ../shared; warn loudly if it drifted.
    let shared = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/cases/peer-suite-cases.json");
    match std::fs::read_to_string(shared) {
        Ok(s) => assert_eq!(s, CASES, "../shared/cases/peer-suite-cases.json changed: update tests/data/"),
        // CI always has shared/ beside the clone: there a missing file is a failure, not a skip.
        Err(e) if std::env::var_os("CI").is_some() => panic!("{shared}: {e} (CI must have shared/ beside the clone)"),
        Err(_) => eprintln!("SKIPPED: ../shared/cases not present beside the checkout; drift of tests/data unchecked"),
    }
}
