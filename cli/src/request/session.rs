//! Sessions (episodes): start, end, the list and one session's timeline
//! (`robotmem session start|end`, `robotmem sessions [ID]`; `GET /api/sessions`,
//! `GET /api/sessions/{id}/memories`; the MCP tools start_session/end_session and
//! the resource `robotmem://session/{id}`).

use robotmem::{render, Db, ListRequest, MemoryPage, Result, SessionEnded, SessionPage, SessionStarted};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{default_page, default_per_page, given, offset, paged, Reply};

#[derive(clap::Args, Deserialize, JsonSchema, Debug, Clone)]
#[schemars(deny_unknown_fields)]
pub struct StartSession {
    /// Collection namespace (default: the database's default collection).
    #[arg(long)]
    #[serde(default)]
    pub collection: Option<String>,
    /// Episode context JSON (robot, environment, task).
    #[arg(long)]
    #[serde(default)]
    pub context: Option<String>,
}

pub fn start_session(db: &Db, r: &StartSession) -> Result<Reply<SessionStarted>> {
    let data = db.start_session(given(&r.collection), r.context.as_deref())?;
    Ok(Reply { json: render::session_started(&data), data })
}

#[derive(clap::Args, Deserialize, JsonSchema, Debug, Clone)]
#[schemars(deny_unknown_fields)]
pub struct EndSession {
    /// Session id from start_session.
    #[arg(value_name = "SESSION_ID")]
    pub session_id: String,
    /// Episode success score, 0.0-1.0.
    #[arg(long = "outcome")]
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub outcome_score: Option<f64>,
}

pub fn end_session(db: &Db, r: &EndSession) -> Result<Reply<SessionEnded>> {
    let data = db.end_session(&r.session_id, r.outcome_score)?;
    Ok(Reply { json: render::session_ended(&data), data })
}

/// Which page of a listing (sessions, a session's memories).
#[derive(clap::Args, Deserialize, JsonSchema, Debug, Clone)]
pub struct Paging {
    /// Page number, from 1.
    #[arg(long, default_value_t = default_page())]
    #[serde(default = "default_page")]
    pub page: u64,
    /// Items per page, 1-500.
    #[arg(long, default_value_t = default_per_page())]
    #[serde(default = "default_per_page")]
    pub per_page: u32,
}

/// A page of sessions, newest first.
pub fn sessions(db: &Db, r: &Paging) -> Result<Reply<SessionPage>> {
    let data = db.sessions(offset(r.page, r.per_page)?, r.per_page)?;
    Ok(Reply { json: paged(render::session_page(&data), r.page, r.per_page), data })
}

/// One session's memories, oldest first, every status.
pub fn timeline(db: &Db, session_id: &str, r: &Paging) -> Result<Reply<MemoryPage>> {
    let data = db.list(&ListRequest {
        session_id: Some(session_id),
        status: None,
        oldest_first: true,
        offset: offset(r.page, r.per_page)?,
        limit: r.per_page,
        ..Default::default()
    })?;
    let mut json = paged(render::memory_page(&data), r.page, r.per_page);
    json["session_id"] = session_id.into();
    Ok(Reply { json, data })
}
