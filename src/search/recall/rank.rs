//! What the recall stages share: the scores (RRF by rank, the real-world
//! boost), the filters applied to a loaded candidate ([`admit`]), the best n
//! kept so far ([`TopN`]) and the normalisation of the final scores.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use serde_json::Value;

use super::candidates::Candidate;
use super::{Plan, Ranked};
use crate::search::filter::LazyContext;

/// Weight of memories whose context says `env.sim_or_real == "real"`.
pub const REAL_WORLD_BOOST: f64 = 1.5;

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

/// Applies context_filter and spatial max_distance to a candidate: `None` if it
/// is filtered out, else its spatial distance (`Some(None)` without spatial_sort).
pub(crate) fn admit(plan: &Plan, c: &Candidate) -> Option<Option<f64>> {
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
pub(super) fn quality(a: &Ranked, b: &Ranked, spatial: bool) -> Ordering {
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
