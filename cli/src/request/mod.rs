//! One request layer for the three surfaces. Each operation has one request type
//! that clap (`robotmem <command>`), the web API (query string or JSON body) and
//! the MCP tools (arguments, and their published JSON Schema) all deserialize
//! into, and one function that calls [`Db`] and renders the result with the
//! library's `render`. Defaults and bounds come from [`robotmem::limits`], so the
//! surfaces cannot drift apart (`tests.rs` and `cli/tests/surfaces.rs` check it).
//!
//! Names: a field's serde name is the MCP parameter; the web API's shorter names
//! (`q`, `session`, `filter`, `spatial`, `content`) are serde aliases; the CLI's
//! flags are in the `#[arg]` attributes. serde accepts unknown fields (the web
//! ignores stray query parameters); the schemas say `additionalProperties: false`
//! and the MCP server refuses a name its schema does not list.
//!
//! The collection is never filled in here: absent (or blank), the handle's own
//! default collection applies.

mod browse;
mod history;
mod memory;
mod recall;
mod retention;
mod session;
mod spatial;
#[cfg(test)]
mod tests;

pub use browse::{dashboard, doctor, list, recent_failures, stats, List, RecentFailures};
pub use history::{history, History};
pub use memory::{
    forget, get, learn, save_perception, set_expiry, update, Forget, Learn, SavePerception, SetExpiry, Update,
};
pub use recall::{recall, recall_counted, Recall};
pub use retention::{purge, Purge};
pub use session::{end_session, sessions, start_session, timeline, EndSession, Paging, StartSession};

use robotmem::{limits, Error, Result};
use serde_json::Value;

/// What an operation returns: the JSON every surface prints or sends, and the
/// typed result the CLI's text is written from.
pub struct Reply<T> {
    pub json: Value,
    pub data: T,
}

/// "" (or blanks) and absent both mean "not given".
fn given(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|s| !s.trim().is_empty())
}

/// Text whose empty value means "not given".
fn given_text(s: &str) -> Option<&str> {
    Some(s).filter(|s| !s.trim().is_empty())
}

fn default_n() -> i64 {
    limits::DEFAULT_RESULTS
}
fn default_min_confidence() -> f64 {
    limits::DEFAULT_MIN_CONFIDENCE
}
fn default_page() -> u64 {
    1
}
fn default_per_page() -> u32 {
    limits::DEFAULT_PER_PAGE
}
fn default_recent_failures() -> u32 {
    limits::DEFAULT_RECENT_FAILURES
}

/// `page` (from 1) and `per_page` as the library's offset and limit (the library
/// checks the limit, 1–[`limits::MAX_PER_PAGE`]).
fn offset(page: u64, per_page: u32) -> Result<u64> {
    if page == 0 {
        return Err(Error::invalid("page must be at least 1"));
    }
    Ok((page - 1).saturating_mul(u64::from(per_page)))
}

/// A page's JSON with the paging it was asked with.
fn paged(mut v: Value, page: u64, per_page: u32) -> Value {
    v["page"] = page.into();
    v["per_page"] = per_page.into();
    v
}

/// A deserialization error as every surface reports it: the field, then why.
fn field_error<E: std::fmt::Display>(e: serde_path_to_error::Error<E>) -> String {
    let path = e.path().to_string();
    let inner = e.into_inner().to_string();
    if path == "." {
        inner
    } else {
        format!("{path}: {inner}")
    }
}

/// JSON arguments (an MCP call, a web body) as request `T`. A null field is an
/// absent one (its default; for a required one, "missing field").
pub fn from_json<T: serde::de::DeserializeOwned>(mut args: Value) -> std::result::Result<T, String> {
    if let Value::Object(m) = &mut args {
        m.retain(|_, v| !v.is_null());
    }
    serde_path_to_error::deserialize(args).map_err(field_error)
}

/// A query string (the web API) as request `T`. Values are trimmed and an empty
/// one is an absent one (its default).
pub fn from_query<T: serde::de::DeserializeOwned>(raw: &str) -> std::result::Result<T, String> {
    let pairs: Vec<(String, String)> = form_urlencoded::parse(raw.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.trim().to_string()))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let clean = form_urlencoded::Serializer::new(String::new()).extend_pairs(&pairs).finish();
    serde_path_to_error::deserialize(serde_urlencoded::Deserializer::new(form_urlencoded::parse(clean.as_bytes())))
        .map_err(field_error)
}
