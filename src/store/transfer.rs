//! SQL of export and import (docs/EXPORT-FORMAT.md): rows read one at a time in
//! id order, and the columns of an imported row that `memory::insert` does not set.

use rusqlite::{params, Connection, OptionalExtension};

use super::history;
use crate::error::Result;
use crate::store::memory::{self, COLUMNS};
use crate::types::Memory;

/// Columns of a memory that [`Memory`] does not carry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryExtra {
    /// Confidence at the decay anchor (`None`: the confidence itself).
    pub decay_base: Option<f64>,
    /// When the next whole day of decay elapses (`None`: never decays).
    pub decay_next_at: Option<String>,
    pub invalidated_reason: Option<String>,
    pub invalidated_at: Option<String>,
}

/// A row of `sessions`.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    /// The session id callers use (`external_id`).
    pub id: String,
    pub collection: String,
    pub context: Option<String>,
    pub session_count: i64,
    /// "active" or "ended".
    pub status: String,
    pub client_type: String,
    pub created_at: String,
    pub ended_at: Option<String>,
}

/// A row of `session_outcomes`: (score, time).
pub type Outcome = (Option<f64>, String);

/// Sessions and memories an export of `collection` (all when `None`) writes. A
/// collection's sessions are its own and those its memories belong to.
const SESSIONS_OF: &str = "FROM sessions WHERE ?1 IS NULL OR collection = ?1 OR external_id IN
    (SELECT session_id FROM memories WHERE collection = ?1 AND session_id IS NOT NULL)";
const MEMORIES_OF: &str = "FROM memories WHERE ?1 IS NULL OR collection = ?1";

/// (sessions, memories) an export of `collection` writes.
pub fn counts(conn: &Connection, collection: Option<&str>) -> Result<(u64, u64)> {
    let sql = format!("SELECT (SELECT count(*) {SESSIONS_OF}), (SELECT count(*) {MEMORIES_OF})");
    Ok(conn.query_row(&sql, [collection], |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)))?)
}

/// Calls `f` for each session of an export of `collection`, in id order, with its
/// outcomes; one row in memory at a time.
pub fn each_session(
    conn: &Connection,
    collection: Option<&str>,
    mut f: impl FnMut(SessionRecord, Vec<Outcome>) -> Result<()>,
) -> Result<()> {
    let sql = format!(
        "SELECT external_id, collection, context, session_count, status, client_type, created_at, ended_at
         {SESSIONS_OF} ORDER BY id"
    );
    let mut st = conn.prepare(&sql)?;
    let mut rows = st.query([collection])?;
    let mut outcomes =
        conn.prepare("SELECT score, created_at FROM session_outcomes WHERE session_id = ?1 ORDER BY id")?;
    while let Some(r) = rows.next()? {
        let s = SessionRecord {
            id: r.get(0)?,
            collection: r.get(1)?,
            context: r.get(2)?,
            session_count: r.get(3)?,
            status: r.get(4)?,
            client_type: r.get(5)?,
            created_at: r.get(6)?,
            ended_at: r.get(7)?,
        };
        let o = outcomes.query_map([&s.id], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
        f(s, o)?;
    }
    Ok(())
}

/// Calls `f` for each memory of an export of `collection`, in id order, one row in
/// memory at a time (a cursor over one read transaction). A row whose text does not
/// match its checksum stops the walk with `Status::Corrupt` naming it.
pub fn each_memory(
    conn: &Connection,
    collection: Option<&str>,
    mut f: impl FnMut(Memory, MemoryExtra) -> Result<()>,
) -> Result<()> {
    let sql = format!(
        "SELECT {COLUMNS}, decay_base, decay_next_at, invalidated_reason, invalidated_at {MEMORIES_OF} ORDER BY id"
    );
    let mut st = conn.prepare(&sql)?;
    let mut rows = st.query([collection])?;
    let extra_at = COLUMNS.split(',').count();
    while let Some(r) = rows.next()? {
        let m = memory::from_row(r)?;
        let extra = MemoryExtra {
            decay_base: r.get(extra_at)?,
            decay_next_at: r.get(extra_at + 1)?,
            invalidated_reason: r.get(extra_at + 2)?,
            invalidated_at: r.get(extra_at + 3)?,
        };
        f(m, extra)?;
    }
    Ok(())
}

/// Tags of a memory by source: (automatic, user), each sorted.
pub fn tags_by_source(conn: &Connection, id: i64) -> Result<(Vec<String>, Vec<String>)> {
    let mut st =
        conn.prepare_cached("SELECT tag, source = 'user' FROM memory_tags WHERE memory_id = ?1 ORDER BY tag")?;
    let mut rows = st.query([id])?;
    let (mut auto, mut user) = (Vec::new(), Vec::new());
    while let Some(r) = rows.next()? {
        let tag: String = r.get(0)?;
        if r.get(1)? {
            user.push(tag);
        } else {
            auto.push(tag);
        }
    }
    Ok((auto, user))
}

/// Stretches the span of session `id` to include `at`, if `client_type` made it
/// (the sessions an import makes for a log's episodes).
pub fn widen_session(conn: &Connection, id: &str, client_type: &str, at: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE sessions SET created_at = min(created_at, ?3), ended_at = max(coalesce(ended_at, ?3), ?3)
         WHERE external_id = ?1 AND client_type = ?2",
    )?
    .execute(rusqlite::params![id, client_type, at])?;
    Ok(())
}

/// Stores a session row and its outcomes unless a session of that id exists;
/// returns whether it was stored.
pub fn insert_session(conn: &Connection, s: &SessionRecord, outcomes: &[Outcome]) -> Result<bool> {
    let stored = conn
        .prepare_cached(
            "INSERT INTO sessions (external_id, collection, context, session_count, status, client_type, created_at, ended_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (external_id) DO NOTHING",
        )?
        .execute(params![s.id, s.collection, s.context, s.session_count, s.status, s.client_type, s.created_at, s.ended_at])?;
    if stored == 0 {
        return Ok(false);
    }
    let mut ins =
        conn.prepare_cached("INSERT INTO session_outcomes (session_id, score, created_at) VALUES (?1, ?2, ?3)")?;
    for (score, at) in outcomes {
        ins.execute(params![s.id, score, at])?;
    }
    Ok(true)
}

/// What an imported memory keeps of its past, written over the row
/// `memory::insert` made (same transaction, so the same `rev`).
pub struct Restored<'a> {
    pub status: &'a str,
    pub decay_base: f64,
    pub decay_next_at: Option<&'a str>,
    pub invalidated_reason: Option<&'a str>,
    pub invalidated_at: Option<&'a str>,
    pub access_count: i64,
    pub return_count: i64,
    pub last_accessed: Option<&'a str>,
    pub updated_at: &'a str,
}

pub fn restore(conn: &Connection, id: i64, r: &Restored) -> Result<()> {
    let mut st = conn.prepare_cached(
        "UPDATE memories SET status = ?2, decay_base = ?3, decay_next_at = ?4, invalidated_reason = ?5,
            invalidated_at = ?6, access_count = ?7, return_count = ?8, last_accessed = ?9, updated_at = ?10
         WHERE id = ?1",
    )?;
    let args = params![
        id,
        r.status,
        r.decay_base,
        r.decay_next_at,
        r.invalidated_reason,
        r.invalidated_at,
        r.access_count,
        r.return_count,
        r.last_accessed,
        r.updated_at
    ];
    history::caused(conn, history::cause::IMPORT, || Ok(st.execute(args)?))?;
    // The row was made by this import: its own status is not a change of it.
    history::drop_versions(conn, id)
}

/// A memory that is the same record as an imported inactive one (superseded or
/// forgotten): same collection, content hash, status and creation time.
pub fn find_same(
    conn: &Connection,
    collection: &str,
    hash: &str,
    status: &str,
    created_at: &str,
) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached(
            "SELECT id FROM memories WHERE content_hash = ?1 AND collection = ?2 AND status = ?3 AND created_at = ?4
             ORDER BY id LIMIT 1",
        )?
        .query_row(params![hash, collection, status, created_at], |r| r.get(0))
        .optional()?)
}

/// Points a superseded memory at the memory that replaced it.
pub fn set_superseded_by(conn: &Connection, id: i64, by: i64) -> Result<()> {
    let mut st =
        conn.prepare_cached("UPDATE memories SET superseded_by = ?2 WHERE id = ?1 AND status = 'superseded'")?;
    history::caused(conn, history::cause::IMPORT, || Ok(st.execute(params![id, by])?))?;
    // Set while the import links what it brought: not a change of the memory.
    history::drop_versions(conn, id)
}
