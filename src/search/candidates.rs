//! Candidate source of recall: memories in relevance order (BM25 through FTS5),
//! or newest first when the query has no word, with the cheap filters applied.
//!
//! BM25 ranking runs inside FTS5 only (`ORDER BY rank LIMIT/OFFSET`), in pages;
//! each candidate is then looked up by primary key. The caller stops consuming as
//! soon as no later candidate can matter, so a query matching thousands of
//! memories joins only the few it needs. (Joining every match and sorting the
//! join, the obvious SQL, costs ~2.5× more at 10k memories.)

use rusqlite::{params, Connection, OptionalExtension};

use super::Plan;
use crate::error::Result;
use crate::types::SearchMode;

/// First page of FTS5 results; later pages double.
const FIRST_PAGE: usize = 64;

/// A memory that passed the collection, status, confidence and session filters.
pub struct Candidate {
    pub id: i64,
    pub is_real: bool,
    /// FTS5 bm25 value (lower is better); None in scan mode.
    pub bm25: Option<f64>,
    /// The context JSON, loaded only when `Plan::needs_context()`.
    pub context: Option<String>,
}

/// Calls `f` with each candidate in rank order until it returns `false` or the
/// candidates run out. Returns the search mode used.
pub fn for_each(conn: &Connection, plan: &Plan, mut f: impl FnMut(Candidate) -> Result<bool>) -> Result<SearchMode> {
    let Some(query) = crate::text::fts_or_query(&plan.words) else {
        scan(conn, plan, f)?;
        return Ok(SearchMode::Scan);
    };
    let mut fts = conn.prepare_cached(
        "SELECT rowid, rank FROM memories_fts WHERE memories_fts MATCH ?1 ORDER BY rank LIMIT ?2 OFFSET ?3",
    )?;
    let mut row = conn.prepare_cached(
        "SELECT is_real, CASE WHEN ?5 THEN context END FROM memories
         WHERE id = ?1 AND collection = ?2 AND status = 'active' AND confidence >= ?3
           AND (?4 IS NULL OR session_id = ?4) AND (?6 IS NULL OR session_id IS NOT ?6)",
    )?;
    let (mut offset, mut page) = (0usize, FIRST_PAGE.max(plan.n * 2 + 32));
    loop {
        let ids: Vec<(i64, f64)> = fts
            .query_map(params![query, page as i64, offset as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for &(id, bm25) in &ids {
            let hit = row
                .query_row(
                    params![id, plan.collection, plan.min_confidence, plan.session_id, plan.needs_context(), plan.exclude_session],
                    |r| Ok((r.get::<_, bool>(0)?, r.get::<_, Option<String>>(1)?)),
                )
                .optional()?;
            if let Some((is_real, context)) = hit {
                if !f(Candidate { id, is_real, bm25: Some(bm25), context })? {
                    return Ok(SearchMode::Bm25Only);
                }
            }
        }
        if ids.len() < page {
            return Ok(SearchMode::Bm25Only);
        }
        offset += page;
        page *= 2;
    }
}

/// No searchable word: newest first, filters in SQL (the collection index gives
/// the order without sorting).
fn scan(conn: &Connection, plan: &Plan, mut f: impl FnMut(Candidate) -> Result<bool>) -> Result<()> {
    let mut st = conn.prepare_cached(
        "SELECT id, is_real, CASE WHEN ?5 THEN context END FROM memories
         WHERE collection = ?1 AND status = 'active' AND confidence >= ?2
           AND (?3 IS NULL OR session_id = ?3) AND (?4 IS NULL OR session_id IS NOT ?4)
         ORDER BY id DESC",
    )?;
    let mut rows = st.query(params![
        plan.collection,
        plan.min_confidence,
        plan.session_id,
        plan.exclude_session,
        plan.needs_context()
    ])?;
    while let Some(r) = rows.next()? {
        if !f(Candidate { id: r.get(0)?, is_real: r.get(1)?, bm25: None, context: r.get(2)? })? {
            break;
        }
    }
    Ok(())
}
