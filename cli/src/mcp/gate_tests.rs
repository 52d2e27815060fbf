//! The gate's verdicts line by line (the process-level test is tests/mcp_attack.rs).

use serde_json::Value;

use super::{judge, oversized, Verdict, MAX_LINE};

/// The error answer to `line`: (code, id, message).
fn answer(line: &[u8]) -> (i64, Value, String) {
    match judge(line) {
        Verdict::Answer(a) => fields(&a),
        other => panic!("{}: {other:?}", String::from_utf8_lossy(line)),
    }
}

/// An answer line's (code, id, message).
fn fields(a: &[u8]) -> (i64, Value, String) {
    assert_eq!(a.last(), Some(&b'\n'));
    assert_eq!(a.iter().filter(|&&b| b == b'\n').count(), 1, "one line");
    let v: Value = serde_json::from_slice(a).unwrap();
    assert_eq!(v["jsonrpc"], "2.0");
    (v["error"]["code"].as_i64().unwrap(), v["id"].clone(), v["error"]["message"].as_str().unwrap().into())
}

fn call(params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{params}}}"#)
}

#[test]
fn lines_that_are_not_json_are_parse_errors_with_id_null() {
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    let deep_params = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"x":{}1{}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    for line in [
        &b""[..],
        b"  \t ",
        b"not json",
        b"{\"a\":",
        b"}{",
        b"\xff\xfe{}",
        b"{\"a\":\"\xc3\"}",
        deep.as_bytes(),
        deep_params.as_bytes(),
    ] {
        let (code, id, _) = answer(line);
        assert_eq!((code, id), (-32700, Value::Null), "{}", String::from_utf8_lossy(line));
    }
    assert!(answer(deep.as_bytes()).2.contains("128"));
    let (code, id, m) = fields(&oversized());
    assert_eq!((code, id), (-32700, Value::Null));
    assert!(m.contains(&MAX_LINE.to_string()), "{m}");
}

#[test]
fn json_that_is_no_message_is_an_invalid_request() {
    for line in
        ["[]", "[1]", r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, "null", "42", "\"text\"", "{}", r#"{"foo":1}"#]
    {
        assert_eq!(answer(line.as_bytes()).0, -32600, "{line}");
    }
    let (code, id, m) = answer(br#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#);
    assert_eq!((code, id), (-32600, Value::from("a")));
    assert!(m.contains("jsonrpc"), "{m}");
    // A malformed notification is answered too (the spec's own example).
    let (code, id, _) = answer(br#"{"jsonrpc":"2.0","method":1,"params":"bar"}"#);
    assert_eq!((code, id), (-32600, Value::Null));
    assert_eq!(answer(br#"{"jsonrpc":"2.0","id":3,"method":[]}"#).1, 3);
}

#[test]
fn an_unreadable_id_is_answered_with_null() {
    for id in ["1e400", "-1e400", "{}", "[1]", "1.5", "null", "true", "18446744073709551616", r#""\ud800""#] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        let (code, got, m) = answer(line.as_bytes());
        assert_eq!((code, got), (-32600, Value::Null), "{line}: {m}");
        assert!(m.contains("id"), "{m}");
    }
    // What the SDK reads as an integer is one.
    assert_eq!(judge(br#"{"jsonrpc":"2.0","id":7.0,"method":"ping"}"#), Verdict::Forward);
}

#[test]
fn unrepresentable_values_in_params_name_the_field() {
    for (args, field) in [
        (r#"{"query":"x","n":1e309}"#, "arguments.n"),
        (r#"{"query":"x","min_confidence":-1e309}"#, "arguments.min_confidence"),
        (r#"{"insight":"bad \ud800 x"}"#, "arguments.insight"),
        (r#"{"insight":"low \udc00 alone"}"#, "arguments.insight"),
        (r#"{"query":"x","l":[0,1e999]}"#, "arguments.l[1]"),
    ] {
        // The id before or after the bad value.
        for line in [
            call(&format!(r#"{{"name":"recall","arguments":{args}}}"#)),
            format!(r#"{{"params":{{"arguments":{args}}},"method":"tools/call","jsonrpc":"2.0","id":"z"}}"#),
        ] {
            let (code, id, m) = answer(line.as_bytes());
            assert_eq!(code, -32602, "{line}: {m}");
            assert!(id == 9 || id == "z", "{line}: {id}");
            assert!(m.contains(field), "{line}: {m} lacks {field}");
        }
    }
    let (code, id, m) = answer(br#"{"jsonrpc":"2.0","id":4,"method":"ping","params":1e309}"#);
    assert_eq!((code, id), (-32602, Value::from(4)), "{m}");
    // Elsewhere than params: an invalid request, with the id.
    let (code, id, _) = answer(br#"{"jsonrpc":"2.0","id":4,"method":"ping","extra":1e309}"#);
    assert_eq!((code, id), (-32600, Value::from(4)));
    assert_eq!(answer(br#"{"jsonrpc":"2.0","method":"bad \ud800"}"#).0, -32600);
    // A notification is never answered.
    assert!(matches!(
        judge(br#"{"jsonrpc":"2.0","method":"notifications/x","params":{"v":1e309}}"#),
        Verdict::Ignore(_)
    ));
}

#[test]
fn tools_call_params_must_fit_the_schema() {
    for (params, needle) in [
        (r#"{"name":"learn","arguments":"x"}"#, "arguments must be an object"),
        (r#"{"name":"learn","arguments":[1]}"#, "arguments"),
        (r#"{"name":null}"#, "name must be a string"),
        (r#"{"name":42,"arguments":{}}"#, "name"),
        (r#"{"arguments":{}}"#, "name"),
        (r#""learn""#, "params must be an object"),
        ("null", "params"),
    ] {
        let (code, id, m) = answer(call(params).as_bytes());
        assert_eq!((code, id), (-32602, Value::from(9)), "{params}: {m}");
        assert!(m.contains(needle), "{params}: {m} lacks {needle}");
    }
    let (code, _, m) = answer(br#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":5}}"#);
    assert!(code == -32602 && m.contains("uri"), "{m}");
    // Well-formed ones go through (an unknown tool is the handler's to refuse).
    for params in [
        r#"{"name":"learn","arguments":{"insight":"x"}}"#,
        r#"{"name":"nope"}"#,
        r#"{"name":"doctor","arguments":null}"#,
    ] {
        assert_eq!(judge(call(params).as_bytes()), Verdict::Forward, "{params}");
    }
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"no/such","params":"x"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
    ] {
        assert_eq!(judge(line.as_bytes()), Verdict::Forward, "{line}");
    }
}
