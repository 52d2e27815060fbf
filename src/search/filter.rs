//! Structured filters of recall: `context_filter` (dot paths with operators) and
//! `spatial_sort` (Euclidean distance to a target on a coordinate array).
//!
//! Both are parsed and validated once per recall; unknown operators, more than 10
//! conditions or a malformed target are errors, never silently ignored.

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::limits::{self, MAX_FILTER_BYTES, MAX_FILTER_CONDITIONS};

/// A dot path split into keys: `"params.force.value"` → `["params", "force", "value"]`.
pub type DotPath = Vec<String>;

fn parse_path(field: &str, path: &str) -> Result<DotPath> {
    if path.is_empty() || path.split('.').any(str::is_empty) {
        return Err(Error::invalid(format!("{field}: {path:?} is not a valid dot path")));
    }
    Ok(path.split('.').map(str::to_string).collect())
}

/// Follows `path` through nested objects; `None` when a key is missing or a
/// non-object is met on the way.
pub fn resolve<'a>(root: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(root, |cur, key| cur.as_object()?.get(key))
}

/// A context JSON split at its top level only: the sub-documents stay raw text
/// and a lookup parses just the one it needs (recall evaluates many contexts and
/// reads one or two paths of each).
pub struct LazyContext<'a> {
    top: BTreeMap<String, &'a RawValue>,
}

impl<'a> LazyContext<'a> {
    /// An unparsable or non-object context has no paths.
    pub fn new(json: &'a str) -> LazyContext<'a> {
        LazyContext { top: serde_json::from_str(json).unwrap_or_default() }
    }

    /// The value at `path`, parsed.
    pub fn lookup(&self, path: &[String]) -> Option<Value> {
        let (first, rest) = path.split_first()?;
        let sub: Value = serde_json::from_str(self.top.get(first)?.get()).ok()?;
        resolve(&sub, rest).cloned()
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Lte,
    Gt,
    Gte,
}

impl Op {
    fn parse(s: &str) -> Option<Op> {
        Some(match s {
            "$eq" => Op::Eq,
            "$ne" => Op::Ne,
            "$lt" => Op::Lt,
            "$lte" => Op::Lte,
            "$gt" => Op::Gt,
            "$gte" => Op::Gte,
            _ => return None,
        })
    }
}

/// A parsed `context_filter`: all conditions must hold (AND).
#[derive(Debug, Clone, Default)]
pub struct ContextFilter {
    conds: Vec<(DotPath, Conditions)>,
}

impl ContextFilter {
    pub fn parse(json: &str) -> Result<ContextFilter> {
        let map = limits::json_object("context_filter", json, MAX_FILTER_BYTES)?;
        if map.len() > MAX_FILTER_CONDITIONS {
            return Err(Error::invalid(format!(
                "context_filter has {} conditions; the limit is {MAX_FILTER_CONDITIONS}",
                map.len()
            )));
        }
        let mut conds = Vec::with_capacity(map.len());
        for (path, spec) in map {
            let ops = match spec {
                Value::Object(o) if o.keys().any(|k| k.starts_with('$')) => parse_ops(&path, o)?,
                v => vec![(Op::Eq, v)],
            };
            conds.push((parse_path("context_filter", &path)?, ops));
        }
        Ok(ContextFilter { conds })
    }

    pub fn is_empty(&self) -> bool {
        self.conds.is_empty()
    }

    /// True when every condition holds for `ctx`. A missing path never matches.
    pub fn matches(&self, ctx: &Value) -> bool {
        self.matches_with(|p| resolve(ctx, p).cloned())
    }

    /// As [`matches`](Self::matches), reading paths through `get`.
    pub fn matches_with(&self, get: impl Fn(&[String]) -> Option<Value>) -> bool {
        self.conds.iter().all(|(path, ops)| match get(path) {
            None => false,
            Some(actual) => Self::holds(ops, View::of(&actual)),
        })
    }

    /// The conditions, one per dot path, in the filter's order.
    pub fn conditions(&self) -> impl Iterator<Item = (&DotPath, &Conditions)> {
        self.conds.iter().map(|(p, ops)| (p, ops))
    }

    /// Whether a value present at a condition's path satisfies it.
    pub fn holds(ops: &Conditions, actual: View) -> bool {
        ops.iter().all(|(op, expected)| compare(*op, actual, expected))
    }
}

/// The operators and operands of one path's condition (all must hold).
pub type Conditions = Vec<(Op, Value)>;

/// A value as the filter compares it: what [`compare`] needs of a JSON value, so
/// values held elsewhere (search/columns) compare exactly as parsed ones do.
#[derive(Debug, Clone, Copy)]
pub enum View<'a> {
    Num(f64),
    Str(&'a str),
    Bool(bool),
    Null,
    /// An object or an array (or a number without an f64 value).
    Other(&'a Value),
}

impl<'a> View<'a> {
    pub fn of(v: &'a Value) -> View<'a> {
        match v {
            Value::Number(n) => n.as_f64().map_or(View::Other(v), View::Num),
            Value::String(s) => View::Str(s),
            Value::Bool(b) => View::Bool(*b),
            Value::Null => View::Null,
            _ => View::Other(v),
        }
    }
}

fn parse_ops(path: &str, o: Map<String, Value>) -> Result<Conditions> {
    o.into_iter()
        .map(|(k, v)| match Op::parse(&k) {
            Some(op) => Ok((op, v)),
            None => Err(Error::invalid(format!(
                "context_filter[{path:?}]: unknown operator {k:?} (use $lt $lte $gt $gte $ne $eq)"
            ))),
        })
        .collect()
}

/// JSON equality where numbers compare by value (1 == 1.0).
fn json_eq(a: View, b: &Value) -> bool {
    match (a, b) {
        (View::Num(x), Value::Number(y)) => Some(x) == y.as_f64(),
        (View::Str(x), Value::String(y)) => x == y,
        (View::Bool(x), Value::Bool(y)) => x == *y,
        (View::Null, Value::Null) => true,
        (View::Other(x), y) => x == y,
        _ => false,
    }
}

fn compare(op: Op, actual: View, expected: &Value) -> bool {
    use std::cmp::Ordering;
    let ord = match (actual, expected) {
        (View::Num(a), Value::Number(b)) => b.as_f64().and_then(|b| a.partial_cmp(&b)),
        (View::Str(a), Value::String(b)) => Some(a.cmp(b.as_str())),
        _ => None,
    };
    match op {
        Op::Eq => json_eq(actual, expected),
        Op::Ne => !json_eq(actual, expected),
        Op::Lt => ord == Some(Ordering::Less),
        Op::Lte => matches!(ord, Some(Ordering::Less | Ordering::Equal)),
        Op::Gt => ord == Some(Ordering::Greater),
        Op::Gte => matches!(ord, Some(Ordering::Greater | Ordering::Equal)),
    }
}

/// A parsed `spatial_sort`.
#[derive(Debug, Clone)]
pub struct SpatialSort {
    field: DotPath,
    target: Vec<f64>,
    pub max_distance: Option<f64>,
}

impl SpatialSort {
    pub fn parse(json: &str) -> Result<SpatialSort> {
        let map = limits::json_object("spatial_sort", json, MAX_FILTER_BYTES)?;
        let (Some(field), Some(target)) = (map.get("field"), map.get("target")) else {
            return Err(Error::invalid("spatial_sort must contain \"field\" and \"target\""));
        };
        let Value::String(field) = field else {
            return Err(Error::invalid("spatial_sort.field must be a dot-path string"));
        };
        let Value::Array(items) = target else {
            return Err(Error::invalid("spatial_sort.target must be an array of numbers"));
        };
        if items.is_empty() || items.len() > 64 {
            return Err(Error::invalid("spatial_sort.target must have 1 to 64 coordinates"));
        }
        let target = items
            .iter()
            .map(|v| v.as_f64().filter(|x| x.is_finite()))
            .collect::<Option<Vec<f64>>>()
            .ok_or_else(|| Error::invalid("spatial_sort.target must contain only finite numbers"))?;
        let max_distance = match map.get("max_distance") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_f64() {
                Some(d) if d.is_finite() && d >= 0.0 => Some(d),
                _ => return Err(Error::invalid("spatial_sort.max_distance must be a number >= 0")),
            },
        };
        if let Some(k) = map.keys().find(|k| !matches!(k.as_str(), "field" | "target" | "max_distance")) {
            return Err(Error::invalid(format!("spatial_sort: unknown key {k:?}")));
        }
        Ok(SpatialSort { field: parse_path("spatial_sort.field", field)?, target, max_distance })
    }

    /// Distance from the coordinates at `field` to the target; infinity when the
    /// field is missing, not an array of numbers, or of another dimension.
    pub fn distance(&self, ctx: &Value) -> f64 {
        self.distance_of(resolve(ctx, &self.field))
    }

    /// As [`distance`](Self::distance), for a lazily parsed context.
    pub fn distance_lazy(&self, ctx: &LazyContext) -> f64 {
        self.distance_of(ctx.lookup(&self.field).as_ref())
    }

    fn distance_of(&self, v: Option<&Value>) -> f64 {
        let Some(Value::Array(a)) = v else { return f64::INFINITY };
        if a.len() != self.target.len() {
            return f64::INFINITY;
        }
        let mut sum = 0.0;
        for (v, t) in a.iter().zip(&self.target) {
            match v.as_f64() {
                Some(x) => sum += (x - t) * (x - t),
                None => return f64::INFINITY,
            }
        }
        sum.sqrt()
    }

    /// The dot path of the coordinates.
    pub fn field(&self) -> &DotPath {
        &self.field
    }

    pub fn target(&self) -> &[f64] {
        &self.target
    }

    /// Whether a memory at `distance` passes the optional cutoff.
    pub fn within(&self, distance: f64) -> bool {
        self.max_distance.is_none_or(|m| distance <= m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lazy_context_agrees_with_the_parsed_tree() {
        let text = r#"{"task": {"success": true, "steps": 38}, "spatial": {"p": [3, 4]}, "robot": "ur5e"}"#;
        let tree: Value = serde_json::from_str(text).unwrap();
        let lazy = LazyContext::new(text);
        for spec in [
            r#"{"task.success": true}"#,
            r#"{"task.steps": {"$gte": 39}}"#,
            r#"{"task.steps": {"$lt": 39, "$gt": 1}, "robot": "ur5e"}"#,
            r#"{"robot.type": "ur5e"}"#,
            r#"{"missing": {"$ne": 1}}"#,
        ] {
            let f = ContextFilter::parse(spec).unwrap();
            assert_eq!(f.matches(&tree), f.matches_with(|p| lazy.lookup(p)), "{spec}");
        }
        let s = SpatialSort::parse(r#"{"field": "spatial.p", "target": [0, 0]}"#).unwrap();
        assert_eq!(s.distance(&tree), 5.0);
        assert_eq!(s.distance_lazy(&lazy), 5.0);
        assert!(LazyContext::new("not json").lookup(&["a".into()]).is_none());
    }
}
