//! The hostile lines of issue 28 sent to `robotmem mcp` over raw stdio: each
//! gets exactly one JSON-RPC error with the right code and id (a notification
//! none), the server stays alive for the next line, and stdout carries only
//! protocol lines. BM25 only (no model needed).

#[path = "common/mcp_server.rs"]
mod mcp_server;

use std::io::Write;
use std::time::Duration;

use mcp_server::{temp, Server};
use serde_json::{json, Value};

/// The longest line the server reads, its newline included (16 MiB).
const MAX_LINE: usize = 16 << 20;

/// Sends `line`; exactly one answer must come, an error with `code` and `id`,
/// and a ping after it must still work. Returns the error's message.
fn one_answer(s: &mut Server, line: &[u8], code: i64, id: Value) -> String {
    let what = String::from_utf8_lossy(&line[..line.len().min(100)]).into_owned();
    s.send_bytes(line);
    let v = s.wait_for(&what, |v| v.get("error").is_some());
    assert_eq!((v["error"]["code"].as_i64(), &v["id"]), (Some(code), &id), "{what}: {v}");
    s.alive();
    assert!(s.pending.is_empty(), "{what}: more than one answer: {:?}", s.pending);
    v["error"]["message"].as_str().unwrap().to_string()
}

fn call(id: i64, params: &str) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#).into_bytes()
}

/// A ping of exactly `len` bytes (its params padded).
fn padded_ping(id: i64, len: usize) -> Vec<u8> {
    let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{"pad":""#);
    let tail = r#""}}"#;
    let mut line = head.into_bytes();
    line.resize(len - tail.len(), b'x');
    line.extend_from_slice(tail.as_bytes());
    line
}

#[test]
fn every_hostile_line_gets_one_answer() {
    let (_dir, db) = temp();
    let (mut s, _) = Server::ready(&db, "2025-11-25");
    let null = Value::Null;
    // An id no parser can hold: answered with id null.
    let m = one_answer(&mut s, br#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#, -32600, null.clone());
    assert!(m.contains("id"), "{m}");
    // Values no parser can hold, in params: invalid params naming the field.
    for (id, params, field) in [
        (11, r#"{"name":"recall","arguments":{"query":"grip","n":1e309}}"#, "arguments.n"),
        (12, r#"{"name":"recall","arguments":{"query":"grip","min_confidence":1e309}}"#, "arguments.min_confidence"),
        (13, r#"{"name":"learn","arguments":{"insight":"bad \ud800 x"}}"#, "arguments.insight"),
        (14, r#"{"name":"learn","arguments":"x"}"#, "arguments must be an object"),
        (15, r#"{"name":null}"#, "name must be a string"),
        (16, r#"{"name":"no_such_tool","arguments":{}}"#, "no_such_tool"),
    ] {
        let m = one_answer(&mut s, &call(id, params), -32602, json!(id));
        assert!(m.contains(field), "{params}: {m} lacks {field}");
    }
    // Not JSON, or too deep for the parser: parse errors with id null.
    let deep_params = format!(
        r#"{{"jsonrpc":"2.0","id":17,"method":"ping","params":{{"x":{}{}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    let open = "{\"a\":".repeat(100_000);
    let unparseable: [&[u8]; 10] = [
        b"",
        b" \t ",
        b"\xff\xfe\x00 garbage",
        b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":{\"x\":\"\xc3\x28\"}}",
        deep_params.as_bytes(),
        deep.as_bytes(),
        open.as_bytes(),
        b"not json",
        // A notification that cannot be parsed is answered too.
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"",
        b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}}",
    ];
    for line in unparseable {
        one_answer(&mut s, line, -32700, null.clone());
    }
    // JSON that is no request: invalid requests with id null.
    for line in ["[]", "[1]", r#"[{"jsonrpc":"2.0","id":7,"method":"ping"}]"#, "null", "42", "\"bad \\ud800 x\"", "{}"]
    {
        one_answer(&mut s, line.as_bytes(), -32600, null.clone());
    }
    // A notification with params no parser can hold: no answer at all.
    s.send_raw(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1e309}}"#);
    s.alive();
    s.nothing_more(Duration::from_secs(1));
    assert!(s.finish().success());
}

#[test]
fn lines_at_and_over_the_16_mib_limit() {
    let (_dir, db) = temp();
    let (mut s, _) = Server::ready(&db, "2025-11-25");
    // The longest line read: MAX_LINE bytes with its newline.
    s.send_bytes(&padded_ping(21, MAX_LINE - 1));
    assert_eq!(s.wait_for("the longest ping", |v| v["id"] == 21)["result"], json!({}));
    // One byte more, and 16 MiB + 1 before the newline: skipped, answered.
    for len in [MAX_LINE, MAX_LINE + 1] {
        let m = one_answer(&mut s, &padded_ping(22, len), -32700, Value::Null);
        assert!(m.contains(&MAX_LINE.to_string()), "{m}");
    }
    // A line that never ends before EOF: answered at once, skipped to the end.
    s.stdin.as_mut().unwrap().write_all(&vec![b'['; 3 * MAX_LINE]).unwrap();
    s.wait_for("the endless line", |v| v["error"]["code"] == -32700);
    s.nothing_more(Duration::from_millis(500));
    assert!(s.finish().success());
}
