//! The REST API: JSON in the field names of the library's renderings (the C
//! API's `rm_*_json`). Every list is paginated in SQL. Parameters are parsed into
//! the request types of [`crate::request`] (the CLI's and MCP's), so defaults and
//! bounds are theirs.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use robotmem::{render, Db, Error, Result};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::guard::{error, from_error};
use super::App;
use crate::request;

/// Runs a library call off the async workers; its JSON or its error.
async fn answer(app: Arc<App>, f: impl FnOnce(&Db) -> Result<Value> + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(move || f(&app.db)).await {
        Ok(Ok(v)) => ([(header::CONTENT_TYPE, "application/json")], v.to_string()).into_response(),
        Ok(Err(e)) => from_error(&e),
        Err(_) => {
            error(StatusCode::INTERNAL_SERVER_ERROR, "RM_INTERNAL", "the request failed inside the server (a bug)")
        }
    }
}

fn query<T: DeserializeOwned>(raw: Option<String>) -> Result<T> {
    request::from_query(raw.as_deref().unwrap_or_default()).map_err(Error::invalid)
}

/// A request body: JSON text.
fn json_body(bytes: &Bytes) -> Result<Value> {
    serde_json::from_slice(bytes).map_err(|e| Error::invalid(format!("the body is not valid JSON: {e}")))
}

/// A JSON object body, with the memory id of the path, as request `T`.
fn body<T: DeserializeOwned>(bytes: &Bytes, id: i64) -> Result<T> {
    let mut v = json_body(bytes)?;
    let Some(o) = v.as_object_mut() else { return Err(Error::invalid("the body must be a JSON object")) };
    // The page sends an edited context as an object; requests take its JSON text.
    if let Some(c) = o.get_mut("context").filter(|c| c.is_object()) {
        *c = c.to_string().into();
    }
    o.insert("memory_id".into(), id.into());
    request::from_json(v).map_err(Error::invalid)
}

fn id(raw: &str) -> Result<i64> {
    raw.parse().map_err(|_| Error::invalid(format!("memory id must be a number (got {raw:?})")))
}

pub async fn doctor(State(app): State<Arc<App>>) -> Response {
    answer(app, |db| Ok(request::doctor(db, false)?.json)).await
}

pub async fn stats(State(app): State<Arc<App>>) -> Response {
    answer(app, |db| Ok(request::dashboard(db)?.json)).await
}

pub async fn collections(State(app): State<Arc<App>>) -> Response {
    answer(app, |db| Ok(json!({"collections": render::stats(&db.stats()?)["collections"]}))).await
}

pub async fn categories(State(app): State<Arc<App>>) -> Response {
    answer(app, |db| Ok(json!({"categories": render::stats(&db.stats()?)["by_category"]}))).await
}

pub async fn memories(State(app): State<Arc<App>>, RawQuery(q): RawQuery) -> Response {
    answer(app, move |db| Ok(request::list(db, &query(q)?)?.json)).await
}

pub async fn search(State(app): State<Arc<App>>, RawQuery(q): RawQuery) -> Response {
    answer(app, move |db| Ok(request::recall_counted(db, &query(q)?)?.json)).await
}

/// The `as_of` of a query string (`?as_of=TIME`), if given.
#[derive(serde::Deserialize)]
struct AsOf {
    #[serde(default)]
    as_of: Option<String>,
}

pub async fn memory(State(app): State<Arc<App>>, Path(raw): Path<String>, RawQuery(q): RawQuery) -> Response {
    answer(app, move |db| {
        let at: AsOf = query(q)?;
        Ok(request::get(db, id(&raw)?, &at.as_of)?.json)
    })
    .await
}

/// A memory's versions (GET /api/memory/{id}/history).
pub async fn history(State(app): State<Arc<App>>, Path(raw): Path<String>) -> Response {
    answer(app, move |db| Ok(request::history(db, &request::History { memory_id: id(&raw)? })?.json)).await
}

pub async fn update(State(app): State<Arc<App>>, Path(raw): Path<String>, bytes: Bytes) -> Response {
    answer(app, move |db| Ok(request::update(db, &body(&bytes, id(&raw)?)?)?.json)).await
}

/// Sets, moves or clears (a body with neither field) a memory's expiry.
pub async fn set_expiry(State(app): State<Arc<App>>, Path(raw): Path<String>, bytes: Bytes) -> Response {
    answer(app, move |db| Ok(request::set_expiry(db, &body(&bytes, id(&raw)?)?)?.json)).await
}

/// Hard-deletes what left recall at least `older_than_seconds` ago (POST /api/purge).
pub async fn purge(State(app): State<Arc<App>>, bytes: Bytes) -> Response {
    answer(
        app,
        move |db| Ok(request::purge(db, &request::from_json(json_body(&bytes)?).map_err(Error::invalid)?)?.json),
    )
    .await
}

pub async fn forget(State(app): State<Arc<App>>, Path(raw): Path<String>, bytes: Bytes) -> Response {
    answer(app, move |db| Ok(request::forget(db, &body(&bytes, id(&raw)?)?)?.json)).await
}

pub async fn sessions(State(app): State<Arc<App>>, RawQuery(q): RawQuery) -> Response {
    answer(app, move |db| Ok(request::sessions(db, &query(q)?)?.json)).await
}

pub async fn session_memories(State(app): State<Arc<App>>, Path(sid): Path<String>, RawQuery(q): RawQuery) -> Response {
    answer(app, move |db| Ok(request::timeline(db, &sid, &query(q)?)?.json)).await
}

/// The newest memories of failures (see `Db::recent_failures`).
pub async fn recent_failures(State(app): State<Arc<App>>, RawQuery(q): RawQuery) -> Response {
    answer(app, move |db| Ok(request::recent_failures(db, &query(q)?)?.json)).await
}
