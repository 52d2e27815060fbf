//! Reading a file page by page and in aggregate, for people looking into it
//! (`Db::list`, `stats`, `sessions`, `doctor`): every list is cut in SQL, and
//! aggregates read narrow columns, so nothing holds all memories.

use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection, OptionalExtension};

use super::memory::{self, not_expired, COLUMNS};
use crate::error::Result;
use crate::types::*;

/// Matches counted at most by a filtered list (see [`list`]).
const COUNT_CAP: i64 = 10_000;

/// The WHERE clause and parameters of a list request (validated by the caller).
fn filters(
    req: &ListRequest,
    collection: Option<&str>,
    session: Option<&str>,
    since: Option<&str>,
) -> (String, Vec<Value>) {
    let mut clauses: Vec<&str> = Vec::new();
    let mut args: Vec<Value> = Vec::new();
    let mut add = |clauses: &mut Vec<&str>, clause: &'static str, v: Value| {
        clauses.push(clause);
        args.push(v);
    };
    if let Some(c) = collection {
        add(&mut clauses, "collection = ?", Value::Text(c.to_string()));
    }
    // A literal, not a parameter: `status = 'active'` lets SQLite use the partial
    // index of active memories (a count of 100k takes ~1 ms instead of a table scan).
    match req.status {
        // An expired memory is listed only when every status is.
        Some(MemoryStatus::Active) => clauses.push(concat!("status = 'active' AND ", not_expired!())),
        Some(MemoryStatus::Superseded) => clauses.push("status = 'superseded'"),
        Some(MemoryStatus::Invalidated) => clauses.push("status = 'invalidated'"),
        None => {}
    }
    if let Some(k) = req.kind {
        add(&mut clauses, "type = ?", Value::Text(k.as_str().to_string()));
    }
    if let Some(c) = req.category {
        add(&mut clauses, "category = ?", Value::Text(c.to_string()));
    }
    if let Some(s) = session {
        add(&mut clauses, "session_id = ?", Value::Text(s.to_string()));
    }
    if req.min_confidence > 0.0 {
        add(&mut clauses, "confidence >= ?", Value::Real(req.min_confidence));
    }
    if let Some(t) = since {
        add(&mut clauses, "created_at >= ?", Value::Text(t.to_string()));
    }
    let clause = if clauses.is_empty() { String::new() } else { format!(" WHERE {}", clauses.join(" AND ")) };
    (clause, args)
}

/// One page of memories passing the filters, and how many pass.
pub fn list(
    conn: &Connection,
    req: &ListRequest,
    collection: Option<&str>,
    session: Option<&str>,
    since: Option<&str>,
) -> Result<MemoryPage> {
    let (clause, args) = filters(req, collection, session, since);
    let order = if req.oldest_first { "ASC" } else { "DESC" };
    let sql =
        format!("SELECT {COLUMNS} FROM memories{clause} ORDER BY id {order} LIMIT {} OFFSET {}", req.limit, req.offset);
    let mut st = conn.prepare_cached(&sql)?;
    let mut rows = st.query(params_from_iter(args.iter()))?;
    let mut memories = Vec::with_capacity(req.limit as usize);
    while let Some(r) = rows.next()? {
        memories.push(memory::from_row(r)?);
    }
    // Exact when an index answers it (active memories, of one collection or all;
    // every memory); otherwise counted up to COUNT_CAP matches, so a filter on an
    // unindexed column never makes a page read the whole table twice.
    let indexed = req.kind.is_none()
        && req.category.is_none()
        && session.is_none()
        && req.min_confidence <= 0.0
        && since.is_none()
        && (req.status == Some(MemoryStatus::Active) || (req.status.is_none() && collection.is_none()));
    let sql = if indexed {
        format!("SELECT count(*) FROM memories{clause}")
    } else {
        format!("SELECT count(*) FROM (SELECT 1 FROM memories{clause} LIMIT {})", COUNT_CAP + 1)
    };
    let counted: i64 = conn.prepare_cached(&sql)?.query_row(params_from_iter(args.iter()), |r| r.get(0))?;
    let total = if indexed { counted } else { counted.min(COUNT_CAP) };
    Ok(MemoryPage { memories, total, total_exact: indexed || counted <= COUNT_CAP })
}

fn bump(v: &mut Vec<(String, i64)>, key: &str) {
    match v.binary_search_by(|(k, _)| k.as_str().cmp(key)) {
        Ok(i) => v[i].1 += 1,
        Err(i) => v.insert(i, (key.to_string(), 1)),
    }
}

/// A `robotmem_meta` value read as an integer (0 when absent).
pub fn meta_count(conn: &Connection, key: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT CAST(value AS INTEGER) FROM robotmem_meta WHERE key = ?1")?
        .query_row([key], |r| r.get::<_, i64>(0))
        .optional()?
        .unwrap_or(0))
}

/// Everything of [`Stats`] but the file sizes and recall counters, in one pass
/// over narrow columns of every memory.
pub fn stats(conn: &Connection) -> Result<Stats> {
    let mut s = Stats::default();
    let mut days: Vec<(String, i64)> = Vec::new();
    let mut st = conn.prepare_cached(concat!(
        "SELECT CASE WHEN status = 'active' AND NOT ",
        not_expired!(),
        " THEN 'expired' ELSE status END,
                    type, category, collection, perception_type, substr(created_at, 1, 10), confidence FROM memories"
    ))?;
    let mut rows = st.query([])?;
    let mut collections: Vec<CollectionCount> = Vec::new();
    while let Some(r) = rows.next()? {
        let status = r.get_ref(0)?.as_str().unwrap_or("");
        let active = status == "active";
        s.memories += 1;
        match status {
            "active" => s.active += 1,
            "superseded" => s.superseded += 1,
            "expired" => s.expired += 1,
            _ => s.invalidated += 1,
        }
        let collection = r.get_ref(3)?.as_str().unwrap_or("");
        let at = match collections.binary_search_by(|c| c.collection.as_str().cmp(collection)) {
            Ok(i) => i,
            Err(i) => {
                collections.insert(i, CollectionCount { collection: collection.to_string(), active: 0, total: 0 });
                i
            }
        };
        collections[at].total += 1;
        bump(&mut days, r.get_ref(5)?.as_str().unwrap_or(""));
        if !active {
            continue;
        }
        collections[at].active += 1;
        bump(&mut s.by_type, r.get_ref(1)?.as_str().unwrap_or(""));
        bump(&mut s.by_category, r.get_ref(2)?.as_str().unwrap_or(""));
        if let Ok(Some(p)) = r.get_ref(4)?.as_str_or_null() {
            bump(&mut s.by_perception, p);
        }
        let c: f64 = r.get(6)?;
        s.confidence[((c * 10.0).floor() as i64).clamp(0, 9) as usize] += 1;
    }
    s.collections = collections;
    let keep = days.len().saturating_sub(30);
    s.per_day = days.split_off(keep);
    let (sessions, active): (i64, i64) = conn
        .prepare_cached("SELECT count(*), coalesce(sum(status = 'active'), 0) FROM sessions")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    s.sessions = sessions;
    s.active_sessions = active;
    Ok(s)
}

/// A page of sessions, newest first, with memory counts and latest outcomes.
pub fn sessions(conn: &Connection, offset: u64, limit: u32) -> Result<SessionPage> {
    let mut st = conn.prepare_cached(
        "SELECT s.external_id, s.collection, s.status, s.context, s.created_at, s.ended_at,
                (SELECT o.score FROM session_outcomes o WHERE o.session_id = s.external_id ORDER BY o.id DESC LIMIT 1),
                (SELECT count(*) FROM memories m WHERE m.session_id = s.external_id)
         FROM sessions s ORDER BY s.id DESC LIMIT ?1 OFFSET ?2",
    )?;
    let sessions = st
        .query_map(rusqlite::params![limit, offset as i64], |r| {
            Ok(SessionInfo {
                session_id: r.get(0)?,
                collection: r.get(1)?,
                status: r.get(2)?,
                context: r.get(3)?,
                created_at: r.get(4)?,
                ended_at: r.get(5)?,
                outcome_score: r.get(6)?,
                memory_count: r.get(7)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let total: i64 = conn.prepare_cached("SELECT count(*) FROM sessions")?.query_row([], |r| r.get(0))?;
    Ok(SessionPage { sessions, total })
}

/// SQLite's `quick_check` (or the slower `integrity_check`, which also compares
/// every index with its table): the problems found, empty when the file is sound.
pub fn check_file(conn: &Connection, full: bool) -> Result<Vec<String>> {
    let pragma = if full { "PRAGMA integrity_check(20)" } else { "PRAGMA quick_check(20)" };
    let mut st = conn.prepare(pragma)?;
    let found = st.query_map([], |r| r.get::<_, String>(0))?.collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(found.into_iter().filter(|l| l != "ok").collect())
}

/// Ids of memories whose text no longer matches its checksum (at most `max`),
/// and how many memories were read.
pub fn damaged(conn: &Connection, max: usize) -> Result<(Vec<i64>, i64)> {
    let mut st = conn.prepare(&format!("SELECT {COLUMNS} FROM memories"))?;
    let mut rows = st.query([])?;
    let (mut bad, mut read) = (Vec::new(), 0i64);
    while let Some(r) = rows.next()? {
        read += 1;
        if let Err(e) = memory::from_row(r) {
            if e.status == crate::error::Status::Corrupt && bad.len() < max {
                bad.push(r.get(0)?);
            } else if e.status != crate::error::Status::Corrupt {
                return Err(e);
            }
        }
    }
    Ok((bad, read))
}

/// The newest active memories of failures among the last `window` memories: a
/// lesson category (postmortem, gotcha, root_cause) or a context whose
/// `task.success` is false. Reads at most `window` rows (a range of ids).
pub fn recent_failures(conn: &Connection, n: u32, window: i64) -> Result<Vec<Memory>> {
    let live = not_expired!();
    let sql = format!(
        "SELECT {COLUMNS} FROM memories
         WHERE id > (SELECT coalesce(max(id), 0) FROM memories) - ?1 AND status = 'active' AND {live}
           AND (category IN ('postmortem', 'gotcha', 'root_cause')
                OR (json_valid(context) AND json_extract(context, '$.task.success') = 0
                    AND json_type(context, '$.task.success') = 'false'))
         ORDER BY id DESC LIMIT ?2"
    );
    let mut st = conn.prepare_cached(&sql)?;
    let mut rows = st.query(rusqlite::params![window, n])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        out.push(memory::from_row(r)?);
    }
    Ok(out)
}

/// Collections with active memories and their counts, by name (an index-only scan).
pub fn active_collections(conn: &Connection) -> Result<Vec<(String, i64)>> {
    let mut st = conn.prepare_cached(
        "SELECT collection, count(*) FROM memories INDEXED BY idx_mem_active WHERE status = 'active' GROUP BY collection ORDER BY collection",
    )?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Active memories, and those holding a vector.
pub fn active_and_embedded(conn: &Connection) -> Result<(i64, i64)> {
    Ok(conn
        .prepare_cached("SELECT count(*), coalesce(sum(embedded = 1), 0) FROM memories INDEXED BY idx_mem_active WHERE status = 'active'")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?)
}
