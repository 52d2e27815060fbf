//! Input limits and validation (the "L1" layer): every public operation checks its
//! parameters here before touching the database, with a message naming the field.

use serde_json::Value;

use crate::error::{Error, Result};

/// Characters of an insight / update content, after trimming.
pub const MAX_CONTENT_CHARS: usize = 300;
/// Minimum characters of a perception description, after trimming.
pub const MIN_DESCRIPTION_CHARS: usize = 5;
/// Bytes of a context JSON (learn, update, perception, session).
pub const MAX_CONTEXT_BYTES: usize = 64 * 1024;
/// Bytes of perception data (JSON or binary).
pub const MAX_PERCEPTION_DATA: usize = 4 * 1024 * 1024;
/// Bytes of perception metadata JSON.
pub const MAX_METADATA_BYTES: usize = 64 * 1024;
/// Characters of a recall query.
pub const MAX_QUERY_CHARS: usize = 1000;
/// Characters of a collection name or session id.
pub const MAX_NAME_CHARS: usize = 128;
/// Characters of a forget reason.
pub const MAX_REASON_CHARS: usize = 500;
/// Bytes of a context_filter / spatial_sort JSON.
pub const MAX_FILTER_BYTES: usize = 16 * 1024;
/// Conditions in one context_filter.
pub const MAX_FILTER_CONDITIONS: usize = 10;
/// User tags on one memory, and characters of one tag.
pub const MAX_USER_TAGS: usize = 20;
pub const MAX_TAG_CHARS: usize = 64;

/// Normalises user tags ("Robot Arm" → "robot_arm"), dropping repeats.
pub fn user_tags(tags: &[&str]) -> Result<Vec<String>> {
    tag_list("tags", tags, MAX_USER_TAGS)
}

/// Normalises tags as [`user_tags`] does, at most `max` of them; messages name `field`.
pub fn tag_list(field: &str, tags: &[&str], max: usize) -> Result<Vec<String>> {
    if tags.len() > max {
        return Err(Error::invalid(format!("{} {field} given; the limit is {max}", tags.len())));
    }
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for t in tags {
        let n = crate::classify::normalize_tag(t);
        if n.is_empty() || n.chars().count() > MAX_TAG_CHARS || n.chars().any(char::is_control) {
            let place = if field == "tags" { String::new() } else { format!(" in {field}") };
            return Err(Error::invalid(format!(
                "tag {t:?}{place} must have 1 to {MAX_TAG_CHARS} characters and no control characters"
            )));
        }
        if !out.contains(&n) {
            out.push(n);
        }
    }
    Ok(out)
}

/// Perception data: at most [`MAX_PERCEPTION_DATA`] bytes.
pub fn perception_data(field: &str, data: &[u8]) -> Result<()> {
    if data.len() > MAX_PERCEPTION_DATA {
        return Err(Error::invalid(format!("{field} is {} bytes; the limit is {MAX_PERCEPTION_DATA}", data.len())));
    }
    Ok(())
}

/// Perception metadata: blank or absent → none; else trimmed JSON text of at most
/// [`MAX_METADATA_BYTES`] bytes.
pub fn perception_metadata<'a>(field: &str, value: Option<&'a str>) -> Result<Option<&'a str>> {
    let Some(m) = value.map(str::trim).filter(|m| !m.is_empty()) else { return Ok(None) };
    if m.len() > MAX_METADATA_BYTES {
        return Err(Error::invalid(format!("{field} is larger than {MAX_METADATA_BYTES} bytes")));
    }
    serde_json::from_str::<Value>(m).map_err(|e| Error::invalid(format!("{field} is not valid JSON: {e}")))?;
    Ok(Some(m))
}

/// Longest time to live: 100 years.
pub const MAX_TTL_SECONDS: f64 = 100.0 * 365.25 * 86_400.0;

/// The expiry of a new memory from a time to live in seconds (from `now`) or a
/// time (RFC 3339), at most one of them; neither: `default_ttl` (the
/// collection's), if any.
pub fn expiry(
    ttl_seconds: Option<f64>,
    expires_at: Option<&str>,
    default_ttl: Option<f64>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Option<String>> {
    let ttl = |field: &str, s: f64| -> Result<String> {
        if !(s.is_finite() && s > 0.0 && s <= MAX_TTL_SECONDS) {
            return Err(Error::invalid(format!(
                "{field} must be a number of seconds > 0 and at most {MAX_TTL_SECONDS} (100 years) (got {})",
                show_f64(s)
            )));
        }
        let at = now + chrono::Duration::milliseconds((s * 1000.0).round() as i64);
        Ok(crate::clock::stamp(at))
    };
    match (ttl_seconds, expires_at.filter(|t| !t.trim().is_empty())) {
        (Some(_), Some(_)) => Err(Error::invalid("give ttl_seconds or expires_at, not both")),
        (Some(s), None) => ttl("ttl_seconds", s).map(Some),
        (None, Some(t)) => timestamp("expires_at", t).map(Some),
        (None, None) => default_ttl.map(|s| ttl("the collection's default ttl", s)).transpose(),
    }
}

/// A point in time given from outside (import, expiry, as-of): RFC 3339, returned in the form
/// every stored time has, UTC with milliseconds (`2026-03-09T10:30:00.123Z`), so
/// stored times keep comparing as text.
pub fn timestamp(field: &str, value: &str) -> Result<String> {
    chrono::DateTime::parse_from_rfc3339(value.trim())
        .map(|t| t.with_timezone(&chrono::Utc).to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .map_err(|e| Error::invalid(format!("{field} {value:?} is not an RFC 3339 time ({e})")))
}

/// Results of one recall.
pub const MAX_RESULTS: i64 = 100;
/// Results of a recall that names no `n` (every surface: C, Rust, CLI, web, MCP).
pub const DEFAULT_RESULTS: i64 = 5;
/// Lowest confidence a recall returns when the caller names none.
pub const DEFAULT_MIN_CONFIDENCE: f64 = 0.3;
/// Memories or sessions per page of a listing that names no page size.
pub const DEFAULT_PER_PAGE: u32 = 25;
/// The largest page of a listing (memories or sessions).
pub const MAX_PER_PAGE: u32 = 500;
/// The operators of a context_filter condition (`{"path": {"$lt": 15}}`).
pub const FILTER_OPERATORS: [&str; 6] = ["$lt", "$lte", "$gt", "$gte", "$ne", "$eq"];
/// Failures shown by "recent failures" when the caller names no count.
pub const DEFAULT_RECENT_FAILURES: u32 = 10;
/// Memories examined for recent failures: the newest this many.
pub const RECENT_FAILURES_WINDOW: i64 = 10_000;

/// Trims and checks a required text field: not blank, at most `max` characters.
pub fn required_text<'a>(field: &str, value: &'a str, min: usize, max: usize) -> Result<&'a str> {
    let t = value.trim();
    if t.is_empty() {
        return Err(Error::invalid(format!("{field} must not be empty or blank")));
    }
    reject_nul(field, t)?;
    let n = t.chars().count();
    if n < min {
        return Err(Error::invalid(format!("{field} has {n} characters after trimming; at least {min} are required")));
    }
    if n > max {
        return Err(Error::invalid(format!("{field} has {n} characters after trimming; the limit is {max}")));
    }
    Ok(t)
}

/// Text stored in the database never holds NUL (C strings could not carry it back).
fn reject_nul(field: &str, v: &str) -> Result<()> {
    if v.contains('\0') {
        return Err(Error::invalid(format!("{field} contains a NUL character")));
    }
    Ok(())
}

/// Collection name: blank or absent → `default`; trimmed; at most 128 characters.
pub fn collection<'a>(value: Option<&'a str>, default: &'a str) -> Result<&'a str> {
    match value.map(str::trim) {
        None | Some("") => Ok(default),
        Some(c) => name("collection", c),
    }
}

/// Optional session id: blank or absent → none.
pub fn optional_session(value: Option<&str>) -> Result<Option<&str>> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(s) => name("session_id", s).map(Some),
    }
}

fn name<'a>(field: &str, v: &'a str) -> Result<&'a str> {
    if v.chars().count() > MAX_NAME_CHARS {
        return Err(Error::invalid(format!("{field} is longer than {MAX_NAME_CHARS} characters")));
    }
    if v.chars().any(char::is_control) {
        return Err(Error::invalid(format!("{field} contains control characters")));
    }
    Ok(v)
}

/// A memory id must be positive.
pub fn memory_id(id: i64) -> Result<i64> {
    if id <= 0 {
        return Err(Error::invalid(format!("memory_id must be > 0 (got {id})")));
    }
    Ok(id)
}

/// A number that must be finite and inside `[lo, hi]`.
pub fn unit_range(field: &str, v: f64, lo: f64, hi: f64) -> Result<f64> {
    if !v.is_finite() || v < lo || v > hi {
        return Err(Error::invalid(format!(
            "{field} must be a number in [{}, {}] (got {})",
            show_f64(lo),
            show_f64(hi),
            show_f64(v)
        )));
    }
    Ok(v)
}

/// A number as a message echoes it: short (`%g`-like) and exact. Plain when
/// that is short ("0.3", "-1.5"), else in exponent form with the fewest digits
/// that read back as the same number ("-2.2250738585072014e-308", never the
/// 300-odd digits of its plain decimal form).
pub fn show_f64(v: f64) -> String {
    let plain = v.to_string();
    if plain.len() <= 16 || !v.is_finite() {
        plain
    } else {
        format!("{v:e}")
    }
}

/// Context text: at most 64 KiB; text that starts like JSON must be valid JSON
/// (free text is accepted and kept as `user_context`).
pub fn context(field: &str, value: Option<&str>) -> Result<String> {
    let Some(v) = value else { return Ok(String::new()) };
    if v.len() > MAX_CONTEXT_BYTES {
        return Err(Error::invalid(format!("{field} is {} bytes; the limit is {MAX_CONTEXT_BYTES}", v.len())));
    }
    let t = v.trim();
    reject_nul(field, t)?;
    if t.starts_with('{') || t.starts_with('[') {
        serde_json::from_str::<Value>(t)
            .map_err(|e| Error::invalid(format!("{field} looks like JSON but does not parse: {e}")))?;
    }
    Ok(t.to_string())
}

/// Parses a JSON object parameter (context_filter, spatial_sort, metadata).
pub fn json_object(field: &str, v: &str, max_bytes: usize) -> Result<serde_json::Map<String, Value>> {
    if v.len() > max_bytes {
        return Err(Error::invalid(format!("{field} is {} bytes; the limit is {max_bytes}", v.len())));
    }
    match serde_json::from_str::<Value>(v) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(Error::invalid(format!("{field} must be a JSON object"))),
        Err(e) => Err(Error::invalid(format!("{field} is not valid JSON: {e}"))),
    }
}

/// Clamps a requested result count into 1–100.
pub fn clamp_n(n: i64) -> usize {
    n.clamp(1, MAX_RESULTS) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_limits() {
        assert!(required_text("insight", "   ", 1, 300).is_err());
        assert_eq!(required_text("insight", "  ok ", 1, 300).unwrap(), "ok");
        assert!(required_text("insight", &"x".repeat(301), 1, 300).is_err());
        assert!(required_text("insight", &"抓".repeat(300), 1, 300).is_ok());
        assert!(required_text("description", "hi", 5, 300).is_err());
    }

    #[test]
    fn collection_defaults() {
        assert_eq!(collection(None, "default").unwrap(), "default");
        assert_eq!(collection(Some("   "), "default").unwrap(), "default");
        assert_eq!(collection(Some(" trimmed "), "default").unwrap(), "trimmed");
        assert!(collection(Some("a\nb"), "default").is_err());
    }

    #[test]
    fn numbers() {
        assert!(unit_range("min_confidence", f64::NAN, 0.0, 1.0).is_err());
        assert!(unit_range("min_confidence", -0.1, 0.0, 1.0).is_err());
        assert_eq!(clamp_n(0), 1);
        assert_eq!(clamp_n(1000), 100);
        assert!(memory_id(0).is_err());
    }

    #[test]
    fn context_json() {
        assert_eq!(context("context", Some("some notes")).unwrap(), "some notes");
        assert!(context("context", Some("{broken")).is_err());
        assert!(context("context", Some(&"x".repeat(MAX_CONTEXT_BYTES + 1))).is_err());
        assert!(json_object("context_filter", "[1,2,3]", 100).is_err());
    }

    #[test]
    fn import_fields() {
        assert_eq!(timestamp("created_at", "2026-03-09T10:30:00.123Z").unwrap(), "2026-03-09T10:30:00.123Z");
        assert_eq!(timestamp("created_at", "2026-03-09T12:30:00+02:00").unwrap(), "2026-03-09T10:30:00.000Z");
        assert!(timestamp("created_at", "yesterday").unwrap_err().message.starts_with("created_at "));
        assert!(tag_list("auto_tags", &["a"; 3], 2).unwrap_err().message.contains("auto_tags"));
        assert_eq!(perception_metadata("metadata", Some("  ")).unwrap(), None);
        assert!(perception_metadata("metadata", Some("{")).is_err());
        assert!(perception_data("data", &vec![0; MAX_PERCEPTION_DATA + 1]).is_err());
    }
}
