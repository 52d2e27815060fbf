//! What the per-path in-process indexes share — the coordinates of spatial_sort
//! ([`super::points`]) and the values of context_filter ([`super::columns`]): each
//! holds, per dot path asked for, something read from every active memory's
//! context, and follows the memories table by `rev` as the text index does.

use std::collections::HashMap;

use rusqlite::{params, Connection};
use serde_json::Value;

use super::filter::{DotPath, LazyContext};
use crate::error::Result;

/// The newest `rev` of the memories table in the snapshot of `conn`.
pub fn head(conn: &Connection) -> Result<i64> {
    Ok(conn.prepare_cached("SELECT coalesce(max(rev), 0) FROM memories")?.query_row([], |r| r.get(0))?)
}

/// The rev a path's entry must be synced from: `None` when the entry (its rev
/// `held`) is current at `head`, -1 when there is none yet (a full build).
pub fn sync_from(held: Option<i64>, head: i64) -> Option<i64> {
    match held {
        Some(rev) if rev >= head => None,
        Some(rev) => Some(rev),
        None => Some(-1),
    }
}

/// Before a new path's entry is made: drops the least recently `used` one when
/// `max` are held.
pub fn make_room<V>(entries: &mut HashMap<DotPath, V>, path: &DotPath, max: usize, used: impl Fn(&V) -> u64) {
    if entries.contains_key(path) || entries.len() < max {
        return;
    }
    if let Some(old) = entries.iter().min_by_key(|(_, v)| used(v)).map(|(k, _)| k.clone()) {
        entries.remove(&old);
    }
}

/// Every memory whose rev is in (from, head]: `f(id, Some((collection, value)))`
/// for an active one with a value at `path`, `f(id, None)` for the others (gone,
/// no longer active, or without the path).
pub fn changed(
    conn: &Connection,
    path: &DotPath,
    from: i64,
    head: i64,
    mut f: impl FnMut(i64, Option<(&str, Value)>),
) -> Result<()> {
    let mut st = conn.prepare_cached(
        "SELECT id, collection, status = 'active', context FROM memories WHERE rev > ?1 AND rev <= ?2",
    )?;
    let mut rows = st.query(params![from, head])?;
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        let mut value = None;
        if r.get::<_, bool>(2)? {
            let text = String::from_utf8_lossy(r.get_ref(3)?.as_bytes()?);
            if let Some(v) = LazyContext::new(&text).lookup(path) {
                value = Some((r.get_ref(1)?.as_str()?, v));
            }
        }
        f(id, value);
    }
    Ok(())
}

/// Collection names as small numbers.
pub fn intern(collections: &mut HashMap<String, u32>, name: &str) -> u32 {
    if let Some(&c) = collections.get(name) {
        return c;
    }
    let next = collections.len() as u32;
    collections.insert(name.to_string(), next);
    next
}
