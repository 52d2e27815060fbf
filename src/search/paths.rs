//! What the per-path in-process indexes share — the coordinates of spatial_sort
//! ([`super::spatial`]) and the values of context_filter ([`super::columns`]): each
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

/// Before entries for `wanted` are made: drops the least recently `used` entries
/// that are not wanted until all of `wanted` fit within `max`.
pub fn make_room<V>(entries: &mut HashMap<DotPath, V>, wanted: &[&DotPath], max: usize, used: impl Fn(&V) -> u64) {
    let missing = wanted.iter().filter(|p| !entries.contains_key(**p)).count();
    while entries.len() + missing > max {
        let old =
            entries.iter().filter(|(k, _)| !wanted.contains(k)).min_by_key(|(_, v)| used(v)).map(|(k, _)| k.clone());
        match old {
            Some(old) => entries.remove(&old),
            None => return,
        };
    }
}

/// One pass over the memories changed since the oldest of `todo`'s revs: for
/// each path `todo[k] = (path, from)` and each memory whose rev is in (from, head],
/// `f(k, id, Some((collection, value)))` for an active one with a value at the
/// path, `f(k, id, None)` for the others (gone, no longer active, or without the
/// path). Each context is parsed once for all the paths.
pub fn changed(
    conn: &Connection,
    todo: &[(&DotPath, i64)],
    head: i64,
    mut f: impl FnMut(usize, i64, Option<(&str, Value)>),
) -> Result<()> {
    let Some(from) = todo.iter().map(|t| t.1).min() else { return Ok(()) };
    let mut st = conn.prepare_cached(
        "SELECT id, collection, status = 'active', context, rev FROM memories WHERE rev > ?1 AND rev <= ?2
         UNION ALL SELECT id, '', 0, NULL, rev FROM memory_removals WHERE rev > ?1 AND rev <= ?2",
    )?;
    let mut rows = st.query(params![from, head])?;
    while let Some(r) = rows.next()? {
        let (id, rev): (i64, i64) = (r.get(0)?, r.get(4)?);
        let active: bool = r.get(2)?;
        let text = if active { Some(String::from_utf8_lossy(r.get_ref(3)?.as_bytes()?)) } else { None };
        let ctx = text.as_deref().map(LazyContext::new);
        for (k, &(path, path_from)) in todo.iter().enumerate() {
            if rev <= path_from {
                continue;
            }
            match ctx.as_ref().and_then(|c| c.lookup(path)) {
                Some(v) => f(k, id, Some((r.get_ref(1)?.as_str()?, v))),
                None => f(k, id, None),
            }
        }
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

/// Collection names by number (the inverse of [`intern`]).
pub fn names(collections: &HashMap<String, u32>) -> Vec<&str> {
    let mut names = vec![""; collections.len()];
    for (name, &c) in collections {
        names[c as usize] = name;
    }
    names
}
