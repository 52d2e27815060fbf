//! Candidate source of recall: memories in relevance order (BM25 from the
//! in-process [`TextIndex`]), or newest first when the query has no word, with the
//! cheap filters applied. Each ranked candidate is looked up by primary key in
//! the caller's read snapshot (which also drops any the snapshot does not hold);
//! the caller stops consuming as soon as no later candidate can matter.

use rusqlite::{params, Connection, OptionalExtension};

use super::Plan;
use crate::error::Result;
use crate::search::columns::Checker;
use crate::search::text::{Admit, Ranking, TextIndex};
use crate::store::memory::not_expired;
use crate::types::SearchMode;

/// A memory that passed the collection, status, expiry, confidence and session filters.
pub struct Candidate {
    pub id: i64,
    pub is_real: bool,
    /// Share of the query's BM25 weight (see [`Ranking::ceiling`]); None in scan mode.
    pub lexical: Option<f64>,
    /// The context JSON, loaded only when `Plan::needs_context()`.
    pub context: Option<String>,
}

/// Calls `f` with each candidate in rank order until it returns `false` or the
/// candidates run out. Returns the search mode used.
pub fn for_each(
    conn: &Connection,
    index: &TextIndex,
    plan: &Plan,
    f: impl FnMut(Candidate) -> Result<bool>,
) -> Result<SearchMode> {
    if plan.words.is_empty() {
        scan(conn, plan, f)?;
        return Ok(SearchMode::Scan);
    }
    for_each_ranked(conn, ranking(conn, index, plan)?, plan, Rows::Full, f)?;
    Ok(SearchMode::Bm25Only)
}

/// The BM25 ranking of the plan's words, on an index synced in this read transaction.
/// With a context filter, only the memories the in-process columns admit.
pub fn ranking<'a>(conn: &Connection, index: &'a TextIndex, plan: &'a Plan) -> Result<Ranking<'a>> {
    index.sync(conn)?;
    let admit = plan.checker(conn)?.map(|c| -> Admit<'a> { Box::new(move |id| c.admits(id)) });
    Ok(index.rank(plan.collection, &plan.words, admit))
}

/// As [`for_each`], over a ranking made by [`ranking`], each candidate read as
/// `rows` says.
pub fn for_each_ranked(
    conn: &Connection,
    ranking: Ranking,
    plan: &Plan,
    rows: Rows,
    mut f: impl FnMut(Candidate) -> Result<bool>,
) -> Result<()> {
    let ceiling = ranking.ceiling();
    let mut lookup = Lookup::with(conn, plan, rows)?;
    for (id, score) in ranking {
        if let Some(c) = lookup.get(id, Some(score / ceiling))? {
            if !f(c)? {
                break;
            }
        }
    }
    Ok(())
}

/// How a list's candidates are read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Rows {
    /// Each candidate's row: every condition, and the context filter on the
    /// stored context.
    Full,
    /// From the recall index (`store::schema::RECALL_INDEX`): the conditions in
    /// SQL without the row; the context filter is left to the columns, which
    /// decide it exactly (the caller checks its results' stored contexts). Only
    /// for a plan [`Lookup::index_allowed`] allows, asked once per recall.
    Index,
}

/// A candidate's conditions from the recall index: the same conditions as the
/// row's, all of them columns of the index, so the row is not read.
const BY_INDEX: &str = concat!(
    "SELECT is_real FROM memories INDEXED BY idx_mem_recall
     WHERE id = ?1 AND collection = ?2 AND status = 'active' AND confidence >= ?3 AND ",
    not_expired!()
);

/// Loads a ranked id as a candidate if it passes the plan's SQL-side filters
/// (and, with a context filter, if the in-process columns say it can satisfy it:
/// the others are skipped without reading their row).
pub struct Lookup<'c, 'p, 'a> {
    st: rusqlite::CachedStatement<'c>,
    plan: &'p Plan<'a>,
    checker: Option<&'p Checker>,
    /// Reads the recall index, not the row (no context: none is checked).
    by_index: bool,
}

impl<'c, 'p, 'a> Lookup<'c, 'p, 'a> {
    /// Reads each candidate's row ([`Rows::Full`]).
    pub fn new(conn: &'c Connection, plan: &'p Plan<'a>) -> Result<Self> {
        Self::with(conn, plan, Rows::Full)
    }

    /// Whether `plan`'s candidates can be read from the recall index: the file has
    /// it, no condition needs the row (a session, spatial_sort's coordinates) and
    /// the columns decide the whole context filter, if any.
    pub fn index_allowed(conn: &Connection, plan: &Plan) -> Result<bool> {
        if plan.session_id.is_some() || plan.exclude_session.is_some() || plan.spatial.is_some() {
            return Ok(false);
        }
        if plan.filter.is_some() && !plan.checker(conn)?.is_some_and(Checker::exact) {
            return Ok(false);
        }
        crate::store::schema::has_recall_index(conn)
    }

    pub fn with(conn: &'c Connection, plan: &'p Plan<'a>, rows: Rows) -> Result<Self> {
        let checker = plan.checker(conn)?;
        let by_index = rows == Rows::Index;
        let st = if by_index {
            conn.prepare_cached(BY_INDEX)?
        } else {
            conn.prepare_cached(concat!(
                "SELECT is_real, CASE WHEN ?5 THEN context END FROM memories
                 WHERE id = ?1 AND collection = ?2 AND status = 'active' AND confidence >= ?3
                   AND (?4 IS NULL OR session_id = ?4) AND (?6 IS NULL OR session_id IS NOT ?6) AND ",
                not_expired!()
            ))?
        };
        Ok(Lookup { st, plan, checker, by_index })
    }

    pub fn get(&mut self, id: i64, lexical: Option<f64>) -> Result<Option<Candidate>> {
        if self.checker.is_some_and(|c| !c.admits(id)) {
            return Ok(None);
        }
        let p = self.plan;
        let hit = if self.by_index {
            self.st.query_row(params![id, p.collection, p.min_confidence], |r| Ok((r.get::<_, bool>(0)?, None)))
        } else {
            self.st.query_row(
                params![id, p.collection, p.min_confidence, p.session_id, p.needs_context(), p.exclude_session],
                |r| Ok((r.get::<_, bool>(0)?, r.get::<_, Option<String>>(1)?)),
            )
        }
        .optional()?;
        Ok(hit.map(|(is_real, context)| Candidate { id, is_real, lexical, context }))
    }
}

/// Newest first, filters in SQL (the collection index gives the order without
/// sorting): the candidates of a query without a searchable word, and the
/// memories that fill a constrained recall. With a context filter, the ids the
/// columns pre-select instead of every row of the collection.
pub fn scan(conn: &Connection, plan: &Plan, mut f: impl FnMut(Candidate) -> Result<bool>) -> Result<()> {
    if let Some(checker) = plan.checker(conn)? {
        // Only the memories that can satisfy the filter, newest first.
        let mut lookup = Lookup::new(conn, plan)?;
        for id in checker.newest_first() {
            if let Some(c) = lookup.get(id, None)? {
                if !f(c)? {
                    break;
                }
            }
        }
        return Ok(());
    }
    let mut st = conn.prepare_cached(concat!(
        "SELECT id, is_real, CASE WHEN ?5 THEN context END FROM memories
         WHERE collection = ?1 AND status = 'active' AND confidence >= ?2
           AND (?3 IS NULL OR session_id = ?3) AND (?4 IS NULL OR session_id IS NOT ?4) AND ",
        not_expired!(),
        " ORDER BY id DESC"
    ))?;
    let mut rows = st.query(params![
        plan.collection,
        plan.min_confidence,
        plan.session_id,
        plan.exclude_session,
        plan.needs_context()
    ])?;
    while let Some(r) = rows.next()? {
        if !f(Candidate { id: r.get(0)?, is_real: r.get(1)?, lexical: None, context: r.get(2)? })? {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_candidate_read_from_the_recall_index_reads_no_row() {
        // The statement searches the index alone.
        let conn = Connection::open_in_memory().unwrap();
        crate::clock::register(&conn, &crate::clock::Clock::system()).unwrap();
        crate::store::vectors::register(&conn).unwrap();
        crate::store::schema::migrate(&conn).unwrap();
        assert!(!crate::store::schema::has_recall_index(&conn).unwrap(), "not part of the versioned schema");
        crate::store::schema::ensure_recall_index(&conn).unwrap();
        assert!(crate::store::schema::has_recall_index(&conn).unwrap());
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {BY_INDEX}"))
            .unwrap()
            .query_map(rusqlite::params![1, "default", 0.0], |r| r.get(3))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(plan.len(), 1, "{plan:?}");
        assert!(plan[0].contains("USING COVERING INDEX idx_mem_recall (id=?"), "{plan:?}");
    }
}
