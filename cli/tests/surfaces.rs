//! One request layer, three surfaces: the CLI, the web API (and its page) and the
//! MCP tools must show and apply the same defaults, bounds and filter operators,
//! and those are the library's (`robotmem::limits`). The clap side is also
//! checked by introspection in `src/request/tests.rs`.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

#[path = "common/web.rs"]
mod web_server;

use robotmem::limits;
use serde_json::{json, Value};

fn robotmem(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_robotmem"))
        .arg("--db")
        .arg(db)
        .args(["--no-embeddings", "--durability", "normal", "--json"])
        .args(args)
        .env_remove("ROBOTMEM_MODEL_DIR")
        .output()
        .unwrap()
}

fn cli(db: &Path, args: &[&str]) -> Value {
    let o = robotmem(db, args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// A file with more memories about cups than any default shows, in a session.
fn filled() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::Builder::new().prefix("robotmem-surfaces").tempdir().unwrap();
    let db = dir.path().join("m.db");
    let sid = cli(&db, &["session", "start"])["session_id"].as_str().unwrap().to_string();
    let kinds = ["ceramic", "glass", "paper", "steel", "plastic", "wooden", "bamboo", "clay", "tin", "silver"];
    for (i, k) in kinds.iter().enumerate() {
        cli(&db, &["learn", &format!("the {k} cup needs a grip of {i}.5 N on shelf {i}"), "--session", &sid]);
    }
    for i in 0..30 {
        cli(&db, &["learn", &format!("waypoint {i} of corridor {} is clear", i * 7)]);
    }
    (dir, db)
}

/// `GET path` on a web console of `db`: (status, JSON body), for each path.
fn web(db: &Path, paths: &[&str]) -> Vec<(u16, Value)> {
    // The server keeps a directory alive with it; the database stays in the caller's.
    let s = web_server::serve(tempfile::tempdir().unwrap(), db, &[], None);
    paths.iter().map(|p| web_server::get(&s, p)).map(|r| (r.code, r.json())).collect()
}

/// MCP: the handshake, then `calls` (method, params) in order; their results.
fn mcp(db: &Path, calls: &[(&str, Value)]) -> Vec<Value> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_robotmem"))
        .arg("--db")
        .arg(db)
        .args(["--no-embeddings", "mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    let hello =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}));
    lines.next().unwrap().unwrap();
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut out = Vec::new();
    for (i, (method, params)) in calls.iter().enumerate() {
        send(json!({"jsonrpc": "2.0", "id": i + 1, "method": method, "params": params}));
        let v: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        assert_eq!(v["id"], i + 1, "{v}");
        out.push(v["result"].clone());
    }
    drop(stdin);
    child.wait().unwrap();
    out
}

fn recall(args: Value) -> (&'static str, Value) {
    ("tools/call", json!({"name": "recall", "arguments": args}))
}

#[test]
fn mcp_schemas_state_the_limits() {
    let (_dir, db) = filled();
    let tools = mcp(&db, &[("tools/list", json!({}))]).remove(0);
    let tools = tools["tools"].as_array().unwrap();
    let props = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap()["inputSchema"]["properties"].clone();
    let r = props("recall");
    assert_eq!(r["n"]["default"], limits::DEFAULT_RESULTS);
    assert_eq!(r["n"]["minimum"].as_f64(), Some(1.0));
    assert_eq!(r["n"]["maximum"].as_f64(), Some(limits::MAX_RESULTS as f64));
    assert_eq!(r["min_confidence"]["default"], limits::DEFAULT_MIN_CONFIDENCE);
    assert_eq!(
        (r["min_confidence"]["minimum"].as_f64(), r["min_confidence"]["maximum"].as_f64()),
        (Some(0.0), Some(1.0))
    );
    assert_eq!(r["query"]["maxLength"], limits::MAX_QUERY_CHARS);
    assert_eq!(r["group_similar"]["default"], false, "the API's default; only the web page groups by default");
    // The operators the filter takes, as its description lists them.
    let d = r["context_filter"]["description"].as_str().unwrap();
    let listed = d.split("operators").nth(1).unwrap_or_else(|| panic!("no operator list in {d:?}"));
    let ops: Vec<&str> =
        listed.split(|c: char| c.is_whitespace() || c == '.' || c == ',').filter(|w| w.starts_with('$')).collect();
    assert_eq!(ops, limits::FILTER_OPERATORS, "{d}");
    // No tool injects a collection: the handle's default applies.
    for t in ["learn", "recall", "save_perception", "start_session"] {
        let c = &props(t)["collection"];
        assert!(c.get("default").is_none_or(Value::is_null), "{t}: {c}");
    }
    assert_eq!(props("learn")["insight"]["maxLength"], limits::MAX_CONTENT_CHARS);
    assert_eq!(props("save_perception")["description"]["minLength"], limits::MIN_DESCRIPTION_CHARS);
    assert_eq!(props("forget")["reason"]["maxLength"], limits::MAX_REASON_CHARS);
}

#[test]
fn every_surface_applies_the_same_defaults_and_bounds() {
    let (_dir, db) = filled();
    let n = limits::DEFAULT_RESULTS as usize;
    let count = |v: &Value| v["memories"].as_array().unwrap().len();
    // recall without n: the default, everywhere.
    assert_eq!(count(&cli(&db, &["recall", "cup grip shelf"])), n);
    let calls = [
        recall(json!({"query": "cup grip shelf"})),
        recall(json!({"query": "cup grip shelf", "n": 0})),
        recall(json!({"query": "cup grip shelf", "n": limits::MAX_RESULTS + 1})),
    ];
    let m = mcp(&db, &calls);
    assert_eq!(count(&m[0]["structuredContent"]), n);
    assert_eq!((m[1]["isError"].as_bool(), m[2]["isError"].as_bool()), (Some(true), Some(true)));
    let too_many = format!("/api/search?q=cup&n={}", limits::MAX_RESULTS + 1);
    let max_page = format!("/api/memories?per_page={}", limits::MAX_PER_PAGE);
    let over_page = format!("/api/memories?per_page={}", limits::MAX_PER_PAGE + 1);
    let w = web(
        &db,
        &[
            "/api/search?q=cup%20grip%20shelf",
            "/api/search?q=cup&n=0",
            &too_many,
            "/api/memories",
            &max_page,
            &over_page,
            "/api/sessions",
        ],
    );
    assert_eq!((w[0].0, count(&w[0].1)), (200, n), "{}", w[0].1);
    for (code, body) in &w[1..3] {
        assert_eq!(*code, 400, "{body}");
        assert!(body["error"]["message"].as_str().unwrap().contains(&limits::MAX_RESULTS.to_string()), "{body}");
    }
    let per_page = limits::DEFAULT_PER_PAGE as usize;
    assert_eq!((w[3].1["per_page"].as_u64(), count(&w[3].1)), (Some(per_page as u64), per_page));
    assert_eq!((w[4].0, count(&w[4].1)), (200, 40));
    assert_eq!(w[5].0, 400, "{}", w[5].1);
    assert_eq!(w[6].1["per_page"], limits::DEFAULT_PER_PAGE);
    // The CLI: the same page size and the same refusals (exit 10 + invalid argument).
    let l = cli(&db, &["list"]);
    assert_eq!((l["per_page"].as_u64(), count(&l)), (Some(per_page as u64), per_page));
    assert_eq!(cli(&db, &["sessions"])["per_page"], limits::DEFAULT_PER_PAGE);
    assert_eq!(robotmem(&db, &["recall", "cup", "-n", "0"]).status.code(), Some(11));
    assert_eq!(robotmem(&db, &["list", "--per-page", &(limits::MAX_PER_PAGE + 1).to_string()]).status.code(), Some(11));
}

/// The page sends no default of its own: no page size (but the largest page where
/// it shows everything), no n (its input's placeholder is the default), the API's
/// own default for everything but grouping, which the page turns on on purpose.
#[test]
fn the_page_sends_the_api_defaults() {
    let js = include_str!("../src/web/assets/app.js");
    let max = format!("per_page={}", limits::MAX_PER_PAGE);
    for (i, _) in js.match_indices("per_page=") {
        assert!(js[i..].starts_with(&max), "app.js sends a page size: {}", &js[i..i + 20]);
    }
    assert!(!js.contains("per_page\","), "app.js sets a page size");
    assert!(!js.contains("?n=") && !js.contains("&n="), "app.js sends an n");
    let n_input = js.split("name: \"n\"").nth(1).unwrap().split('}').next().unwrap();
    assert!(n_input.contains("|| \"\""), "the n input is empty unless given: {n_input}");
    assert!(n_input.contains(&format!("placeholder: \"{}\"", limits::DEFAULT_RESULTS)), "{n_input}");
    assert!(js.contains("q.set(\"group_similar\", \"true\")"), "the page groups repeats by default (README)");
}
