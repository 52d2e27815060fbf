//! `robotmem web` over real HTTP on loopback: every endpoint, status codes,
//! pagination, filters, bad ids, bad JSON, oversize bodies, the Host check, token
//! and CSRF refusals, read-only, security headers. The server is the real binary
//! on a free port (`--bind 127.0.0.1:0`); requests are written by hand so each
//! header is exactly what the test says (tests/common/web.rs). What an attacker
//! holding sockets or sending malformed heads gets is tests/web_attack.rs.

#[path = "common/web.rs"]
mod web;

use std::process::Command;

use serde_json::{json, Value};
use web::{assert_error, get, request, Server, TOKEN};

fn cli(db: &std::path::Path, args: &[&str]) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_robotmem"))
        .arg("--db")
        .arg(db)
        .args(["--no-embeddings", "--durability", "normal", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// A file with 60 memories (one with markup), a session and a failure, served.
fn server(extra: &[&str]) -> Server {
    let dir = tempfile::Builder::new().prefix("robotmem-web-test").tempdir().unwrap();
    let db = dir.path().join("m.db");
    for i in 1..=57 {
        cli(
            &db,
            &[
                "learn",
                &format!("grasp {i} of the red cup at {i}.5N succeeded"),
                "--context",
                r#"{"task": {"success": true}}"#,
            ],
        );
    }
    cli(
        &db,
        &[
            "learn",
            "<img src=x onerror=alert(1)> gripper slipped at 3N",
            "--context",
            r#"{"task": {"success": false}}"#,
            "--collection",
            "lab",
        ],
    );
    let sid = cli(&db, &["session", "start"])["session_id"].as_str().unwrap().to_string();
    cli(&db, &["learn", "pushed the box 0.3 m toward the wall", "--session", &sid]);
    cli(&db, &["session", "end", &sid, "--outcome", "0.5"]);
    cli(&db, &["learn", "lesson: always calibrate the force sensor before a new session"]);
    web::serve(dir, &db, extra, None)
}

const WRITE: &[&str] = &["X-Robotmem-Csrf: 1"];

#[test]
fn read_endpoints() {
    let s = server(&[]);
    let page = get(&s, "/");
    assert_eq!(page.code, 200);
    assert!(page.body.contains("<script src=\"/app.js\""), "the page loads its script from here");
    assert!(
        page.headers.contains("content-security-policy: default-src 'none'; script-src 'self'"),
        "{}",
        page.headers
    );
    assert!(page.headers.contains("x-content-type-options: nosniff"));
    assert_eq!(get(&s, "/app.js").code, 200);
    assert_eq!(get(&s, "/app.css").code, 200);

    let st = get(&s, "/api/stats").json();
    assert_eq!(
        (st["memories"].as_i64(), st["active"].as_i64(), st["sessions"].as_i64()),
        (Some(60), Some(60), Some(1))
    );
    assert!(get(&s, "/api/collections").json()["collections"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["collection"] == "lab"));
    assert!(get(&s, "/api/categories").json()["categories"].is_object());
    assert_eq!(get(&s, "/api/doctor").json()["ok"], true);

    let p1 = get(&s, "/api/memories?per_page=25").json();
    assert_eq!((p1["total"].as_i64(), p1["memories"].as_array().unwrap().len()), (Some(60), 25));
    let p3 = get(&s, "/api/memories?per_page=25&page=3").json();
    assert_eq!(p3["memories"].as_array().unwrap().len(), 10);
    assert_eq!(p3["memories"][9]["id"], 1, "newest first: the last page ends with #1");
    assert_eq!(get(&s, "/api/memories?collection=lab").json()["total"], 1);
    assert_eq!(get(&s, "/api/memories?type=perception").json()["total"], 0);
    assert_eq!(get(&s, "/api/memories?min_confidence=0.99").json()["total"], 0);
    assert_eq!(get(&s, "/api/memories?days=1&status=all").json()["total"], 60);
    assert_error(&get(&s, "/api/memories?status=gone"), 400, "status");
    assert_error(&get(&s, "/api/memories?per_page=501"), 400, "limit");
    assert_error(&get(&s, "/api/memories?page=0"), 400, "page");
    assert_error(&get(&s, "/api/memories?page=x"), 400, "page");

    let r = get(&s, "/api/search?q=red%20cup&n=3").json();
    assert_eq!((r["mode"].as_str(), r["memories"].as_array().unwrap().len()), (Some("bm25_only"), 3));
    assert!(r["memories"][0]["_rrf_score"].is_number());
    let f = get(&s, "/api/search?q=*&collection=lab&filter=%7B%22task.success%22%3A%20false%7D").json();
    assert_eq!(f["memories"][0]["content"], "<img src=x onerror=alert(1)> gripper slipped at 3N");
    // 57 repeats of one grasp, other numbers each: one hit that lists the other 56.
    let g = get(&s, "/api/search?q=red%20cup&n=3&group_similar=true").json();
    assert_eq!(g["memories"].as_array().unwrap().len(), 1, "{g}");
    assert_eq!(g["memories"][0]["_similar"].as_array().unwrap().len(), 56);
    assert!(r["memories"][0].get("_similar").is_none(), "no _similar without group_similar");
    assert_error(&get(&s, "/api/search?q=cup&group_similar=maybe"), 400, "group_similar");
    assert_error(&get(&s, "/api/search"), 400, "q");
    assert_error(&get(&s, "/api/search?q=x&filter=%7Bbad"), 400, "context_filter");

    let m = get(&s, "/api/memory/1").json();
    assert_eq!(m["content"], "grasp 1 of the red cup at 1.5N succeeded");
    assert!(m["tags"].is_array());
    assert_error(&get(&s, "/api/memory/999999"), 404, "999999");
    assert_error(&get(&s, "/api/memory/abc"), 400, "memory id");
    assert_error(&get(&s, "/api/memory/-3"), 400, "memory_id");

    let ss = get(&s, "/api/sessions").json();
    let sid = ss["sessions"][0]["session_id"].as_str().unwrap().to_string();
    assert_eq!((ss["total"].as_i64(), ss["sessions"][0]["memory_count"].as_i64()), (Some(1), Some(1)));
    let tl = get(&s, &format!("/api/sessions/{sid}/memories")).json();
    assert_eq!(tl["memories"][0]["content"], "pushed the box 0.3 m toward the wall");

    let rf = get(&s, "/api/recent-failures?n=5").json();
    let contents: Vec<&str> =
        rf["memories"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap()).collect();
    assert!(contents.contains(&"<img src=x onerror=alert(1)> gripper slipped at 3N"), "{contents:?}");
    assert_error(&get(&s, "/api/recent-failures?n=0"), 400, "n");

    assert_error(&get(&s, "/api/nothing-here"), 404, "no such");
    assert_error(&request(&s, "POST", "/api/stats", WRITE, Some(b"{}")), 405, "method");
}

#[test]
fn history_and_as_of() {
    let s = server(&[]);
    let first = get(&s, "/api/memory/1").json();
    let learned = first["created_at"].as_str().unwrap().to_string();
    let up =
        request(&s, "PUT", "/api/memory/1", WRITE, Some(br#"{"content": "grasp 1 of the blue cup at 2N slipped"}"#));
    assert_eq!(up.code, 200, "{}", up.body);
    let h = get(&s, "/api/memory/1/history").json();
    let versions = h["versions"].as_array().unwrap();
    assert_eq!((versions.len(), versions[1]["cause"].as_str()), (2, Some("update")), "{h}");
    let at = |path: &str| format!("{path}{}as_of={}", if path.contains('?') { "&" } else { "?" }, learned);
    let then = get(&s, &at("/api/memory/1")).json();
    assert!(then["content"].as_str().unwrap().contains("red cup") && then["as_of"] == learned.as_str(), "{then}");
    let found = get(&s, &at("/api/search?q=red+cup+grasp+1&n=100")).json();
    assert!(found["memories"].as_array().unwrap().iter().any(|m| m["id"] == 1), "{found}");
    assert_eq!(get(&s, &at("/api/memories")).json()["total"], 1, "only #1 existed then");
    assert_error(&get(&s, "/api/memory/1?as_of=soon"), 400, "as_of");
    assert_error(&get(&s, "/api/search?q=cup&as_of=2999-01-01T00:00:00Z"), 400, "future");
    assert_error(&get(&s, "/api/memory/999/history"), 404, "999");
    assert_error(&get(&s, "/api/memory/x/history"), 400, "memory id");
}

#[test]
fn writes_need_csrf_and_valid_bodies() {
    let s = server(&[]);
    // No CSRF header, a foreign Origin: refused, nothing changes.
    assert_error(&request(&s, "DELETE", "/api/memory/2", &[], Some(br#"{"reason": "x"}"#)), 403, "X-Robotmem-Csrf");
    let evil = ["X-Robotmem-Csrf: 1", "Origin: http://evil.example"];
    assert_error(&request(&s, "DELETE", "/api/memory/2", &evil, Some(br#"{"reason": "x"}"#)), 403, "origin");
    assert_eq!(get(&s, "/api/memory/2").json()["status"], "active");
    // Same origin: accepted.
    let port = format!("Origin: http://127.0.0.1:{}", s.port);
    let ours = ["X-Robotmem-Csrf: 1", port.as_str()];
    let f = request(&s, "DELETE", "/api/memory/2", &ours, Some(br#"{"reason": "miscalibrated sensor"}"#));
    assert_eq!((f.code, f.json()["status"].as_str()), (200, Some("forgotten")), "{}", f.body);
    assert_eq!(get(&s, "/api/memory/2").json()["status"], "invalidated");
    assert_error(&request(&s, "DELETE", "/api/memory/2", WRITE, Some(br#"{"reason": "again"}"#)), 409, "#2");

    let u = request(
        &s,
        "PUT",
        "/api/memory/3",
        WRITE,
        Some(br#"{"content": "grasp 3 of the blue cup at 3.5N succeeded", "context": {"task": {"success": true}}}"#),
    );
    assert_eq!(u.json()["status"], "updated", "{}", u.body);
    assert_eq!(get(&s, "/api/memory/3").json()["content"], "grasp 3 of the blue cup at 3.5N succeeded");

    assert_error(&request(&s, "PUT", "/api/memory/3", WRITE, Some(b"{not json")), 400, "not valid JSON");
    assert_error(&request(&s, "PUT", "/api/memory/3", WRITE, Some(b"[1, 2]")), 400, "object");
    assert_error(&request(&s, "PUT", "/api/memory/3", WRITE, Some(br#"{"content": 5}"#)), 400, "content");
    assert_error(&request(&s, "PUT", "/api/memory/3", WRITE, Some(br#"{"content": "   "}"#)), 400, "new_content");
    assert_error(
        &request(&s, "PUT", "/api/memory/3", WRITE, Some(br#"{"content": "ok text", "context": 7}"#)),
        400,
        "context",
    );
    assert_error(&request(&s, "DELETE", "/api/memory/4", WRITE, Some(br#"{}"#)), 400, "reason");
    assert_error(&request(&s, "DELETE", "/api/memory/424242", WRITE, Some(br#"{"reason": "x"}"#)), 404, "424242");
    // Expiry: set, moved into the past (expired at once), cleared; CSRF and bodies checked like the others.
    let e = request(&s, "PUT", "/api/memory/3/expiry", WRITE, Some(br#"{"ttl_seconds": 3600}"#)).json();
    assert!(e["expires_at"].is_string() && e["expired"] == false, "{e}");
    let e = request(&s, "PUT", "/api/memory/3/expiry", WRITE, Some(br#"{"expires_at": "2000-01-01T00:00:00Z"}"#));
    assert_eq!(
        (e.json()["expires_at"].as_str(), e.json()["expired"].as_bool()),
        (Some("2000-01-01T00:00:00.000Z"), Some(true))
    );
    let e = request(&s, "PUT", "/api/memory/3/expiry", WRITE, Some(b"{}")).json();
    assert!(e["expires_at"].is_null() && e["expired"] == false, "{e}");
    assert_error(
        &request(&s, "PUT", "/api/memory/3/expiry", &[], Some(br#"{"ttl_seconds": 60}"#)),
        403,
        "X-Robotmem-Csrf",
    );
    assert_error(
        &request(&s, "PUT", "/api/memory/3/expiry", WRITE, Some(br#"{"ttl_seconds": -1}"#)),
        400,
        "ttl_seconds",
    );
    assert_error(
        &request(
            &s,
            "PUT",
            "/api/memory/3/expiry",
            WRITE,
            Some(br#"{"ttl_seconds": 1, "expires_at": "2030-01-01T00:00:00Z"}"#),
        ),
        400,
        "not both",
    );
    assert_error(
        &request(&s, "PUT", "/api/memory/424242/expiry", WRITE, Some(br#"{"ttl_seconds": 60}"#)),
        404,
        "424242",
    );
    assert_eq!(get(&s, "/api/memory/3").json()["expires_at"], Value::Null);
    // Purge: CSRF-checked, the age checked; a memory forgotten now goes at age 0, not at 30 days.
    let p = request(&s, "POST", "/api/purge", WRITE, Some(br#"{"older_than_seconds": 2592000}"#)).json();
    assert_eq!((p["status"].as_str(), p["purged"].as_u64()), (Some("purged"), Some(0)), "{p}");
    assert_error(
        &request(&s, "POST", "/api/purge", &[], Some(br#"{"older_than_seconds": 0}"#)),
        403,
        "X-Robotmem-Csrf",
    );
    for bad in [&br#"{"older_than_seconds": -1}"#[..], br#"{"older_than_seconds": "1d"}"#, b"{}", b"[", b"null"] {
        assert_error(&request(&s, "POST", "/api/purge", WRITE, Some(bad)), 400, "");
    }
    let f = request(&s, "DELETE", "/api/memory/4", WRITE, Some(br#"{"reason": "wrong cup"}"#));
    assert_eq!(f.json()["status"], "forgotten", "{}", f.body);
    let p = request(&s, "POST", "/api/purge", WRITE, Some(br#"{"older_than_seconds": 0}"#)).json();
    assert!(p["purged"].as_u64() >= Some(1), "{p}");
    assert_error(&request(&s, "GET", "/api/memory/4", &[], None), 404, "4");
    let big = json!({"content": "x".repeat(70_000)}).to_string();
    assert_error(&request(&s, "PUT", "/api/memory/3", WRITE, Some(big.as_bytes())), 413, "larger than");
}

#[test]
fn host_token_and_read_only() {
    let s = server(&[]);
    // DNS rebinding: a request for another host name reaches a loopback console.
    for host in ["attacker.example", "127.attacker.example", "localhost.attacker.example", "127.0.0.1.nip.io:6889", ""]
    {
        assert_error(&request(&s, "GET", "/api/stats", &[&format!("Host: {host}")], None), 403, "localhost");
    }
    assert_eq!(request(&s, "GET", "/api/stats", &[&format!("Host: [::1]:{}", s.port)], None).code, 200);
    assert_eq!(request(&s, "GET", "/api/stats", &[&format!("Host: 127.0.0.2:{}", s.port)], None).code, 200);
    assert_eq!(request(&s, "GET", "/api/stats", &[&format!("Host: localhost:{}", s.port)], None).code, 200);
    drop(s);

    let t = server(&["--token", TOKEN]);
    let r = get(&t, "/api/stats");
    assert_error(&r, 401, "token");
    assert!(r.headers.contains("www-authenticate: bearer"));
    assert_error(
        &request(&t, "GET", "/api/stats", &["Authorization: Bearer wrong-token-wrong-token"], None),
        401,
        "token",
    );
    let auth = format!("Authorization: Bearer {TOKEN}");
    assert_eq!(request(&t, "GET", "/api/stats", &[&auth], None).code, 200);
    assert_eq!(get(&t, "/").code, 200, "the page itself holds no data");
    // With a token the Host is not restricted (the token is the gate).
    assert_eq!(request(&t, "GET", "/api/stats", &[&auth, "Host: robot-7.lan:6889"], None).code, 200);
    drop(t);

    let ro = server(&["--read-only"]);
    assert_error(&request(&ro, "DELETE", "/api/memory/1", WRITE, Some(br#"{"reason": "x"}"#)), 403, "read-only");
    assert_error(&request(&ro, "PUT", "/api/memory/1", WRITE, Some(br#"{"content": "x"}"#)), 403, "read-only");
    assert_error(
        &request(&ro, "PUT", "/api/memory/1/expiry", WRITE, Some(br#"{"ttl_seconds": 60}"#)),
        403,
        "read-only",
    );
    assert_error(&request(&ro, "POST", "/api/purge", WRITE, Some(br#"{"older_than_seconds": 0}"#)), 403, "read-only");
    assert_eq!(get(&ro, "/api/memory/1").json()["status"], "active");
}

#[test]
fn refuses_unsafe_binds() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_robotmem"))
            .arg("--db")
            .arg(dir.path().join("m.db"))
            .args(["--no-embeddings", "web"])
            .args(args)
            .env_remove("ROBOTMEM_WEB_TOKEN")
            .output()
            .unwrap()
    };
    let o = run(&["--bind", "0.0.0.0:0"]);
    assert_eq!(o.status.code(), Some(11));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--token"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&["--bind", "0.0.0.0:0", "--token", "short"]);
    assert_eq!(o.status.code(), Some(11));
    let o = run(&["--bind", "not-an-address"]);
    assert_eq!(o.status.code(), Some(11));
}

/// The console's extras: matches counted for a search, the learned-over-time bins
/// and outcomes per task and robot on /api/stats.
#[test]
fn console_counts() {
    let s = server(&[]);
    let r = get(&s, "/api/search?q=red%20cup&n=3").json();
    assert_eq!(
        (r["total"].as_i64(), r["matches"].as_i64(), r["matches_exact"].as_bool()),
        (Some(3), Some(57), Some(true))
    );
    let g = get(&s, "/api/search?q=red%20cup&n=3&group_similar=true").json();
    assert_eq!((g["total"].as_i64(), g["matches"].as_i64()), (Some(1), Some(57)), "a group counts its memories");
    let lab = get(&s, "/api/search?q=gripper&collection=lab").json();
    assert_eq!(
        (lab["total"].as_i64(), lab["matches"].as_i64(), lab["matches_exact"].as_bool()),
        (Some(1), Some(1), Some(true))
    );
    let big = get(&s, "/api/search?q=red%20cup&n=100").json();
    assert_eq!(big["matches"], 57);

    let st = get(&s, "/api/stats").json();
    let l = &st["learned"];
    assert_eq!((l["bin_days"].as_i64(), l["exact"].as_bool()), (Some(1), Some(true)), "{l}");
    let counts: Vec<i64> = l["counts"].as_array().unwrap().iter().map(|c| c.as_i64().unwrap()).collect();
    assert_eq!((counts.len(), counts.iter().sum::<i64>()), (1, 60), "all learned today: {counts:?}");
    let task = &st["outcomes"]["by_task"][0];
    assert_eq!(
        (task["name"].as_str(), task["success"].as_i64(), task["failure"].as_i64()),
        (Some("(not named)"), Some(57), Some(1))
    );
    assert_eq!(st["outcomes"]["memories_read"], 60);
}
