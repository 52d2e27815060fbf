//! The judge of every line the client sends, before the SDK sees it: the SDK
//! drops what it cannot parse without a word (numbers out of range, lone
//! surrogates, nesting past serde_json's depth limit of 128, anything not
//! JSON) and answers a `tools/call` whose `name` or `arguments` has the wrong
//! type with "Method not found". Here each line is parsed once into a
//! [`Value`] and either forwarded or answered with a JSON-RPC error:
//!
//! - `-32700 Parse error`, id null: not UTF-8, not JSON, empty, nested deeper
//!   than 128 levels, or longer than [`MAX_LINE`] (see [`oversized`]);
//! - `-32600 Invalid Request`: JSON that is no JSON-RPC 2.0 message (a batch,
//!   a scalar, no `jsonrpc: "2.0"`, a `method` that is no string); with id
//!   null when the id itself is unreadable (`1e400`, an object, a fraction),
//!   since a server that cannot read the id answers with null;
//! - `-32602 Invalid params` with the request's id, naming the field: a value
//!   no JSON parser can represent (`1e309`, `"\ud800"`) anywhere in `params`,
//!   or params of the methods served here that do not fit their MCP schema
//!   (`tools/call` needs a string `name` and an object `arguments`).
//!
//! A notification (no id) is never answered, as JSON-RPC requires, even when
//! its params are bad (that is logged on stderr); a line that is not even a
//! well-formed message is answered with id null.

use rmcp::model::{
    CallToolRequestParams, InitializeRequestParams, PaginatedRequestParams, ReadResourceRequestParams, RequestId,
};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// The longest line read, its newline included: 16 MiB, the SDK's own limit.
/// It fits the largest request the library takes (4 MiB of perception data,
/// even escaped `\u00e9`-style by a client, plus the other fields); a longer
/// line is skipped unread and answered with a parse error.
pub const MAX_LINE: usize = 16 << 20;

const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;
const INVALID_PARAMS: i32 = -32602;

/// What to do with one line.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// A well-formed message: the SDK serves it.
    Forward,
    /// This line (newline included) is the whole answer.
    Answer(Vec<u8>),
    /// A notification with bad params: no answer, only this note on stderr.
    Ignore(String),
}

/// The answer to a line longer than [`MAX_LINE`].
pub fn oversized() -> Vec<u8> {
    let why = format!("Parse error: line longer than {MAX_LINE} bytes (16 MiB, newline included); skipped");
    error_line(&Value::Null, PARSE_ERROR, &why)
}

/// Judges one line, its newline (and a `\r` before it) removed.
pub fn judge(line: &[u8]) -> Verdict {
    // RFC 8259 lets a parser ignore a leading byte order mark; the SDK does.
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let Ok(text) = std::str::from_utf8(line) else {
        return parse_error("the line is not UTF-8");
    };
    if text.trim().is_empty() {
        return parse_error("empty line");
    }
    // The grammar first, without building anything (serde_json skips nesting
    // of any depth without recursion), so the errors below are about values.
    if let Err(e) = serde_json::from_str::<IgnoredAny>(text) {
        return parse_error(&e.to_string());
    }
    let mut de = serde_json::Deserializer::from_str(text);
    match serde_path_to_error::deserialize::<_, Value>(&mut de) {
        Ok(message) => message_verdict(&message),
        Err(e) => unrepresentable(text, &e.path().to_string(), e.inner()),
    }
}

/// Valid JSON with a value serde_json refuses: too deep, a number out of
/// range, a string that is no Unicode. `path` is where, as `params.arguments.n`.
fn unrepresentable(text: &str, path: &str, e: &serde_json::Error) -> Verdict {
    if e.to_string().starts_with("recursion limit exceeded") {
        return parse_error("nested deeper than 128 levels");
    }
    // The id alone (present, even null, or absent), everything else skipped unread.
    #[derive(Deserialize)]
    struct Head {
        #[serde(default, deserialize_with = "present")]
        id: Option<Value>,
    }
    fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
        Value::deserialize(d).map(Some)
    }
    // Where in params, as `arguments.n` (`params` for params itself).
    let field = match path {
        "params" => Some("params"),
        _ => path.strip_prefix("params.").or_else(|| path.strip_prefix("params").filter(|p| p.starts_with('['))),
    };
    let id = match serde_json::from_str::<Head>(text) {
        Ok(Head { id: Some(id) }) => match read_id(&id) {
            Some(id) => id,
            None => return invalid_request(&Value::Null, "id must be a string or an integer"),
        },
        Ok(Head { id: None }) if field.is_some() => {
            return Verdict::Ignore(format!("a notification's params are unreadable at {path}: {e}"));
        }
        Ok(Head { id: None }) => Value::Null,
        Err(_) => return invalid_request(&Value::Null, &format!("{path}: {e}")),
    };
    match field {
        Some(field) => answer(&id, INVALID_PARAMS, &format!("Invalid params: {field}: {e}")),
        None => invalid_request(&id, &format!("{path}: {e}")),
    }
}

/// A parsed line: a request, notification or response, or an error answer.
fn message_verdict(message: &Value) -> Verdict {
    let m = match message {
        Value::Object(m) => m,
        Value::Array(a) if a.is_empty() => return invalid_request(&Value::Null, "an empty batch"),
        Value::Array(_) => {
            return invalid_request(
                &Value::Null,
                "batches are not supported (MCP has none since 2025-06-18): one message per line",
            )
        }
        _ => return invalid_request(&Value::Null, "a message is a JSON object"),
    };
    let id = match m.get("id") {
        None => None,
        Some(id) => match read_id(id) {
            Some(id) => Some(id),
            None => return invalid_request(&Value::Null, "id must be a string or an integer"),
        },
    };
    let reply_to = id.clone().unwrap_or(Value::Null);
    if m.get("jsonrpc") != Some(&json!("2.0")) {
        return invalid_request(&reply_to, "jsonrpc must be \"2.0\"");
    }
    let method = match m.get("method") {
        Some(Value::String(method)) => method,
        Some(_) => return invalid_request(&reply_to, "method must be a string"),
        // A response to a request of ours.
        None if id.is_some() && (m.contains_key("result") || m.contains_key("error")) => return Verdict::Forward,
        None => return invalid_request(&reply_to, "no method (nor result or error)"),
    };
    let Some(id) = id else {
        return Verdict::Forward;
    };
    match check_params(method, m) {
        Ok(()) => Verdict::Forward,
        Err(why) => answer(&id, INVALID_PARAMS, &format!("Invalid params: {why}")),
    }
}

/// The id as the SDK reads it (a string, or an integer such as `7` or `7.0`).
fn read_id(id: &Value) -> Option<Value> {
    RequestId::deserialize(id).ok().map(RequestId::into_json_value)
}

type Check = fn(&Value) -> Result<(), String>;

/// The params of the methods served here, checked against the SDK's types (a
/// mismatch would otherwise reach the handler as an unknown method). `true`:
/// params are required.
const SERVED: &[(&str, bool, Check)] = &[
    ("initialize", true, fits::<InitializeRequestParams>),
    ("tools/call", true, fits::<CallToolRequestParams>),
    ("resources/read", true, fits::<ReadResourceRequestParams>),
    ("tools/list", false, fits::<PaginatedRequestParams>),
    ("resources/list", false, fits::<PaginatedRequestParams>),
    ("resources/templates/list", false, fits::<PaginatedRequestParams>),
];

fn check_params(method: &str, m: &Map<String, Value>) -> Result<(), String> {
    let Some((_, required, fits)) = SERVED.iter().find(|(name, ..)| *name == method) else {
        return Ok(());
    };
    match m.get("params") {
        None | Some(Value::Null) if *required => Err(format!("{method} needs params (an object)")),
        None | Some(Value::Null) => Ok(()),
        Some(Value::Object(_)) => fits(&m["params"]),
        Some(_) => Err("params must be an object".into()),
    }
}

fn fits<T: DeserializeOwned>(params: &Value) -> Result<(), String> {
    match serde_path_to_error::deserialize::<_, T>(params) {
        Ok(_) => Ok(()),
        Err(e) => {
            let path = e.path().to_string();
            let what = describe(&path, e.inner());
            Err(match path.as_str() {
                "." => what,
                _ => format!("{path}: {what}"),
            })
        }
    }
}

/// A field's error, with what it must be for the two fields of `tools/call`.
fn describe(path: &str, e: &serde_json::Error) -> String {
    match path {
        "name" => format!("{e} (name must be a string naming a tool)"),
        "arguments" => format!("{e} (arguments must be an object)"),
        _ => e.to_string(),
    }
}

fn parse_error(why: &str) -> Verdict {
    answer(&Value::Null, PARSE_ERROR, &format!("Parse error: {why}"))
}

fn invalid_request(id: &Value, why: &str) -> Verdict {
    answer(id, INVALID_REQUEST, &format!("Invalid Request: {why}"))
}

fn answer(id: &Value, code: i32, message: &str) -> Verdict {
    Verdict::Answer(error_line(id, code, message))
}

fn error_line(id: &Value, code: i32, message: &str) -> Vec<u8> {
    let v = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut line = v.to_string().into_bytes();
    line.push(b'\n');
    line
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
