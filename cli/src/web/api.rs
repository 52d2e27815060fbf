//! The REST API: JSON in the field names of the library's renderings (the C
//! API's `rm_*_json`). Every list is paginated in SQL.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use robotmem::{render, Db, Error, ListRequest, MemoryKind, MemoryStatus, RecallRequest, Result};
use serde_json::{json, Value};

use super::guard::{error, from_error};
use super::App;

type Params = Query<HashMap<String, String>>;

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

fn param<T: FromStr>(q: &HashMap<String, String>, name: &str, default: T) -> Result<T> {
    match q.get(name).map(|v| v.trim()).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| Error::invalid(format!("{name} has an invalid value {v:?}"))),
    }
}

fn text(q: &HashMap<String, String>, name: &str) -> Option<String> {
    q.get(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}

fn id(raw: &str) -> Result<i64> {
    raw.parse().map_err(|_| Error::invalid(format!("memory id must be a number (got {raw:?})")))
}

/// `page` (from 1) and `per_page` (1–500) as an offset and limit.
fn paging(q: &HashMap<String, String>) -> Result<(u64, u32, u64)> {
    let page: u64 = param(q, "page", 1)?;
    let per_page: u32 = param(q, "per_page", 50)?;
    if page == 0 {
        return Err(Error::invalid("page must be at least 1"));
    }
    Ok(((page - 1).saturating_mul(u64::from(per_page)), per_page, page))
}

fn body_json(body: &Bytes) -> Result<Value> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| Error::invalid(format!("the body is not valid JSON: {e}")))?;
    if !v.is_object() {
        return Err(Error::invalid("the body must be a JSON object"));
    }
    Ok(v)
}

pub async fn doctor(State(app): State<Arc<App>>) -> Response {
    answer(app, |db| Ok(render::doctor(&db.doctor(false)?))).await
}

pub async fn stats(State(app): State<Arc<App>>) -> Response {
    answer(app, |db| Ok(render::stats(&db.stats()?))).await
}

pub async fn collections(State(app): State<Arc<App>>) -> Response {
    answer(app, |db| Ok(json!({"collections": render::stats(&db.stats()?)["collections"]}))).await
}

pub async fn categories(State(app): State<Arc<App>>) -> Response {
    answer(app, |db| Ok(json!({"categories": render::stats(&db.stats()?)["by_category"]}))).await
}

pub async fn memories(State(app): State<Arc<App>>, Query(q): Params) -> Response {
    answer(app, move |db| {
        let (offset, limit, page) = paging(&q)?;
        let kind = match text(&q, "type").as_deref() {
            None => None,
            Some("fact") => Some(MemoryKind::Fact),
            Some("perception") => Some(MemoryKind::Perception),
            Some(t) => return Err(Error::invalid(format!("type must be fact or perception (got {t:?})"))),
        };
        let status = match text(&q, "status").as_deref() {
            None | Some("active") => Some(MemoryStatus::Active),
            Some("superseded") => Some(MemoryStatus::Superseded),
            Some("forgotten") | Some("invalidated") => Some(MemoryStatus::Invalidated),
            Some("all") => None,
            Some(s) => {
                return Err(Error::invalid(format!("status must be active, superseded, forgotten or all (got {s:?})")))
            }
        };
        let (collection, category, session) = (text(&q, "collection"), text(&q, "category"), text(&q, "session"));
        let days: Option<u32> =
            q.get("days").filter(|d| !d.trim().is_empty()).map(|_| param(&q, "days", 0)).transpose()?;
        let p = db.list(&ListRequest {
            collection: collection.as_deref(),
            kind,
            category: category.as_deref(),
            status,
            session_id: session.as_deref(),
            min_confidence: param(&q, "min_confidence", 0.0)?,
            days,
            oldest_first: false,
            offset,
            limit,
        })?;
        let mut v = render::memory_page(&p);
        v["page"] = json!(page);
        v["per_page"] = json!(limit);
        Ok(v)
    })
    .await
}

pub async fn search(State(app): State<Arc<App>>, Query(q): Params) -> Response {
    answer(app, move |db| {
        let query = text(&q, "q").ok_or_else(|| Error::invalid("q (the query) is required"))?;
        let (collection, session, filter, spatial) =
            (text(&q, "collection"), text(&q, "session"), text(&q, "filter"), text(&q, "spatial"));
        let r = db.recall(&RecallRequest {
            query: &query,
            collection: collection.as_deref(),
            n: param(&q, "n", 10)?,
            min_confidence: param(&q, "min_confidence", 0.0)?,
            session_id: session.as_deref(),
            context_filter: filter.as_deref(),
            spatial_sort: spatial.as_deref(),
            group_similar: param(&q, "group_similar", false)?,
        })?;
        Ok(render::recall(&r))
    })
    .await
}

pub async fn memory(State(app): State<Arc<App>>, Path(raw): Path<String>) -> Response {
    answer(app, move |db| {
        let id = id(&raw)?;
        let m = db.get(id)?;
        let mut v = render::memory(&m);
        v["tags"] = json!(db.tags(id)?);
        Ok(v)
    })
    .await
}

pub async fn update(State(app): State<Arc<App>>, Path(raw): Path<String>, body: Bytes) -> Response {
    answer(app, move |db| {
        let id = id(&raw)?;
        let b = body_json(&body)?;
        let content = b["content"].as_str().ok_or_else(|| Error::invalid("content (a string) is required"))?;
        let context = match &b["context"] {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            v @ Value::Object(_) => Some(v.to_string()),
            _ => return Err(Error::invalid("context must be a JSON object or a string")),
        };
        Ok(render::update(&db.update(id, content, context.as_deref())?))
    })
    .await
}

pub async fn forget(State(app): State<Arc<App>>, Path(raw): Path<String>, body: Bytes) -> Response {
    answer(app, move |db| {
        let id = id(&raw)?;
        let b = body_json(&body)?;
        let reason = b["reason"].as_str().ok_or_else(|| Error::invalid("reason (a string) is required"))?;
        Ok(render::forget(&db.forget(id, reason)?))
    })
    .await
}

pub async fn sessions(State(app): State<Arc<App>>, Query(q): Params) -> Response {
    answer(app, move |db| {
        let (offset, limit, page) = paging(&q)?;
        let mut v = render::session_page(&db.sessions(offset, limit)?);
        v["page"] = json!(page);
        v["per_page"] = json!(limit);
        Ok(v)
    })
    .await
}

pub async fn session_memories(State(app): State<Arc<App>>, Path(sid): Path<String>, Query(q): Params) -> Response {
    answer(app, move |db| {
        let (offset, limit, page) = paging(&q)?;
        let p = db.list(&ListRequest {
            session_id: Some(&sid),
            status: None,
            oldest_first: true,
            offset,
            limit,
            ..Default::default()
        })?;
        let mut v = render::memory_page(&p);
        v["session_id"] = json!(sid);
        v["page"] = json!(page);
        v["per_page"] = json!(limit);
        Ok(v)
    })
    .await
}

/// Memories examined for recent failures: the newest this many.
const FAILURE_WINDOW: i64 = 10_000;

/// The newest memories of failures (see `Db::recent_failures`).
pub async fn recent_failures(State(app): State<Arc<App>>, Query(q): Params) -> Response {
    answer(app, move |db| {
        let found = db.recent_failures(param(&q, "n", 10)?, FAILURE_WINDOW)?;
        Ok(json!({"memories": found.iter().map(render::memory).collect::<Vec<_>>(), "total": found.len()}))
    })
    .await
}
