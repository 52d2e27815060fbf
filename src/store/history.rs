//! A memory's past (schema 9): the versions its changes replaced, kept by the
//! `memory_versioned` trigger, and the rows of a database as it was at a past
//! time, read for an as-of view (`db::history`).
//!
//! Times are stored times (UTC, milliseconds, text order = time order). A
//! version was the memory's state from the time the one before it was replaced
//! (or from when the file got the memory) until its own `replaced_at`; the
//! state at time `t` is the first version replaced after `t`, or the row itself
//! when none was.

use std::collections::{HashMap, HashSet};

use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{params, Connection};

use crate::error::{Error, Result};
use crate::types::{MemoryStatus, MemoryVersion};

/// What a change is, as the trigger records it.
pub mod cause {
    pub const UPDATE: &str = "update";
    pub const FORGET: &str = "forget";
    pub const CONSOLIDATION: &str = "consolidation";
    pub const EXPIRY: &str = "expiry";
    pub const IMPORT: &str = "import";
}

/// Runs `change` (a write of one memory on `conn`) saying what it is: the
/// trigger records that as the cause of a version it keeps (a change made while
/// the fleet's changes are applied is `fleet` anyway). The row is removed after,
/// also when the write changed nothing the trigger watches.
pub fn caused<T>(conn: &Connection, what: &str, change: impl FnOnce() -> Result<T>) -> Result<T> {
    conn.prepare_cached("INSERT OR REPLACE INTO memory_change_cause (one, cause) VALUES (1, ?1)")?.execute([what])?;
    let out = on_clock(conn, change)?;
    conn.prepare_cached("DELETE FROM memory_change_cause")?.execute([])?;
    Ok(out)
}

/// Runs `change` (writes on `conn`) and gives the versions it made the time of
/// the handle's clock: the trigger, which also runs for SQL written by hand,
/// can only read SQLite's (the system clock).
pub fn on_clock<T>(conn: &Connection, change: impl FnOnce() -> Result<T>) -> Result<T> {
    let before: i64 =
        conn.prepare_cached("SELECT coalesce(max(seq), 0) FROM memory_versions")?.query_row([], |r| r.get(0))?;
    let out = change()?;
    conn.prepare_cached("UPDATE memory_versions SET replaced_at = robotmem_now() WHERE seq > ?1")?.execute([before])?;
    Ok(out)
}

/// Forgets the versions of memory `id` (an import writes the row it made over:
/// that is not a change of the memory).
pub fn drop_versions(conn: &Connection, id: i64) -> Result<()> {
    conn.prepare_cached("DELETE FROM memory_versions WHERE memory_id = ?1")?.execute([id])?;
    Ok(())
}

/// Deletes up to `limit` versions replaced before `cutoff` (purge); returns how many.
pub fn purge_before(conn: &Connection, cutoff: &str, limit: usize) -> Result<usize> {
    Ok(conn
        .prepare_cached(
            "DELETE FROM memory_versions WHERE seq IN
               (SELECT seq FROM memory_versions WHERE replaced_at < ?1 ORDER BY replaced_at LIMIT ?2)",
        )?
        .execute(params![cutoff, limit as i64])?)
}

/// The columns a version replaces, in `memories` and `memory_versions` alike.
pub const VERSIONED: [&str; 22] = [
    "content",
    "human_summary",
    "context",
    "category",
    "confidence",
    "status",
    "superseded_by",
    "invalidated_reason",
    "invalidated_at",
    "expires_at",
    "content_hash",
    "meta_hash",
    "is_real",
    "term_count",
    "terms",
    "numbers_sig",
    "scope_files",
    "scope_entities",
    "scope_modules",
    "updated_at",
    "version",
    "writer",
];

/// Every version of memory `id`, oldest first, the current one last; empty
/// when there is no such memory.
pub fn versions(conn: &Connection, id: i64) -> Result<Vec<MemoryVersion>> {
    let current = conn
        .prepare_cached(
            "SELECT version, writer, content, context, category, confidence, status, superseded_by,
                    invalidated_reason, expires_at, created_at, stored_at, origin
             FROM memories WHERE id = ?1",
        )?
        .query_map([id], |r| {
            Ok((version_of(r)?, r.get::<_, String>(10)?, r.get::<_, Option<String>>(11)?, r.get(12)?))
        })?
        .next()
        .transpose()?;
    let Some((now, created, stored, origin)) = current else { return Ok(Vec::new()) };
    let origin: String = origin;
    let mut st = conn.prepare_cached(
        "SELECT version, writer, content, context, category, confidence, status, superseded_by,
                invalidated_reason, expires_at, replaced_at, cause, cause_writer
         FROM memory_versions WHERE memory_id = ?1 ORDER BY seq",
    )?;
    let old = st
        .query_map([id], |r| Ok((version_of(r)?, r.get::<_, String>(10)?, r.get::<_, String>(11)?, r.get(12)?)))?
        .collect::<rusqlite::Result<Vec<(MemoryVersion, String, String, String)>>>()?;
    // The first version's cause: how the file got the memory.
    let stored = stored.unwrap_or_else(|| created.clone());
    let mut from = (stored.clone(), first_cause(&origin, &created, &stored).to_string(), origin);
    let mut out = Vec::with_capacity(old.len() + 1);
    for (mut v, replaced_at, cause, writer) in old {
        (v.valid_from, v.cause, v.cause_writer) = std::mem::replace(&mut from, (replaced_at.clone(), cause, writer));
        v.valid_to = Some(replaced_at);
        out.push(v);
    }
    let mut now = now;
    (now.valid_from, now.cause, now.cause_writer) = from;
    out.push(now);
    Ok(out)
}

/// How a memory came into this file: received from another robot, imported
/// (stored after it was created), or learned here.
fn first_cause(origin: &str, created: &str, stored: &str) -> &'static str {
    if !origin.is_empty() {
        "fleet"
    } else if stored > created {
        cause::IMPORT
    } else {
        "learn"
    }
}

fn version_of(r: &rusqlite::Row) -> rusqlite::Result<MemoryVersion> {
    let status: String = r.get(6)?;
    Ok(MemoryVersion {
        version: r.get(0)?,
        writer: r.get(1)?,
        content: r.get(2)?,
        context: r.get(3)?,
        category: r.get(4)?,
        confidence: r.get(5)?,
        status: MemoryStatus::parse(&status)
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(6, rusqlite::types::Type::Text, Box::new(e)))?,
        superseded_by: r.get(7)?,
        invalidated_reason: r.get(8)?,
        expires_at: r.get(9)?,
        valid_from: String::new(),
        valid_to: None,
        cause: String::new(),
        cause_writer: String::new(),
    })
}

/// What [`copy_at`] copied.
#[derive(Default)]
pub struct Copied {
    /// The memories the file had at that time.
    pub known: HashSet<i64>,
    /// Expiry times still ahead then: stored as none in the copy (see `db::history`).
    pub expiries: HashMap<i64, String>,
}

/// Copies into `dst` (a new database of this schema) the rows of `memories` as
/// they were at `at`: each memory `src` had then, every column, the versioned
/// ones from the version of that time. An expiry still ahead then is stored as
/// none (and returned); the memories in `changed` (another text then) are marked
/// without a vector. Values are bound as read, without copies.
pub fn copy_at(src: &Connection, dst: &Connection, at: &str, changed: &HashSet<i64>) -> Result<Copied> {
    let mut st = src.prepare(
        "SELECT m.*, (SELECT v.seq FROM memory_versions v WHERE v.memory_id = m.id AND v.replaced_at > ?1
                      ORDER BY v.seq LIMIT 1) AS rm_version_seq
         FROM memories m WHERE coalesce(m.stored_at, m.created_at) <= ?1 ORDER BY m.id",
    )?;
    let names: Vec<String> = st.column_names().map(String::from).collect();
    let n = names.len() - 1;
    let col = |c: &str| names[..n].iter().position(|x| x == c).ok_or_else(|| Error::internal(format!("no column {c}")));
    // For each column, its place in VERSIONED (None: the row's own value).
    let mut versioned = vec![None; n];
    for (k, c) in VERSIONED.iter().enumerate() {
        versioned[col(c)?] = Some(k);
    }
    let (id_col, expiry_col, embedded_col) = (col("id")?, col("expires_at")?, col("embedded")?);
    let mut version = src.prepare(&format!("SELECT {} FROM memory_versions WHERE seq = ?1", VERSIONED.join(", ")))?;
    let marks = (1..=n).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ");
    let mut ins = dst.prepare(&format!("INSERT INTO memories ({}) VALUES ({marks})", names[..n].join(", ")))?;
    // Indexes are built once at the end, from sorted keys, not row by row.
    let indexes: Vec<(String, String)> = dst
        .prepare(
            "SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'memories' AND sql IS NOT NULL",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (name, _) in &indexes {
        dst.execute_batch(&format!("DROP INDEX \"{name}\""))?;
    }
    let mut out = Copied::default();
    let mut rows = st.query([at])?;
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(id_col)?;
        let then: Option<Vec<Value>> = match r.get::<_, Option<i64>>(n)? {
            Some(seq) => Some(version.query_row([seq], |v| (0..VERSIONED.len()).map(|k| v.get(k)).collect())?),
            None => None,
        };
        for (i, &k) in versioned.iter().enumerate() {
            let mut value = match (&then, k) {
                (Some(then), Some(k)) => ValueRef::from(&then[k]),
                _ => r.get_ref(i)?,
            };
            if i == expiry_col {
                if let ValueRef::Text(t) = value {
                    let t = std::str::from_utf8(t).map_err(|_| Error::internal("an expiry is not UTF-8"))?;
                    if t > at {
                        out.expiries.insert(id, t.to_string());
                        value = ValueRef::Null;
                    }
                }
            } else if i == embedded_col && changed.contains(&id) {
                value = ValueRef::Integer(0);
            }
            ins.raw_bind_parameter(i + 1, ToSqlOutput::Borrowed(value))?;
        }
        ins.raw_execute()?;
        out.known.insert(id);
    }
    for (_, sql) in &indexes {
        dst.execute_batch(sql)?;
    }
    Ok(out)
}

/// Memories whose state at `at` is another version than the stored row (their
/// vectors are of another text).
pub fn changed_since(conn: &Connection, at: &str) -> Result<Vec<i64>> {
    let mut st = conn.prepare_cached(
        "SELECT DISTINCT memory_id FROM memory_versions WHERE replaced_at > ?1
           AND (SELECT content FROM memory_versions w WHERE w.memory_id = memory_versions.memory_id
                  AND w.replaced_at > ?1 ORDER BY w.seq LIMIT 1)
               IS NOT (SELECT content FROM memories WHERE id = memory_versions.memory_id)",
    )?;
    let ids = st.query_map([at], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    Ok(ids)
}
