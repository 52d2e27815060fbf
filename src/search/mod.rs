//! Search stage: the recall pipeline of spec 002.
//!
//! candidates (BM25 from the in-process index, or newest first when the query has
//! no word) →
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

pub mod candidates;
pub mod filter;
pub mod hybrid;
pub mod index;
pub mod quant;
pub mod vindex;

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rusqlite::Connection;
use serde_json::Value;

use crate::error::Result;
use crate::types::SearchMode;
pub use filter::{ContextFilter, LazyContext, SpatialSort};

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
    /// Raw BM25 score (higher is better), for fusion and absolute floors.
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

impl Plan<'_> {
    /// Whether candidates need their context JSON (for context_filter / spatial_sort).
    pub fn needs_context(&self) -> bool {
        self.filter.is_some() || self.spatial.is_some()
    }
}

/// Runs the plan; results best first, scores normalised to a maximum of 1.0.
pub fn run(conn: &Connection, index: &index::TextIndex, plan: &Plan) -> Result<(Vec<Ranked>, SearchMode)> {
    let spatial = plan.spatial.is_some();
    let mut kept: BinaryHeap<Worst> = BinaryHeap::with_capacity(plan.n + 1);
    let mut rank = 0usize;
    let mode = candidates::for_each(conn, index, plan, |c| {
        let base = rrf(plan.rrf_k, rank);
        rank += 1;
        if !spatial && kept.len() == plan.n && kept.peek().is_some_and(|w| w.0.score >= base * REAL_WORLD_BOOST) {
            return Ok(false); // no later candidate can enter the top n
        }
        let Some(distance) = admit(plan, &c) else { return Ok(true) };
        let score = if c.is_real { base * REAL_WORLD_BOOST } else { base };
        kept.push(Worst(Ranked { id: c.id, score, bm25: c.bm25, distance }, spatial));
        if kept.len() > plan.n {
            kept.pop();
        }
        Ok(true)
    })?;
    let mut out: Vec<Ranked> = kept.into_sorted_vec().into_iter().map(|w| w.0).collect();
    normalise(&mut out);
    Ok((out, mode))
}

/// Applies context_filter and spatial max_distance to a candidate: `None` if it
/// is filtered out, else its spatial distance (`Some(None)` without spatial_sort).
pub(crate) fn admit(plan: &Plan, c: &candidates::Candidate) -> Option<Option<f64>> {
    let Some(text) = &c.context else { return Some(None) };
    let ctx = LazyContext::new(text);
    if plan.filter.as_ref().is_some_and(|f| !f.matches_with(|p| ctx.lookup(p))) {
        return None;
    }
    match &plan.spatial {
        Some(s) => {
            let d = s.distance_lazy(&ctx);
            s.within(d).then_some(Some(d))
        }
        None => Some(None),
    }
}

/// Scales scores so the best is 1.0.
fn normalise(out: &mut [Ranked]) {
    let max = out.iter().map(|r| r.score).fold(0.0, f64::max);
    if max > 0.0 {
        out.iter_mut().for_each(|r| r.score /= max);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrf_matches_spec() {
        assert_eq!(rrf(60.0, 0), 1.0 / 61.0);
        assert_eq!(rrf(60.0, 1), 1.0 / 62.0);
    }
}
