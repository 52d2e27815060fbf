//! `robotmem mcp` driven as a process over stdio with raw JSON-RPC lines:
//! protocol versions, the tool list against the API reference (a table below),
//! every tool valid and invalid, resources, a session, the 300-character limit,
//! malformed and hostile input (the server must answer and stay alive), and a
//! clean close on stdin EOF and on SIGTERM. BM25 only (no model needed).

#[path = "common/mcp_server.rs"]
mod mcp_server;

use std::process::Command;

use mcp_server::{temp, wait, Server};
use serde_json::{json, Value};

#[test]
fn initialize_negotiates_current_and_older_versions() {
    let (_dir, db) = temp();
    for v in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
        let (mut s, r) = Server::ready(&db, v);
        assert_eq!(r["protocolVersion"], v);
        assert_eq!(r["serverInfo"]["name"], "robotmem");
        assert!(r["capabilities"]["tools"].is_object() && r["capabilities"]["resources"].is_object(), "{r}");
        s.alive();
        assert!(s.finish().success());
    }
    // A version from the future gets the newest one with a handshake.
    let (s, r) = Server::ready(&db, "2099-01-01");
    assert_eq!(r["protocolVersion"], "2025-11-25");
    assert!(s.finish().success());
}

#[test]
fn current_protocol_via_server_discover() {
    let (_dir, db) = temp();
    let mut s = Server::start(&db);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": {}});
    let d = s.request("server/discover", json!({"_meta": meta}));
    let versions = d["supportedVersions"].as_array().unwrap();
    assert!(versions.contains(&json!("2026-07-28")) && versions.contains(&json!("2024-11-05")), "{d}");
    assert_eq!(d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "robotmem", "{d}");
    let t = s.request("tools/list", json!({"_meta": meta}));
    assert_eq!(t["tools"].as_array().unwrap().len(), 11);
    let r = s.request(
        "tools/call",
        json!({"name": "learn", "arguments": {"insight": "spoken in the current protocol"}, "_meta": meta}),
    );
    assert_eq!(r["structuredContent"]["status"], "created", "{r}");
    assert_eq!(r["resultType"], "complete", "{r}");
    let r = s.request("tools/call", json!({"name": "learn", "arguments": {"insight": ""}, "_meta": meta}));
    assert_eq!(r["isError"], true, "{r}");
    let r = s.request("resources/read", json!({"uri": "robotmem://stats", "_meta": meta}));
    assert!(r["contents"][0]["text"].as_str().unwrap().contains("\"active\":1"), "{r}");
    assert!(s.finish().success());
}

/// The API reference, point by point: (tool, parameter, JSON type, required,
/// default, minimum, maximum, minLength, maxLength). `None`: absent.
type Row =
    (&'static str, &'static str, &'static str, bool, Option<Value>, Option<f64>, Option<f64>, Option<u64>, Option<u64>);

fn reference() -> Vec<Row> {
    let s = |v: &str| Some(json!(v));
    vec![
        ("learn", "insight", "string", true, None, None, None, Some(1), Some(300)),
        ("learn", "context", "string", false, s(""), None, None, None, None),
        ("learn", "collection", "string", false, Some(Value::Null), None, None, None, None),
        ("learn", "session_id", "string", false, Some(Value::Null), None, None, None, None),
        ("learn", "ttl_seconds", "number", false, Some(Value::Null), None, None, None, None),
        ("learn", "expires_at", "string", false, Some(Value::Null), None, None, None, None),
        ("recall", "query", "string", true, None, None, None, Some(1), Some(1000)),
        ("recall", "collection", "string", false, Some(Value::Null), None, None, None, None),
        ("recall", "n", "integer", false, Some(json!(5)), Some(1.0), Some(100.0), None, None),
        ("recall", "min_confidence", "number", false, Some(json!(0.3)), Some(0.0), Some(1.0), None, None),
        ("recall", "session_id", "string", false, Some(Value::Null), None, None, None, None),
        ("recall", "context_filter", "string", false, Some(Value::Null), None, None, None, None),
        ("recall", "spatial_sort", "string", false, Some(Value::Null), None, None, None, None),
        ("recall", "group_similar", "boolean", false, Some(json!(false)), None, None, None, None),
        ("recall", "as_of", "string", false, Some(Value::Null), None, None, None, None),
        ("save_perception", "description", "string", true, None, None, None, Some(5), Some(300)),
        ("save_perception", "perception_type", "string", false, s("visual"), None, None, None, None),
        ("save_perception", "data", "string", false, Some(Value::Null), None, None, None, None),
        ("save_perception", "metadata", "string", false, Some(Value::Null), None, None, None, None),
        ("save_perception", "collection", "string", false, Some(Value::Null), None, None, None, None),
        ("save_perception", "session_id", "string", false, Some(Value::Null), None, None, None, None),
        ("save_perception", "ttl_seconds", "number", false, Some(Value::Null), None, None, None, None),
        ("save_perception", "expires_at", "string", false, Some(Value::Null), None, None, None, None),
        ("forget", "memory_id", "integer", true, None, Some(1.0), None, None, None),
        ("forget", "reason", "string", true, None, None, None, Some(1), Some(500)),
        ("update", "memory_id", "integer", true, None, Some(1.0), None, None, None),
        ("update", "new_content", "string", true, None, None, None, Some(1), Some(300)),
        ("update", "context", "string", false, s(""), None, None, None, None),
        ("set_expiry", "memory_id", "integer", true, None, Some(1.0), None, None, None),
        ("set_expiry", "ttl_seconds", "number", false, Some(Value::Null), None, None, None, None),
        ("set_expiry", "expires_at", "string", false, Some(Value::Null), None, None, None, None),
        ("purge", "older_than_seconds", "number", true, None, Some(0.0), None, None, None),
        ("start_session", "collection", "string", false, Some(Value::Null), None, None, None, None),
        ("start_session", "context", "string", false, Some(Value::Null), None, None, None, None),
        ("end_session", "session_id", "string", true, None, None, None, None, None),
        ("end_session", "outcome_score", "number", false, Some(Value::Null), Some(0.0), Some(1.0), None, None),
        ("memory_history", "memory_id", "integer", true, None, None, None, None, None),
    ]
}

#[test]
fn tools_list_matches_the_api_reference() {
    let (_dir, db) = temp();
    let (mut s, _) = Server::ready(&db, "2025-11-25");
    let tools = s.request("tools/list", json!({}))["tools"].as_array().unwrap().clone();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "learn",
            "recall",
            "save_perception",
            "forget",
            "update",
            "set_expiry",
            "purge",
            "start_session",
            "end_session",
            "memory_history",
            "doctor"
        ]
    );
    let rows = reference();
    for t in &tools {
        let name = t["name"].as_str().unwrap();
        assert!(t["description"].as_str().unwrap().len() > 40, "{name}: a description an agent can act on");
        let schema = &t["inputSchema"];
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["additionalProperties"], false, "{name}");
        let props = schema["properties"].as_object().cloned().unwrap_or_default();
        let mine: Vec<&Row> = rows.iter().filter(|r| r.0 == name).collect();
        assert_eq!(props.len(), mine.len(), "{name}: parameters {:?}", props.keys().collect::<Vec<_>>());
        let required: Vec<&str> =
            schema["required"].as_array().map(|a| a.iter().map(|v| v.as_str().unwrap()).collect()).unwrap_or_default();
        for &&(_, param, ty, req, ref default, min, max, min_len, max_len) in &mine {
            let p = props.get(param).unwrap_or_else(|| panic!("{name}: no parameter {param}"));
            let types = match &p["type"] {
                Value::String(t) => vec![t.clone()],
                Value::Array(a) => a.iter().map(|v| v.as_str().unwrap().to_string()).collect(),
                other => panic!("{name}.{param}: type {other}"),
            };
            assert!(types.contains(&ty.to_string()), "{name}.{param}: {types:?} is not {ty}");
            assert_eq!(required.contains(&param), req, "{name}.{param}: required");
            assert_eq!(p.get("default"), default.as_ref(), "{name}.{param}: default");
            assert_eq!(p.get("minimum").and_then(Value::as_f64), min, "{name}.{param}: minimum");
            assert_eq!(p.get("maximum").and_then(Value::as_f64), max, "{name}.{param}: maximum");
            assert_eq!(p.get("minLength").and_then(Value::as_u64), min_len, "{name}.{param}: minLength");
            assert_eq!(p.get("maxLength").and_then(Value::as_u64), max_len, "{name}.{param}: maxLength");
            assert!(p["description"].as_str().is_some_and(|d| !d.is_empty()), "{name}.{param}: description");
        }
    }
    let kinds = &tools[2]["inputSchema"]["properties"]["perception_type"]["enum"];
    assert_eq!(kinds, &json!(["visual", "tactile", "auditory", "proprioceptive", "procedural"]));
    assert!(s.finish().success());
}

#[test]
fn every_tool_valid_and_invalid() {
    let (_dir, db) = temp();
    let (mut s, _) = Server::ready(&db, "2025-11-25");
    // learn
    let ctx = json!({"params": {"grip_force": {"value": 12.5}}, "task": {"success": true}}).to_string();
    let l = s.ok("learn", json!({"insight": "Found that grip_force 12.5N is optimal for red cups", "context": ctx}));
    assert_eq!(l["status"], "created");
    let id = l["memory_id"].as_i64().unwrap();
    assert_eq!(l["auto_inferred"]["category"], "observation");
    let d = s.ok("learn", json!({"insight": "Found that grip_force 12.5N is optimal for red cups"}));
    assert_eq!(d["status"], "duplicate");
    s.fails("learn", json!({}), &["insight"]);
    s.fails("learn", json!({"insight": null}), &["insight"]);
    // null is "not given": the default.
    let nulls = s.ok(
        "learn",
        json!({"insight": "nulls everywhere else", "context": null, "collection": null, "session_id": null}),
    );
    assert_eq!(nulls["status"], "created");
    let r = s.ok("recall", json!({"query": "nulls everywhere", "n": null, "min_confidence": null, "collection": null}));
    assert_eq!(r["memories"][0]["id"], nulls["memory_id"], "{r}");
    s.fails("learn", json!({"insight": 5}), &["insight", "string"]);
    s.fails("learn", json!({"insight": "   "}), &["insight"]);
    s.fails("learn", json!({"insight": "ok text", "colection": "x"}), &["colection"]);
    s.fails("learn", json!({"insight": "ok text", "session_id": "no-such-session"}), &["session"]);
    // 300 characters are accepted, 301 refused.
    let a300: String = "a".repeat(299) + "b";
    assert_eq!(s.ok("learn", json!({"insight": a300}))["status"], "created");
    s.fails("learn", json!({"insight": "c".repeat(301)}), &["insight", "300"]);
    // recall
    let r = s.ok("recall", json!({"query": "grip force red cups"}));
    assert_eq!(r["memories"][0]["id"], id, "{r}");
    assert_eq!(r["mode"], "bm25_only");
    assert_eq!(r["memories"][0]["params"]["grip_force"]["value"], 12.5);
    let f = s.ok("recall", json!({"query": "grip", "context_filter": "{\"params.grip_force.value\": {\"$lt\": 10}}"}));
    assert_eq!(f["total"], 0, "{f}");
    assert_eq!(
        s.ok("recall", json!({"query": "grip", "n": 1, "min_confidence": 0.0}))["memories"].as_array().unwrap().len(),
        1
    );
    s.fails("recall", json!({}), &["query"]);
    s.fails("recall", json!({"query": "grip", "n": 0}), &["n", "100"]);
    s.fails("recall", json!({"query": "grip", "n": 101}), &["n"]);
    s.fails("recall", json!({"query": "grip", "n": "five"}), &["n"]);
    s.fails("recall", json!({"query": "grip", "min_confidence": 1.5}), &["min_confidence"]);
    s.fails("recall", json!({"query": "grip", "context_filter": "{not json"}), &["context_filter"]);
    s.fails("recall", json!({"query": "grip", "spatial_sort": "[1]"}), &["spatial_sort"]);
    s.fails("recall", json!({"query": "grip", "group_similar": "yes"}), &["group_similar"]);
    for i in 1..=3 {
        s.ok("learn", json!({"insight": format!("dock {i} failed: wheels slipped on the wet floor at {i}0:15")}));
    }
    let g = s.ok("recall", json!({"query": "wheels slipped wet floor", "group_similar": true}));
    assert_eq!(g["memories"].as_array().unwrap().len(), 1, "{g}");
    assert_eq!(g["memories"][0]["_similar"].as_array().unwrap().len(), 2, "{g}");
    // save_perception
    let data = json!({"force": [1.0, 2.5, 3.0]}).to_string();
    let p = s.ok("save_perception", json!({"description": "grip force trace on red cup", "perception_type": "tactile", "data": data, "metadata": "{\"units\": \"N\"}"}));
    assert_eq!(p["perception_type"], "tactile");
    assert_eq!(p["collection"], "default");
    let p2 = s.ok("save_perception", json!({"description": "camera view of the table"}));
    assert_eq!(p2["perception_type"], "visual");
    s.fails("save_perception", json!({"description": "abc"}), &["description"]);
    s.fails("save_perception", json!({"description": "a valid one", "perception_type": "smell"}), &["perception_type"]);
    s.fails("save_perception", json!({"description": "a valid one", "data": [1, 2]}), &["data"]);
    s.fails("save_perception", json!({"description": "a valid one", "metadata": "{bad"}), &["metadata"]);
    // update
    let u = s.ok(
        "update",
        json!({"memory_id": id, "new_content": "Found that grip_force 11N is optimal for red cups (recalibrated)"}),
    );
    assert_eq!(u["status"], "updated");
    assert!(u["old_content"].as_str().unwrap().contains("12.5N"));
    s.fails("update", json!({"memory_id": id}), &["new_content"]);
    s.fails("update", json!({"memory_id": 0, "new_content": "x"}), &["memory_id"]);
    s.fails("update", json!({"memory_id": 9999, "new_content": "x"}), &["RM_NOT_FOUND", "9999"]);
    s.fails("update", json!({"memory_id": id, "new_content": "d".repeat(301)}), &["300"]);
    // expiry: a past time takes the memory out of recall; a ttl brings it back
    let e = s.ok("learn", json!({"insight": "aisle 4 is blocked by a pallet", "expires_at": "2020-01-01T00:00:00Z"}));
    let eid = e["memory_id"].as_i64().unwrap();
    let hits =
        |s: &mut Server| s.ok("recall", json!({"query": "aisle 4 pallet"}))["memories"].as_array().unwrap().len();
    assert_eq!(hits(&mut s), 0);
    let m = s.ok("set_expiry", json!({"memory_id": eid, "ttl_seconds": 600}));
    assert_eq!(m["expired"], false, "{m}");
    assert_eq!(hits(&mut s), 1);
    s.fails("set_expiry", json!({"memory_id": eid, "ttl_seconds": -1}), &["ttl_seconds"]);
    s.fails(
        "set_expiry",
        json!({"memory_id": eid, "ttl_seconds": 5, "expires_at": "2030-01-01T00:00:00Z"}),
        &["not both"],
    );
    s.fails("learn", json!({"insight": "x", "ttl_sec": 5}), &["ttl_sec"]);
    // purge: what left recall long enough ago; hostile ages are refused by name
    assert_eq!(s.ok("purge", json!({"older_than_seconds": 3600}))["purged"], 0);
    for bad in [
        json!({"older_than_seconds": -1}),
        json!({"older_than_seconds": "1d"}),
        json!({}),
        json!({"older_than_seconds": 1e300}),
    ] {
        s.fails("purge", bad, &["older_than_seconds"]);
    }
    // history and recall as of a past time (before the update above)
    let h = s.ok("memory_history", json!({"memory_id": id}));
    let causes: Vec<&str> = h["versions"].as_array().unwrap().iter().map(|v| v["cause"].as_str().unwrap()).collect();
    assert_eq!(causes, ["learn", "update"], "{h}");
    let before = h["versions"][0]["valid_from"].as_str().unwrap().to_string();
    let then = s.ok("recall", json!({"query": "grip force red cups", "as_of": before}));
    assert_eq!(then["as_of"], before.as_str());
    assert!(then["memories"][0]["content"].as_str().unwrap().contains("12.5N"), "{then}");
    s.fails("recall", json!({"query": "grip", "as_of": "yesterday"}), &["as_of", "RFC 3339"]);
    s.fails("recall", json!({"query": "grip", "as_of": "2999-01-01T00:00:00Z"}), &["future"]);
    s.fails("memory_history", json!({"memory_id": 9999}), &["RM_NOT_FOUND"]);
    s.fails("memory_history", json!({}), &["memory_id"]);
    // forget
    let g = s.ok("forget", json!({"memory_id": id, "reason": "sensor calibration error"}));
    assert_eq!(g["status"], "forgotten");
    assert_eq!(g["reason"], "sensor calibration error");
    s.fails("forget", json!({"memory_id": id, "reason": "again"}), &["RM_"]);
    s.fails("forget", json!({"memory_id": id}), &["reason"]);
    s.fails("forget", json!({"memory_id": -3, "reason": "x"}), &["memory_id"]);
    s.fails("forget", json!({"memory_id": 1.5, "reason": "x"}), &["memory_id"]);
    // doctor
    let doc = s.ok("doctor", json!({}));
    assert_eq!(doc["ok"], true, "{doc}");
    s.fails("doctor", json!({"full": true}), &["full"]);
    // A call without arguments is a call with {}.
    let r = s.request("tools/call", json!({"name": "doctor"}));
    assert_eq!(r["isError"], false);
    assert!(s.finish().success());
}

#[test]
fn a_session_from_start_to_end_and_resources() {
    let (_dir, db) = temp();
    let (mut s, _) = Server::ready(&db, "2025-11-25");
    let st = s.ok("start_session", json!({"context": "{\"robot\": {\"type\": \"UR5e\"}}"}));
    let sid = st["session_id"].as_str().unwrap().to_string();
    assert_eq!(st["collection"], "default");
    for i in 0..3 {
        s.ok(
            "learn",
            json!({"insight": format!("step {i}: the gripper slipped because the cup was wet"), "session_id": sid}),
        );
    }
    s.ok("learn", json!({"insight": "Lesson: always dry the cup, task failed", "session_id": sid, "context": "{\"task\": {\"success\": false}}"}));
    let r = s.ok("recall", json!({"query": "gripper", "session_id": sid}));
    assert!(r["total"].as_i64().unwrap() >= 1, "{r}");
    s.fails("end_session", json!({}), &["session_id"]);
    s.fails("end_session", json!({"session_id": sid, "outcome_score": 2.0}), &["outcome_score"]);
    s.fails("end_session", json!({"session_id": "nope"}), &["RM_"]);
    s.fails("start_session", json!({"context": 3}), &["context"]);
    let e = s.ok("end_session", json!({"session_id": sid, "outcome_score": 0.4}));
    assert_eq!(e["status"], "ended");
    assert_eq!(e["session_id"], sid.as_str());
    assert!(e["summary"]["memory_count"].as_i64().unwrap() >= 1, "{e}");
    // Resources
    let list = s.request("resources/list", json!({}));
    let uris: Vec<&str> = list["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert_eq!(uris, ["robotmem://stats", "robotmem://recent-failures"]);
    let t = s.request("resources/templates/list", json!({}));
    assert_eq!(t["resourceTemplates"][0]["uriTemplate"], "robotmem://session/{id}");
    let read = |s: &mut Server, uri: &str| -> Value {
        let r = s.request("resources/read", json!({"uri": uri}));
        assert_eq!(r["contents"][0]["uri"], uri);
        assert_eq!(r["contents"][0]["mimeType"], "application/json");
        serde_json::from_str(r["contents"][0]["text"].as_str().unwrap()).unwrap()
    };
    let stats = read(&mut s, "robotmem://stats");
    assert!(stats["active"].as_i64().unwrap() >= 1, "{stats}");
    assert_eq!(stats["sessions"], 1);
    let fails = read(&mut s, "robotmem://recent-failures");
    assert!(
        fails["memories"].as_array().unwrap().iter().any(|m| m["content"].as_str().unwrap().contains("dry the cup")),
        "{fails}"
    );
    let tl = read(&mut s, &format!("robotmem://session/{sid}"));
    let contents: Vec<&str> =
        tl["memories"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap()).collect();
    assert!(contents.len() >= 2 && contents[0].starts_with("step 0"), "{contents:?}");
    let none = read(&mut s, "robotmem://session/unknown-session");
    assert_eq!(none["total"], 0);
    for bad in ["robotmem://nothing", "file:///etc/passwd", "robotmem://session/"] {
        let r = s.call_raw("resources/read", json!({"uri": bad}));
        assert!(r["error"]["message"].as_str().unwrap().contains("uri"), "{r}");
    }
    assert!(s.finish().success());
}

#[test]
fn hostile_input_is_answered_and_the_server_stays_alive() {
    let (_dir, db) = temp();
    let (mut s, _) = Server::ready(&db, "2025-11-25");
    let is_parse_error = |v: &Value| v["id"].is_null() && v["error"]["code"] == -32700;
    for line in ["not json", "{\"jsonrpc\":", "[1, 2", "\u{1b}[31m", "}{"] {
        s.send_raw(line);
        s.wait_for(line, is_parse_error);
        s.alive();
    }
    // Nesting past the parser's depth limit, and a line over the 16 MiB limit.
    s.send_raw(&"[".repeat(100_000));
    s.wait_for("deep nesting", is_parse_error);
    s.send_raw(&format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}",
        "y".repeat(17 << 20)
    ));
    let v = s.wait_for("oversized line", is_parse_error);
    assert!(v["error"]["message"].as_str().unwrap().contains("longer"), "{v}");
    s.alive();
    // Well-formed JSON that is no message: Invalid Request.
    for line in ["{\"foo\": 1}", "42", "\"text\"", "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":7}"] {
        s.send_raw(line);
        s.wait_for(line, |v| v["error"]["code"] == -32600);
        s.alive();
    }
    let r = s.call_raw("no/such/method", json!({}));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    // A tools/call that does not fit its schema: invalid params (more in tests/mcp_attack.rs).
    for (params, needle) in [
        (json!({"name": "no_such_tool", "arguments": {}}), "no_such_tool"),
        (json!({"name": 42}), "name"),
        (json!({"name": "learn", "arguments": "insight"}), "arguments"),
    ] {
        let r = s.call_raw("tools/call", params);
        assert_eq!(r["error"]["code"], -32602, "{r}");
        assert!(r["error"]["message"].as_str().unwrap().contains(needle), "{r}");
    }
    // Wrong types in every position.
    for v in [json!(null), json!(true), json!(1.5), json!([]), json!({}), json!(-1)] {
        for (tool, field) in [
            ("learn", "insight"),
            ("recall", "query"),
            ("forget", "memory_id"),
            ("end_session", "session_id"),
            ("save_perception", "description"),
        ] {
            let r = s.tool(tool, json!({field: v}));
            assert_eq!(r["isError"], true, "{tool} {field}={v}: {r}");
        }
    }
    // Huge strings (1 MB) in every string field.
    let huge = "x".repeat(1 << 20);
    s.fails("learn", json!({"insight": huge}), &["insight"]);
    s.fails("learn", json!({"insight": "ok insight", "context": huge}), &["context"]);
    s.fails("recall", json!({"query": huge}), &["query"]);
    s.fails("recall", json!({"query": "q", "context_filter": huge}), &["context_filter"]);
    s.fails("save_perception", json!({"description": "huge meta", "metadata": huge}), &["metadata"]);
    s.fails("forget", json!({"memory_id": 1, "reason": huge}), &["reason"]);
    s.fails("start_session", json!({"collection": huge}), &["collection"]);
    s.fails("end_session", json!({"session_id": huge}), &["session"]);
    let big_data = json!({"samples": "y".repeat(1 << 20)}).to_string();
    s.ok("save_perception", json!({"description": "one megabyte of samples", "data": big_data}));
    // Control characters and odd Unicode are data, not protocol.
    s.fails("learn", json!({"insight": "nul \u{0} inside"}), &["insight", "NUL"]);
    s.ok("learn", json!({"insight": "bell \u{7} rtl \u{202e} emoji 🤖 line\nbreak"}));
    let r = s.ok("recall", json!({"query": "🤖 \u{0} \"quoted\" OR AND NEAR( * -"}));
    assert!(r["memories"].is_array());
    s.alive();
    assert!(s.finish().success());
}

#[test]
fn concurrent_recalls_are_all_answered() {
    let (_dir, db) = temp();
    let (mut s, _) = Server::ready(&db, "2025-11-25");
    for i in 0..20 {
        s.ok("learn", json!({"insight": format!("pick place trial {i}: approach object {i} from the left")}));
    }
    let ids: Vec<i64> = (1000..1032).collect();
    for id in &ids {
        let m = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "recall", "arguments": {"query": "approach left", "n": 3}}});
        s.send_raw(&m.to_string());
    }
    for id in ids {
        let r = s.wait_for("recall", |v| v["id"] == id);
        assert_eq!(r["result"]["structuredContent"]["memories"].as_array().unwrap().len(), 3, "{r}");
    }
    assert!(s.finish().success());
}

#[test]
fn eof_and_sigterm_close_the_database() {
    let (_dir, db) = temp();
    let (mut s, _) = Server::ready(&db, "2025-11-25");
    s.ok("learn", json!({"insight": "written before EOF"}));
    assert!(s.finish().success(), "EOF: clean exit");
    let (mut s, _) = Server::ready(&db, "2025-11-25");
    s.ok("learn", json!({"insight": "written before SIGTERM"}));
    let pid = s.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let status = wait(&mut s.child);
    assert!(status.success(), "SIGTERM: clean exit, got {status:?}");
    assert!(
        !db.with_file_name("m.db-wal").exists() || std::fs::metadata(db.with_file_name("m.db-wal")).unwrap().len() == 0,
        "WAL checkpointed"
    );
    // A signal or EOF before any handshake: a clean exit too.
    let mut s = Server::start(&db);
    // An answer to garbage shows the server is up (signal handlers are set before).
    s.send_raw("garbage");
    s.wait_for("garbage", |v| v["error"]["code"] == -32700);
    assert!(Command::new("kill").args(["-TERM", &s.child.id().to_string()]).status().unwrap().success());
    assert!(wait(&mut s.child).success(), "SIGTERM before the handshake");
    assert!(Server::start(&db).finish().success(), "EOF before the handshake");
    let (mut s, _) = Server::ready(&db, "2025-11-25");
    let r = s.ok("recall", json!({"query": "written before"}));
    assert_eq!(r["total"], 2, "{r}");
    assert!(s.finish().success());
}
