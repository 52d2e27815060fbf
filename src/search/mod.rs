//! Search stage: the recall pipeline of spec 002.
//!
//! candidates (BM25 over FTS5, or newest-first when the query has no word) →
//! RRF score `1/(k + rank + 1)` → real-world ×1.5 → SQL-side min_confidence and
//! session filters → context_filter → spatial max_distance → top-k (by score, or
//! by distance for spatial_sort) → MaxScore normalisation.
//!
//! Filters are exact: candidates are consumed in rank order until no later
//! candidate could still enter the top-k (a later one scores at most
//! `1.5/(k + rank + 1)`), so when at least n memories match the query and every
//! filter, n are returned — there is no fixed over-fetch that runs dry. With
//! spatial_sort every matching memory is examined and the n nearest are returned
//! (relevance breaks distance ties), so its cost grows with the number of matches.

pub mod filter;

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rusqlite::{params_from_iter, types::Value as Sql, Connection};
use serde_json::Value;

use crate::error::Result;
use crate::types::SearchMode;
pub use filter::{ContextFilter, SpatialSort};

/// Weight of memories whose context says `env.sim_or_real == "real"`.
pub const REAL_WORLD_BOOST: f64 = 1.5;

/// A validated recall, ready to run.
pub struct Plan<'a> {
    pub collection: &'a str,
    /// Query words (see [`crate::text::query_words`]); empty → scan newest first.
    pub words: Vec<String>,
    pub n: usize,
    pub min_confidence: f64,
    pub session_id: Option<&'a str>,
    /// Leave out this session's memories (proactive recall at end_session).
    pub exclude_session: Option<&'a str>,
    pub filter: Option<ContextFilter>,
    pub spatial: Option<SpatialSort>,
    pub rrf_k: f64,
}

/// One ranked result, before the memory row is loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    pub id: i64,
    pub score: f64,
    /// Raw FTS5 bm25 value (lower is better), for fusion and absolute floors.
    pub bm25: Option<f64>,
    pub distance: Option<f64>,
}

/// RRF contribution of a 0-based rank.
pub fn rrf(k: f64, rank: usize) -> f64 {
    1.0 / (k + rank as f64 + 1.0)
}

/// Reciprocal Rank Fusion of ranked id lists: `score(d) = Σ 1/(k + rank_i(d) + 1)`,
/// best first (ties: first seen first).
pub fn rrf_merge(lists: &[&[i64]], k: f64) -> Vec<(i64, f64)> {
    let mut scores: Vec<(i64, f64)> = Vec::new();
    for list in lists {
        for (rank, id) in list.iter().enumerate() {
            match scores.iter_mut().find(|(x, _)| x == id) {
                Some((_, s)) => *s += rrf(k, rank),
                None => scores.push((*id, rrf(k, rank))),
            }
        }
    }
    scores.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(Ordering::Equal));
    scores
}

/// Whether a context says the memory comes from the real world
/// (`env.sim_or_real == "real"`), which earns [`REAL_WORLD_BOOST`].
pub fn is_real_world(ctx: &serde_json::Map<String, Value>) -> bool {
    ctx.get("env").and_then(|e| e.get("sim_or_real")).and_then(Value::as_str) == Some("real")
}

/// Runs the plan; results best first, scores normalised to a maximum of 1.0.
pub fn run(conn: &Connection, plan: &Plan) -> Result<(Vec<Ranked>, SearchMode)> {
    let (sql, args, mode) = candidate_query(plan);
    let mut st = conn.prepare_cached(&sql)?;
    let mut rows = st.query(params_from_iter(args))?;
    let mut ctx_stmt = conn.prepare_cached("SELECT context FROM memories WHERE id = ?1")?;
    let needs_ctx = plan.filter.is_some() || plan.spatial.is_some();
    let spatial = plan.spatial.is_some();

    let mut kept: BinaryHeap<Worst> = BinaryHeap::with_capacity(plan.n + 1);
    let mut rank = 0usize;
    while let Some(r) = rows.next()? {
        let base = rrf(plan.rrf_k, rank);
        rank += 1;
        if !spatial && kept.len() == plan.n && kept.peek().is_some_and(|w| w.0.score >= base * REAL_WORLD_BOOST) {
            break; // no later candidate can enter the top n
        }
        let id: i64 = r.get(0)?;
        let is_real: bool = r.get(1)?;
        let bm25: Option<f64> = r.get(2)?;
        let mut distance = None;
        if needs_ctx {
            let text: String = ctx_stmt.query_row([id], |c| c.get(0))?;
            let ctx: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            if plan.filter.as_ref().is_some_and(|f| !f.matches(&ctx)) {
                continue;
            }
            if let Some(s) = &plan.spatial {
                let d = s.distance(&ctx);
                if !s.within(d) {
                    continue;
                }
                distance = Some(d);
            }
        }
        let score = if is_real { base * REAL_WORLD_BOOST } else { base };
        kept.push(Worst(Ranked { id, score, bm25, distance }, spatial));
        if kept.len() > plan.n {
            kept.pop();
        }
    }
    let mut out: Vec<Ranked> = kept.into_sorted_vec().into_iter().map(|w| w.0).collect();
    let max = out.iter().map(|r| r.score).fold(0.0, f64::max);
    if max > 0.0 {
        out.iter_mut().for_each(|r| r.score /= max);
    }
    Ok((out, mode))
}

/// `Greater` when `a` should come before `b`: nearer first with spatial_sort, then
/// higher score, then newer.
fn quality(a: &Ranked, b: &Ranked, spatial: bool) -> Ordering {
    let by_score = a.score.partial_cmp(&b.score).unwrap_or(Ordering::Equal).then(a.id.cmp(&b.id));
    if spatial {
        b.distance.partial_cmp(&a.distance).unwrap_or(Ordering::Equal).then(by_score)
    } else {
        by_score
    }
}

/// Heap entry ordered so the heap's top is the *worst* kept result, and a sorted
/// vector of them runs best first.
struct Worst(Ranked, bool);
impl PartialEq for Worst {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Worst {}
impl PartialOrd for Worst {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Worst {
    fn cmp(&self, o: &Self) -> Ordering {
        quality(&o.0, &self.0, self.1)
    }
}

/// The ranked candidate statement: FTS5 bm25 order, or newest first for a scan.
/// Only the conditions in use are emitted; every value is a bound parameter.
fn candidate_query(plan: &Plan) -> (String, Vec<Sql>, SearchMode) {
    let mut args: Vec<Sql> = Vec::new();
    let mut conds = String::new();
    let fts = crate::text::fts_or_query(&plan.words);
    let (select, order, mode) = match &fts {
        Some(q) => {
            args.push(Sql::Text(q.clone()));
            conds.push_str("memories_fts MATCH ?1 AND ");
            (
                "SELECT m.id, m.is_real, bm25(memories_fts, 1.0, 0.5, 0.5, 0.5) AS s \
                 FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid",
                "s, m.id DESC",
                SearchMode::Bm25Only,
            )
        }
        None => ("SELECT m.id, m.is_real, NULL FROM memories m", "m.id DESC", SearchMode::Scan),
    };
    let mut bind = |cond: &str, v: Sql| {
        args.push(v);
        conds.push_str(&cond.replace('?', &format!("?{}", args.len())));
        conds.push_str(" AND ");
    };
    bind("m.collection = ?", Sql::Text(plan.collection.to_string()));
    bind("m.confidence >= ?", Sql::Real(plan.min_confidence));
    if let Some(s) = plan.session_id {
        bind("m.session_id = ?", Sql::Text(s.to_string()));
    }
    if let Some(s) = plan.exclude_session {
        bind("m.session_id IS NOT ?", Sql::Text(s.to_string()));
    }
    let sql = format!("{select} WHERE {conds}m.status = 'active' ORDER BY {order}");
    (sql, args, mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrf_matches_spec() {
        assert_eq!(rrf(60.0, 0), 1.0 / 61.0);
        assert_eq!(rrf(60.0, 1), 1.0 / 62.0);
    }
}
