//! Context JSON builder: the stored context of a memory is the user's
//! context merged into a provenance marker `{"source": ...}`.

use serde_json::{Map, Value};

/// Source marker of memories written by the `learn` tool.
pub const LEARN_SOURCE: &str = "learn_tool";
/// Source marker of perceptions.
pub const PERCEPTION_SOURCE: &str = "save_perception";

/// [`build_context_json_with_source`] with source `"learn_tool"`.
// The original's function, checked against its cases (src/classify/tests.rs); the
// engine calls `build_context_json_with_source`.
#[cfg(test)]
pub fn build_context_json(context: &str) -> Map<String, Value> {
    build_context_json_with_source(context, LEARN_SOURCE)
}

/// Builds `{"source": source}` and
/// * merges `context` into it when it parses as a JSON object (user keys,
///   including a user-supplied `source`, win);
/// * stores any other non-blank `context` (unparsable text, arrays, numbers
///   …) unchanged under `"user_context"`;
/// * adds nothing for a blank `context`.
pub fn build_context_json_with_source(context: &str, source: &str) -> Map<String, Value> {
    let mut result = Map::new();
    result.insert("source".to_string(), Value::from(source));
    if context.trim().is_empty() {
        return result;
    }
    match serde_json::from_str::<Value>(context) {
        Ok(Value::Object(user)) => result.extend(user),
        _ => {
            result.insert("user_context".to_string(), Value::from(context));
        }
    }
    result
}

/// The user's part of a stored context (the inverse of
/// [`build_context_json_with_source`] up to formatting): the provenance marker
/// removed, free text given back as it was, "" when nothing else is left. Used to
/// classify a memory again as it was classified when it was stored.
pub fn user_context(stored: &str) -> String {
    let Ok(Value::Object(mut map)) = serde_json::from_str::<Value>(stored) else { return stored.to_string() };
    if map.get("source").and_then(Value::as_str).is_some_and(|s| s == LEARN_SOURCE || s == PERCEPTION_SOURCE) {
        map.remove("source");
    }
    match (map.len(), map.get("user_context")) {
        (0, _) => String::new(),
        (1, Some(Value::String(text))) => text.clone(),
        _ => Value::Object(map).to_string(),
    }
}
