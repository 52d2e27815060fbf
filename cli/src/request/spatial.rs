//! The warning of a spatial sort that measured nothing: a misspelt field, or a
//! target of another dimension than the stored positions, leaves every distance
//! empty and the results in relevance order — the caller should hear why, and
//! which fields of the memories returned do hold coordinates.

use robotmem::Hit;
use serde_json::Value;

/// Most coordinate fields named in the warning.
const MAX_NAMED: usize = 5;

/// The warning for `spatial_sort` (the request's JSON) over `hits`, when there
/// are hits and none got a distance.
pub(super) fn warning(spatial_sort: &str, hits: &[Hit]) -> Option<String> {
    if hits.is_empty() || hits.iter().any(|h| h.distance.is_some_and(f64::is_finite)) {
        return None;
    }
    let sort: Value = serde_json::from_str(spatial_sort).ok()?;
    let field = sort.get("field")?.as_str()?;
    let dim = sort.get("target")?.as_array()?.len();
    let contexts: Vec<Value> = hits.iter().filter_map(|h| serde_json::from_str(&h.memory.context).ok()).collect();
    let at_field: Vec<usize> = contexts.iter().filter_map(|c| numbers_at(c, field)).collect();
    let mut fields: Vec<(String, usize)> = Vec::new();
    for c in &contexts {
        coordinates(c, String::new(), &mut fields);
    }
    fields.sort();
    fields.dedup();
    let named: Vec<String> = fields.iter().take(MAX_NAMED).map(|(path, n)| format!("`{path}` ({n} numbers)")).collect();
    let why = if at_field.is_empty() {
        format!("none of the {} memories returned has coordinates at `{field}`", hits.len())
    } else {
        let mut dims: Vec<usize> = at_field.clone();
        dims.sort_unstable();
        dims.dedup();
        let dims: Vec<String> = dims.iter().map(usize::to_string).collect();
        format!("`{field}` holds {} numbers in the memories returned, the target has {dim}", dims.join(" or "))
    };
    let known = if named.is_empty() {
        "no memory returned has coordinates in its context".to_string()
    } else {
        format!("coordinates in their contexts: {}", named.join(", "))
    };
    Some(format!("spatial_sort measured no distance: {why}; results are in relevance order ({known})"))
}

/// How many numbers the array at dot path `path` of `ctx` holds, if it is one.
fn numbers_at(ctx: &Value, path: &str) -> Option<usize> {
    let v = path.split('.').try_fold(ctx, |v, key| v.get(key))?;
    let a = v.as_array()?;
    a.iter().all(Value::is_number).then_some(a.len())
}

/// Every dot path in `v` holding an array of 2–4 numbers, with its length.
fn coordinates(v: &Value, prefix: String, out: &mut Vec<(String, usize)>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                coordinates(child, path, out);
            }
        }
        Value::Array(a) if (2..=4).contains(&a.len()) && a.iter().all(Value::is_number) && !prefix.is_empty() => {
            out.push((prefix, a.len()));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_coordinate_paths_and_dimensions() {
        let ctx: Value =
            serde_json::from_str(r#"{"spatial": {"pos": [1, 2, 3], "name": "cup"}, "grip": [0.1, 0.2], "t": [1]}"#)
                .unwrap();
        assert_eq!(numbers_at(&ctx, "spatial.pos"), Some(3));
        assert_eq!(numbers_at(&ctx, "spatial.name"), None);
        assert_eq!(numbers_at(&ctx, "spatial.nope"), None);
        let mut out = Vec::new();
        coordinates(&ctx, String::new(), &mut out);
        out.sort();
        assert_eq!(out, vec![("grip".to_string(), 2), ("spatial.pos".to_string(), 3)]);
    }
}
