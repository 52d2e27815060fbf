//! Context JSON builder: the stored context of a memory is the user's
//! context merged into a provenance marker `{"source": ...}`.

use serde_json::{Map, Value};

/// Source marker of memories written by the `learn` tool.
const LEARN_SOURCE: &str = "learn_tool";

/// [`build_context_json_with_source`] with source `"learn_tool"`.
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
