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
//! filter, n are returned — there is no fixed over-fetch that runs dry.
//!
//! Constraints (context_filter, session, spatial_sort) hold over *all* memories,
//! not only those that match the query ([`constrained`]): a constrained recall
//! returns min(n, memories satisfying them) — the query's matches first, then
//! the newest other memories that satisfy them; with spatial_sort the n nearest
//! of all that satisfy them (relevance breaks distance ties). Each hit says
//! whether it matched the query. Hybrid recall fuses BM25 with cosines as
//! [`fusion`] describes.

pub mod candidates;
pub mod columns;
pub mod constrained;
pub mod filter;
pub mod fusion;
mod grid;
pub mod hybrid;
pub mod index;
mod paths;
pub mod points;
pub mod quant;
pub mod ranking;
mod snapshot;
pub mod vindex;

use std::cell::OnceCell;
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
    /// The in-process coordinates spatial_sort orders by (none: every row is read).
    pub points: Option<&'a points::PointIndex>,
    /// The in-process values context_filter pre-selects by (none: every row is read).
    pub columns: Option<&'a columns::ColumnIndex>,
    /// The filter over the columns, made on first use in the recall's read
    /// transaction ([`Plan::checker`]).
    pub checker: OnceCell<Option<columns::Checker>>,
}

/// One ranked result, before the memory row is loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    pub id: i64,
    pub score: f64,
    /// Share of the query's BM25 weight the memory holds (see `index::Ranking::ceiling`).
    pub lexical: Option<f64>,
    /// Cosine to the query's vector (hybrid recall).
    pub cosine: Option<f64>,
    pub distance: Option<f64>,
    /// Whether the memory matched the query (else it only satisfies the constraints).
    pub matched: bool,
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

impl<'a> Plan<'a> {
    /// Whether candidates need their context JSON (for context_filter / spatial_sort).
    pub fn needs_context(&self) -> bool {
        self.filter.is_some() || self.spatial.is_some()
    }

    /// The context filter over the in-process columns, synced in this read
    /// transaction; `None` without a filter or columns. It only
    /// pre-selects: every row loaded is still checked against its stored context
    /// ([`admit`]).
    pub fn checker(&self, conn: &Connection) -> Result<Option<&columns::Checker>> {
        if self.checker.get().is_none() {
            let c = match (self.columns, &self.filter) {
                (Some(c), Some(f)) => Some(c.checker(conn, f, self.collection)?),
                _ => None,
            };
            let _ = self.checker.set(c);
        }
        Ok(self.checker.get().and_then(Option::as_ref))
    }

    /// Whether the recall has constraints that hold over all memories: then it
    /// returns min(n, memories satisfying them), matches of the query first.
    pub fn constrained(&self) -> bool {
        self.filter.is_some() || self.spatial.is_some() || self.session_id.is_some()
    }
}

/// Runs the plan with BM25 alone; results best first (nearest first with
/// spatial_sort), scores normalised to a maximum of 1.0.
pub fn run(conn: &Connection, index: &index::TextIndex, plan: &Plan) -> Result<(Vec<Ranked>, SearchMode)> {
    if plan.spatial.is_some() {
        if plan.words.is_empty() {
            let out = constrained::nearest(conn, plan, |_, _| Ok(Some(constrained::Relevance::listed())))?;
            return Ok((out, SearchMode::Scan));
        }
        index.sync(conn)?;
        let out = constrained::nearest(conn, plan, |id, is_real| {
            let share = index.shares(plan.collection, &plan.words, &[id])[0];
            Ok((share > 0.0).then(|| constrained::Relevance::lexical(share, is_real)))
        })?;
        return Ok((out, SearchMode::Bm25Only));
    }
    let mut kept = TopN::new(plan.n, false);
    let mut rank = 0usize;
    let mode = candidates::for_each(conn, index, plan, |c| {
        let base = rrf(plan.rrf_k, rank);
        rank += 1;
        if kept.worst().is_some_and(|w| w.score >= base * REAL_WORLD_BOOST) {
            return Ok(false); // no later candidate can enter the top n
        }
        let Some(distance) = admit(plan, &c) else { return Ok(true) };
        let score = if c.is_real { base * REAL_WORLD_BOOST } else { base };
        let hit = Ranked { id: c.id, score, lexical: c.lexical, cosine: None, distance, matched: true };
        kept.push(hit);
        Ok(true)
    })?;
    let mut out = kept.into_ranked();
    if mode != SearchMode::Scan {
        constrained::fill_newest(conn, plan, &mut out)?;
    }
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
pub(crate) fn normalise(out: &mut [Ranked]) {
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

/// The best n results seen so far (nearest first with spatial_sort).
pub(crate) struct TopN {
    heap: BinaryHeap<Worst>,
    n: usize,
    spatial: bool,
}

impl TopN {
    pub fn new(n: usize, spatial: bool) -> TopN {
        TopN { heap: BinaryHeap::with_capacity(n + 1), n, spatial }
    }

    /// The worst kept result once n are kept (a later one must beat it to enter).
    pub fn worst(&self) -> Option<&Ranked> {
        self.heap.peek().filter(|_| self.heap.len() == self.n).map(|w| &w.0)
    }

    pub fn push(&mut self, r: Ranked) {
        self.heap.push(Worst(r, self.spatial));
        if self.heap.len() > self.n {
            self.heap.pop();
        }
    }

    /// Best first, scores normalised to a maximum of 1.0.
    pub fn into_ranked(self) -> Vec<Ranked> {
        let mut out: Vec<Ranked> = self.heap.into_sorted_vec().into_iter().map(|w| w.0).collect();
        normalise(&mut out);
        out
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
