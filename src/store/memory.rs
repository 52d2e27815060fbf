//! Rows of the `memories` table and their tags.

use rusqlite::types::ValueRef;
use rusqlite::{params, Connection, OptionalExtension, Row};

use super::history;
use crate::error::{Error, Result, Status};
use crate::fingerprint;
use crate::text;
use crate::types::{Memory, MemoryKind, MemoryStatus, PerceptionType};

/// SQL condition: the row has not expired (`expires_at` in the stored-time
/// format sorts as text; the handle's clock, `robotmem_now()`, is read once per
/// statement).
macro_rules! not_expired {
    () => {
        "(expires_at IS NULL OR expires_at > robotmem_now())"
    };
}
pub(crate) use not_expired;

/// Everything stored for a new memory.
pub struct NewMemory<'a> {
    pub session_id: Option<&'a str>,
    pub collection: &'a str,
    pub kind: MemoryKind,
    pub content: &'a str,
    pub context: &'a str,
    pub perception_type: Option<PerceptionType>,
    pub perception_data: Option<&'a [u8]>,
    pub perception_metadata: Option<&'a str>,
    pub category: &'a str,
    pub confidence: f64,
    pub decay_rate: f64,
    pub content_hash: &'a str,
    pub scope: &'a crate::classify::Scope,
    pub is_real: bool,
    pub terms: &'a crate::fingerprint::Terms,
    pub now: &'a str,
    /// When it expires (stored-time format); `None`: never.
    pub expires_at: Option<&'a str>,
    /// When this file got it, if not at `now` (an import keeps the original
    /// creation time as `now`). `None` stores NULL, read as the creation time
    /// (one byte a row instead of a timestamp).
    pub stored_at: Option<&'a str>,
    /// A memory received from the fleet: its identity and version. `None` for a
    /// local memory: a new UUIDv7 global id, version 1 (and a trigger logs it
    /// for sync once the file is claimed).
    pub remote: Option<&'a Replica>,
}

/// A memory's identity and version in the fleet (see `fleet`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replica {
    pub global_id: String,
    /// The robot that created it (`""`: this file's robot).
    pub origin: String,
    /// The robot of this version (`""`: this file's robot).
    pub writer: String,
    pub version: i64,
}

pub fn insert(conn: &Connection, m: &NewMemory) -> Result<i64> {
    let summary = text::summarize(m.content);
    let files = serde_json::to_string(&m.scope.files)?;
    let entities = serde_json::to_string(&m.scope.entities)?;
    let modules = serde_json::to_string(&m.scope.modules)?;
    conn.prepare_cached(&format!(
        "INSERT INTO memories (session_id, collection, type, content, human_summary, context,
            perception_type, perception_data, perception_metadata, category, confidence,
            decay_rate, content_hash, created_at, updated_at, scope_files, scope_entities,
            scope_modules, is_real, term_count, terms, numbers_sig, decay_base, rev, decay_next_at,
            global_id, origin, writer, version, meta_hash, expires_at, stored_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14, ?15, ?16, ?17,
            ?18, ?19, ?20, ?21, ?11, {NEXT_REV}, CASE WHEN ?22 THEN NULL ELSE {} END,
            ?23, coalesce(?24, ''), coalesce(?25, ''), coalesce(?26, 1), ?27, ?28, ?29)",
        one_day_after("?14")
    ))?
    .execute(params![
        m.session_id,
        m.collection,
        m.kind.as_str(),
        m.content,
        summary,
        m.context,
        m.perception_type.map(PerceptionType::as_str),
        m.perception_data,
        m.perception_metadata,
        m.category,
        m.confidence,
        m.decay_rate,
        m.content_hash,
        m.now,
        files,
        entities,
        modules,
        m.is_real,
        m.terms.count(),
        m.terms.stored(),
        m.terms.signature(),
        crate::classify::is_protected(m.category),
        m.remote.map_or_else(|| uuid::Uuid::now_v7().to_string(), |r| r.global_id.clone()),
        m.remote.map(|r| &r.origin),
        m.remote.map(|r| &r.writer),
        m.remote.map(|r| r.version),
        fingerprint::meta_hash(m.collection, m.session_id, m.category, m.context, m.now),
        m.expires_at,
        m.stored_at,
    ])?;
    Ok(conn.last_insert_rowid())
}

/// A memory's new text and what is derived from it (see [`rewrite`]).
pub struct Rewrite<'a> {
    pub content: &'a str,
    pub category: &'a str,
    pub confidence: f64,
    pub content_hash: &'a str,
    /// The stored context JSON.
    pub context: &'a str,
    pub is_real: bool,
    pub scope: &'a crate::classify::Scope,
    pub terms: &'a crate::fingerprint::Terms,
    pub now: &'a str,
    /// The fleet version applied (`None`: a local change; the trigger counts it).
    pub remote: Option<&'a Replica>,
    /// A new expiry set in the same write (`Some(None)`: none), so that one
    /// change is one version (`store::history`); `None` keeps the expiry.
    pub expiry: Option<Option<&'a str>>,
}

/// Replaces the text of memory `id` with everything derived from it: summary,
/// hash, words, scope, category, confidence (and the decay anchor). The caller
/// refreshes its tags and vector.
pub fn rewrite(conn: &Connection, id: i64, w: &Rewrite) -> Result<()> {
    let kept: Option<(String, Option<String>, String)> = conn
        .prepare_cached("SELECT collection, session_id, created_at FROM memories WHERE id = ?1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    let meta = kept.map(|(collection, session, created)| {
        fingerprint::meta_hash(&collection, session.as_deref(), w.category, w.context, &created)
    });
    let mut st = conn.prepare_cached(&format!(
        "UPDATE memories SET content = ?2, human_summary = ?3, category = ?4, confidence = ?5,
            decay_base = ?5, content_hash = ?6, context = ?7, is_real = ?8, term_count = ?9,
            scope_files = ?10, scope_entities = ?11, scope_modules = ?12, updated_at = ?13,
            terms = ?14, numbers_sig = ?15, rev = {NEXT_REV},
            decay_next_at = CASE WHEN ?16 THEN NULL ELSE coalesce(decay_next_at, {}) END,
            writer = coalesce(?17, writer), version = coalesce(?18, version),
            meta_hash = ?19, expires_at = CASE WHEN ?20 THEN ?21 ELSE expires_at END
         WHERE id = ?1",
        one_day_after("?13")
    ))?;
    let args = params![
        id,
        w.content,
        text::summarize(w.content),
        w.category,
        w.confidence,
        w.content_hash,
        w.context,
        w.is_real,
        w.terms.count(),
        serde_json::to_string(&w.scope.files)?,
        serde_json::to_string(&w.scope.entities)?,
        serde_json::to_string(&w.scope.modules)?,
        w.now,
        w.terms.stored(),
        w.terms.signature(),
        crate::classify::is_protected(w.category),
        w.remote.map(|r| &r.writer),
        w.remote.map(|r| r.version),
        meta,
        w.expiry.is_some(),
        w.expiry.flatten(),
    ];
    history::caused(conn, history::cause::UPDATE, || Ok(st.execute(args)?))?;
    Ok(())
}

/// Soft-deletes memory `id` (forget): out of every search, kept for audit.
/// `remote`: the fleet version that forgot it (`None`: a local forget).
pub fn invalidate(conn: &Connection, id: i64, reason: &str, now: &str, remote: Option<&Replica>) -> Result<()> {
    let mut st = conn.prepare_cached(&format!(
        "UPDATE memories SET status = 'invalidated', invalidated_reason = ?2, invalidated_at = ?3,
            updated_at = ?3, rev = {NEXT_REV}, writer = coalesce(?4, writer), version = coalesce(?5, version)
         WHERE id = ?1"
    ))?;
    let args = params![id, reason, now, remote.map(|r| &r.writer), remote.map(|r| r.version)];
    history::caused(conn, history::cause::FORGET, || Ok(st.execute(args)?))?;
    unindex(conn, id)
}

/// SQL expression of "one day after the time in parameter `?N`", ISO 8601 UTC.
pub fn one_day_after(param: &str) -> String {
    format!("strftime('%Y-%m-%dT%H:%M:%fZ', {param}, '+1 day')")
}

/// SQL expression of the next change stamp (see `search::text`). Every write that
/// changes what is searchable sets `rev` to it.
/// Removed memories keep their revs in `memory_removals` (see `store::retention`):
/// a rev is never given twice.
pub const NEXT_REV: &str = "(SELECT max(coalesce((SELECT max(rev) FROM memories), 0),
    coalesce((SELECT max(rev) FROM memory_removals), 0)) + 1)";

/// Removes the vector of memory `id` (it no longer appears in any search; the
/// text index drops it at its next sync, by `rev`).
pub fn unindex(conn: &Connection, id: i64) -> Result<()> {
    super::vectors::remove(conn, id)
}

/// Columns read into a [`Memory`], in [`from_row`] order.
pub const COLUMNS: &str = "id, collection, session_id, type, content, human_summary, category, \
    confidence, decay_rate, status, superseded_by, context, perception_type, perception_data, \
    perception_metadata, access_count, return_count, last_accessed, created_at, updated_at, content_hash, meta_hash, \
    expires_at, (expires_at <= robotmem_now())";

/// A memory whose stored text no longer matches its checksum.
fn damaged(id: i64, what: &str) -> Error {
    Error::new(
        Status::Corrupt,
        format!("memory #{id} is damaged: {what} (the file was changed outside robotmem or by a storage fault); forget it or restore a backup"),
    )
}

/// Reads a row into a [`Memory`], verifying its content against the stored
/// content hash (SHA-256 of the text; of description, type, data and metadata for a
/// perception): SQLite keeps no checksums of its own, so a flipped bit in a text
/// would otherwise come back as a valid-looking memory.
pub fn from_row(r: &Row) -> Result<Memory> {
    let id: i64 = r.get(0)?;
    let text = |i: usize, what: &str| -> Result<Option<String>> {
        match r.get_ref(i)? {
            ValueRef::Null => Ok(None),
            ValueRef::Text(b) => String::from_utf8(b.to_vec())
                .map(Some)
                .map_err(|_| damaged(id, &format!("its {what} is not valid UTF-8"))),
            _ => Err(damaged(id, &format!("its {what} is not text"))),
        }
    };
    fn known<T>(id: i64, what: &str, v: &str, parse: impl Fn(&str) -> Result<T>) -> Result<T> {
        parse(v).map_err(|_| damaged(id, &format!("its {what} {v:?} is unknown")))
    }
    let kind = known(id, "type", &text(3, "type")?.unwrap_or_default(), MemoryKind::parse)?;
    let status = known(id, "status", &text(9, "status")?.unwrap_or_default(), MemoryStatus::parse)?;
    let content = text(4, "content")?.ok_or_else(|| damaged(id, "its content is missing"))?;
    let ptype =
        text(12, "perception type")?.map(|v| known(id, "perception type", &v, PerceptionType::parse)).transpose()?;
    let perception_data: Option<Vec<u8>> = r.get(13)?;
    let perception_metadata = text(14, "perception metadata")?;
    if let Some(stored) = text(20, "content hash")? {
        let actual = match kind {
            MemoryKind::Fact => fingerprint::fact_hash(&content),
            MemoryKind::Perception => fingerprint::perception_hash(
                &content,
                ptype.unwrap_or_default().as_str(),
                perception_data.as_deref(),
                perception_metadata.as_deref(),
            ),
        };
        if actual != stored {
            return Err(damaged(id, "its content does not match its checksum"));
        }
    }
    // The summary is made from the content (text::summarize, unchanged since
    // schema 1): a stored one that differs was damaged. A new summary rule needs
    // a migration that rewrites the column.
    let human_summary = text(5, "summary")?.unwrap_or_default();
    if human_summary != text::summarize(&content) {
        return Err(damaged(id, "its summary does not match its content"));
    }
    let collection = text(1, "collection")?.unwrap_or_default();
    let session_id = text(2, "session id")?;
    let category = text(6, "category")?.unwrap_or_default();
    let context = text(11, "context")?.unwrap_or_default();
    let created_at = text(18, "creation time")?.unwrap_or_default();
    let expires_at = text(22, "expiry time")?;
    if let Some(stored) = text(21, "checksum of its texts")? {
        if stored != fingerprint::meta_hash(&collection, session_id.as_deref(), &category, &context, &created_at) {
            return Err(damaged(
                id,
                "its context, category, collection, session or creation time does not match its checksum",
            ));
        }
    }
    Ok(Memory {
        id,
        collection,
        session_id,
        kind,
        content,
        human_summary,
        category,
        confidence: r.get(7)?,
        decay_rate: r.get(8)?,
        status,
        superseded_by: r.get(10)?,
        context,
        perception_type: ptype,
        perception_data,
        perception_metadata,
        access_count: r.get(15)?,
        return_count: r.get(16)?,
        last_accessed: text(17, "last access time")?,
        created_at,
        updated_at: text(19, "update time")?.unwrap_or_default(),
        expired: r.get::<_, Option<bool>>(23)?.unwrap_or(false),
        expires_at,
    })
}

/// Sets (or, `None`, clears) when memory `id` expires.
pub fn set_expiry(conn: &Connection, id: i64, expires_at: Option<&str>) -> Result<()> {
    let mut st = conn.prepare_cached("UPDATE memories SET expires_at = ?2 WHERE id = ?1")?;
    history::caused(conn, history::cause::EXPIRY, || Ok(st.execute(params![id, expires_at])?))?;
    Ok(())
}

/// Whether memory `id` exists and is active (reads nothing but its status).
pub fn is_active(conn: &Connection, id: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM memories WHERE id = ?1 AND status = 'active'")?
        .query_row([id], |_| Ok(()))
        .optional()?
        .is_some())
}

pub fn get(conn: &Connection, id: i64) -> Result<Option<Memory>> {
    let sql = format!("SELECT {COLUMNS} FROM memories WHERE id = ?1");
    let mut st = conn.prepare_cached(&sql)?;
    let mut rows = st.query([id])?;
    rows.next()?.map(from_row).transpose()
}

/// The active, unexpired memory of `collection` with this content hash, other than `exclude`.
pub fn find_by_hash(conn: &Connection, collection: &str, hash: &str, exclude: Option<i64>) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached(concat!(
            "SELECT id FROM memories WHERE content_hash = ?1 AND collection = ?2
                   AND status = 'active' AND id != ?3 AND ",
            not_expired!(),
            " LIMIT 1"
        ))?
        .query_row(params![hash, collection, exclude.unwrap_or(0)], |r| r.get(0))
        .optional()?)
}

/// Replaces the automatic tags of a memory (user tags are kept).
pub fn set_auto_tags(conn: &Connection, id: i64, tags: &[String]) -> Result<()> {
    conn.prepare_cached("DELETE FROM memory_tags WHERE memory_id = ?1 AND source = 'auto'")?.execute([id])?;
    // OR IGNORE: a user tag of the same name stays a user tag.
    let mut ins =
        conn.prepare_cached("INSERT OR IGNORE INTO memory_tags (memory_id, tag, source) VALUES (?1, ?2, 'auto')")?;
    for t in tags {
        ins.execute(params![id, t])?;
    }
    Ok(())
}

/// Adds user tags (a user tag replaces an automatic one of the same name).
pub fn add_user_tags(conn: &Connection, id: i64, tags: &[String]) -> Result<()> {
    let mut ins =
        conn.prepare_cached("INSERT OR REPLACE INTO memory_tags (memory_id, tag, source) VALUES (?1, ?2, 'user')")?;
    for t in tags {
        ins.execute(params![id, t])?;
    }
    Ok(())
}

/// Tags of a memory, auto and user, sorted.
pub fn tags(conn: &Connection, id: i64) -> Result<Vec<String>> {
    let mut st = conn.prepare_cached("SELECT tag FROM memory_tags WHERE memory_id = ?1 ORDER BY tag")?;
    let rows = st.query_map([id], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Marks a memory superseded by another and drops it from search.
pub fn supersede(conn: &Connection, id: i64, by: i64, now: &str) -> Result<()> {
    let mut st = conn.prepare_cached(&format!(
        "UPDATE memories SET status = 'superseded', superseded_by = ?2, updated_at = ?3, rev = {NEXT_REV}
         WHERE id = ?1"
    ))?;
    history::caused(conn, history::cause::CONSOLIDATION, || Ok(st.execute(params![id, by, now])?))?;
    unindex(conn, id)
}

/// Applies recorded recall hits: counters, last access time, and the decay anchor.
pub fn touch(conn: &Connection, id: i64, hits: i64, at: &str) -> Result<()> {
    conn.prepare_cached(&format!(
        "UPDATE memories SET access_count = access_count + ?2, return_count = return_count + ?2,
            last_accessed = max(coalesce(last_accessed, ''), ?3), decay_base = confidence,
            decay_next_at = CASE WHEN decay_next_at IS NULL THEN NULL ELSE {} END
         WHERE id = ?1",
        one_day_after("max(coalesce(last_accessed, ''), ?3)")
    ))?
    .execute(params![id, hits, at])?;
    Ok(())
}
