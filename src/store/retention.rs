//! Hard deletion of memories (budget eviction and purge), in SQL.
//!
//! A removed memory leaves no row in `memories`, so the in-process indexes,
//! which follow that table by `rev`, could not see it go: each removal is
//! recorded in `memory_removals` with a `rev` of its own, which the indexes read
//! with the changed rows (see `search::text`, `search::paths`, `store::vectors`).
//! [`NEXT_REV`] counts those revs too, so a rev is never given twice, and every
//! removal leaves a memory whose rev is at least the removal's, so the head an
//! index compares with (`max(rev)` of `memories`) covers it (see [`remove`]).
//! A purge drops the records every stored index copy reflects ([`prune_removals`]).

use rusqlite::{params, Connection, OptionalExtension};

use super::memory::NEXT_REV;
use super::vectors;
use crate::error::Result;

/// Most rows one purge transaction removes: the vector index applies up to 128
/// changed rows one by one (beyond, it reloads every vector), and a short
/// transaction keeps other writers' waits short.
pub(crate) const PURGE_BATCH: usize = 100;

/// SQL of "the stored time `now`" on the handle's clock (what `not_expired!` compares with).
const NOW: &str = "robotmem_now()";

/// Memories stored in `collection` (every collection: `None`), whatever their status.
pub(crate) fn count(conn: &Connection, collection: Option<&str>) -> Result<u64> {
    let n: i64 = match collection {
        None => conn.prepare_cached("SELECT count(*) FROM memories")?.query_row([], |r| r.get(0))?,
        Some(c) => {
            conn.prepare_cached("SELECT count(*) FROM memories WHERE collection = ?1")?.query_row([c], |r| r.get(0))?
        }
    };
    Ok(n as u64)
}

/// Up to `n` memories of `collection` (every collection: `None`) to evict, in the
/// documented order: expired first (earliest expiry first), then forgotten or
/// superseded (earliest change first), then the active ones of lowest value,
/// confidence × recency × (1 + access count), recency being 1 / (1 + days since
/// the memory was last recalled, or learned). Ties: oldest id first. Protected
/// categories (constraint, gotcha, postmortem) only with `protected`.
pub(crate) fn victims(conn: &Connection, collection: Option<&str>, n: u64, protected: bool) -> Result<Vec<i64>> {
    // One tier at a time, each its own query: the cheap ones (the expiry index, a
    // scan without sorting) usually find enough, and the value of every active
    // memory is computed only when they do not.
    let tiers = [
        format!("expires_at IS NOT NULL AND expires_at <= {NOW} ORDER BY expires_at, id"),
        format!(
            "status != 'active' AND (expires_at IS NULL OR expires_at > {NOW})
             ORDER BY coalesce(invalidated_at, updated_at), id"
        ),
        format!(
            "status = 'active' AND (expires_at IS NULL OR expires_at > {NOW})
             ORDER BY confidence * (1 + access_count)
                      / (1 + max(0, julianday({NOW}) - julianday(coalesce(last_accessed, created_at)))), id"
        ),
    ];
    let mut out = Vec::new();
    for tier in tiers {
        let left = n - out.len() as u64;
        if left == 0 {
            break;
        }
        let sql = format!(
            "SELECT id FROM memories
             WHERE (?1 IS NULL OR collection = ?1)
               AND (?2 OR category NOT IN ('constraint', 'gotcha', 'postmortem')) AND {tier}
             LIMIT ?3"
        );
        let ids = conn
            .prepare_cached(&sql)?
            .query_map(params![collection, protected, left as i64], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<i64>>>()?;
        out.extend(ids);
    }
    Ok(out)
}

/// Up to `limit` memories a purge removes: forgotten or superseded at or before
/// `cutoff` (a stored time), or expired then, oldest first.
pub(crate) fn purgeable(conn: &Connection, cutoff: &str, limit: usize) -> Result<Vec<i64>> {
    let sql = "SELECT id FROM memories
         WHERE (status != 'active' AND coalesce(invalidated_at, updated_at) <= ?1)
            OR (expires_at IS NOT NULL AND expires_at <= ?1)
         ORDER BY id LIMIT ?2";
    Ok(conn
        .prepare_cached(sql)?
        .query_map(params![cutoff, limit as i64], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?)
}

/// The stored time `older_than_s` seconds before `now`.
pub(crate) fn cutoff(older_than_s: f64, now: chrono::DateTime<chrono::Utc>) -> String {
    crate::clock::stamp(now - chrono::Duration::milliseconds((older_than_s * 1000.0).round() as i64))
}

/// The memory that carries the rev of removing `ids` (see [`remove`]): the one
/// with the newest rev among those that stay. When none stays, the newest of
/// `ids` is taken out of them and stays (a later purge removes it).
pub(crate) fn keeper(conn: &Connection, ids: &mut Vec<i64>) -> Result<Option<i64>> {
    let newest = conn
        .prepare_cached("SELECT id FROM memories ORDER BY rev DESC LIMIT ?1")?
        .query_map([ids.len() as i64 + 1], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    let Some(&first) = newest.first() else { return Ok(None) };
    match newest.iter().find(|id| !ids.contains(id)) {
        Some(&k) => Ok(Some(k)),
        None => {
            ids.retain(|&id| id != first);
            Ok(Some(first))
        }
    }
}

/// Hard-deletes memories `ids` (row, tags, vector) inside the caller's write
/// transaction and records each removal with one new `rev`. `keeper`: a memory
/// that stays, given that rev, so the indexes' head covers the removals (a write
/// that stores a memory next passes `None`: the new row's rev is later anyway).
/// A removed memory the fleet knows is remembered by its global id and version in
/// `sync_remote` (held by no memory), so an older version received later stays
/// out and a newer one is stored as a new memory.
pub(crate) fn remove(conn: &Connection, ids: &[i64], keeper: Option<i64>) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let rev: i64 = conn.prepare_cached(&format!("SELECT {NEXT_REV}"))?.query_row([], |r| r.get(0))?;
    let vec_table = vectors::table_exists(conn)?;
    let claimed = conn
        .prepare_cached("SELECT 1 FROM robotmem_meta WHERE key = 'sync.robot'")?
        .query_row([], |_| Ok(()))
        .optional()?
        .is_some();
    for &id in ids {
        if vec_table {
            conn.prepare_cached("DELETE FROM memory_vec WHERE rowid = ?1")?.execute([id])?;
        }
        conn.prepare_cached("DELETE FROM memory_tags WHERE memory_id = ?1")?.execute([id])?;
        conn.prepare_cached("UPDATE sync_remote SET memory_id = NULL WHERE memory_id = ?1")?.execute([id])?;
        if claimed {
            conn.prepare_cached(
                "INSERT OR IGNORE INTO sync_remote (global_id, memory_id, origin, writer, version, deleted)
                 SELECT global_id, NULL, origin, writer, version, 0 FROM memories
                 WHERE id = ?1 AND global_id IS NOT NULL",
            )?
            .execute([id])?;
        }
        conn.prepare_cached("DELETE FROM memories WHERE id = ?1")?.execute([id])?;
        conn.prepare_cached("INSERT OR REPLACE INTO memory_removals (id, rev) VALUES (?1, ?2)")?
            .execute(params![id, rev])?;
    }
    if let Some(k) = keeper {
        conn.prepare_cached("UPDATE memories SET rev = ?2 WHERE id = ?1")?.execute(params![k, rev])?;
    }
    Ok(())
}

/// Drops the records of removals every index copy stored in the file already
/// reflects (`rev` at or below the oldest copy's): an index loaded from a copy
/// reads only the records after it, one built from the rows needs none. Nothing
/// while no copy is stored. A handle of another process whose index is older than
/// every copy then keeps the removed ids in its index: recall still never returns
/// them (each candidate is read from its row, which is gone), they only take a
/// place in its ranking until that handle is reopened. Returns the records dropped.
pub(crate) fn prune_removals(conn: &Connection) -> Result<u64> {
    let n = conn
        .prepare_cached("DELETE FROM memory_removals WHERE rev <= (SELECT min(rev) FROM index_snapshots)")?
        .execute([])?;
    Ok(n as u64)
}

/// Returns up to `pages` free pages to the file system (a file made with
/// `auto_vacuum = INCREMENTAL`; others keep their free pages for reuse).
/// Returns the pages freed.
pub(crate) fn vacuum_step(conn: &Connection, pages: u32) -> Result<u64> {
    let before = free_pages(conn)?;
    // Each step of the statement frees one page: run it to its end.
    let mut st = conn.prepare(&format!("PRAGMA incremental_vacuum({pages})"))?;
    let mut rows = st.query([])?;
    while rows.next()?.is_some() {}
    Ok(before.saturating_sub(free_pages(conn)?))
}

/// Pages on the free list.
pub(crate) fn free_pages(conn: &Connection) -> Result<u64> {
    Ok(conn.query_row("PRAGMA freelist_count", [], |r| r.get::<_, i64>(0))? as u64)
}

/// Bytes the file's live pages take: (page count − free pages) × page size.
pub(crate) fn live_bytes(conn: &Connection) -> Result<u64> {
    let (pages, size): (i64, i64) = conn.query_row(
        "SELECT (SELECT page_count FROM pragma_page_count()), (SELECT page_size FROM pragma_page_size())",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok((pages as u64).saturating_sub(free_pages(conn)?) * size as u64)
}

/// Whether the file returns freed pages to the file system (`auto_vacuum = INCREMENTAL`).
pub(crate) fn incremental(conn: &Connection) -> Result<bool> {
    Ok(conn.query_row("PRAGMA auto_vacuum", [], |r| r.get::<_, i64>(0))? == 2)
}
