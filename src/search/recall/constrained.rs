//! Constraints over all memories. A recall with context_filter, session or
//! spatial_sort asks for memories that satisfy them; the query ranks them. So it
//! returns min(n, memories satisfying the constraints), not only those that share
//! a word (or a vector neighbourhood) with the query:
//!
//! - without spatial_sort, the query's matches first by score, then — when fewer
//!   than n match — the newest other memories that satisfy the constraints
//!   ([`fill_newest`]);
//! - with spatial_sort, the n nearest of all memories that satisfy the
//!   constraints, whatever the query's words; relevance to the query breaks
//!   distance ties, then the newer memory first ([`nearest`]).
//!
//! Each result says whether it matched the query (`Ranked::matched`).
//! `fill_newest` walks the collection's active memories in SQL (newest first),
//! evaluates the context filter in Rust and stops as soon as it has n. `nearest`
//! loads rows nearest first by the in-process coordinates ([`crate::search::spatial`])
//! and stops when no farther memory can enter; it scans like `fill_newest` only
//! when fewer than n memories with coordinates qualify.

use std::collections::HashSet;

use rusqlite::Connection;

use super::candidates;
use super::rank::{admit, TopN, REAL_WORLD_BOOST};
use super::{Plan, Ranked};
use crate::error::Result;

/// How a memory relates to the query in a spatial recall.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Relevance {
    pub score: f64,
    pub lexical: Option<f64>,
    pub cosine: Option<f64>,
}

impl Relevance {
    /// A memory listed by a query without a searchable word (`"*"`): it matches.
    pub fn listed() -> Relevance {
        Relevance { score: 0.0, lexical: None, cosine: None }
    }

    /// A BM25 match holding `share` of the query's weight.
    pub fn lexical(share: f64, is_real: bool) -> Relevance {
        let boost = if is_real { REAL_WORLD_BOOST } else { 1.0 };
        Relevance { score: share * boost, lexical: Some(share), cosine: None }
    }
}

/// Appends to `hits` (the query's matches, best first) the newest memories that
/// satisfy the plan's constraints and are not among them, until there are n.
/// Nothing for an unconstrained plan: without constraints a recall returns
/// matches only.
pub fn fill_newest(conn: &Connection, plan: &Plan, hits: &mut Vec<Ranked>) -> Result<()> {
    if !plan.constrained() || hits.len() >= plan.n {
        return Ok(());
    }
    let have: HashSet<i64> = hits.iter().map(|h| h.id).collect();
    candidates::scan(conn, plan, |c| {
        if have.contains(&c.id) {
            return Ok(true);
        }
        if let Some(distance) = admit(plan, &c) {
            hits.push(Ranked { id: c.id, score: 0.0, lexical: None, cosine: None, distance, matched: false });
        }
        Ok(hits.len() < plan.n)
    })
}

/// The n memories nearest to the plan's spatial_sort target among all that
/// satisfy its constraints, nearest first. `relevance(id, is_real)` says how a memory
/// relates to the query (`None`: it does not match); it is asked only for the
/// memories that could enter the n nearest.
pub fn nearest(
    conn: &Connection,
    plan: &Plan,
    mut relevance: impl FnMut(i64, bool) -> Result<Option<Relevance>>,
) -> Result<Vec<Ranked>> {
    if let Some(found) = nearest_indexed(conn, plan, &mut relevance)? {
        return Ok(found);
    }
    let mut kept = TopN::new(plan.n, true);
    candidates::scan(conn, plan, |c| {
        let Some(Some(distance)) = admit(plan, &c) else { return Ok(true) };
        // Only a memory at most as far as the farthest kept one can enter (at
        // equal distance relevance decides, so it is needed then too).
        if kept.worst().and_then(|w| w.distance).is_some_and(|far| distance > far) {
            return Ok(true);
        }
        let r = relevance(c.id, c.is_real)?;
        kept.push(ranked(c.id, distance, r));
        Ok(true)
    })?;
    Ok(kept.into_ranked())
}

/// A memory as [`nearest`] ranks it.
fn ranked(id: i64, distance: f64, r: Option<Relevance>) -> Ranked {
    Ranked {
        id,
        score: r.map_or(0.0, |r| r.score),
        lexical: r.and_then(|r| r.lexical),
        cosine: r.and_then(|r| r.cosine),
        distance: Some(distance),
        matched: r.is_some(),
    }
}

/// [`nearest`] through the in-process coordinates: rows are loaded nearest
/// first, each checked as the scan checks it, until no farther memory can enter
/// the n kept. `None` when the plan has no coordinate index, or when fewer than n
/// memories with coordinates qualify — memories without coordinates (at an
/// infinite distance) can then be among the n, and the full scan decides.
fn nearest_indexed(
    conn: &Connection,
    plan: &Plan,
    relevance: &mut impl FnMut(i64, bool) -> Result<Option<Relevance>>,
) -> Result<Option<Vec<Ranked>>> {
    let (Some(points), Some(s)) = (plan.points, &plan.spatial) else { return Ok(None) };
    let mut kept = TopN::new(plan.n, true);
    let mut lookup = candidates::Lookup::new(conn, plan)?;
    // Takes (distance, id) nearest first; false once no farther memory can enter.
    let mut take = |d: f64, id: i64, kept: &mut TopN| -> Result<bool> {
        if kept.worst().and_then(|w| w.distance).is_some_and(|far| d > far) {
            return Ok(false);
        }
        if let Some(c) = lookup.get(id, None)? {
            if let Some(Some(distance)) = admit(plan, &c) {
                let r = relevance(c.id, c.is_real)?;
                kept.push(ranked(c.id, distance, r));
            }
        }
        Ok(true)
    };
    // Through the grid, in growing batches: the n nearest usually qualify at once.
    let mut k = (plan.n * 8).max(64);
    let mut after = None;
    while let Some((batch, complete)) =
        points.nearest(conn, s.field(), plan.collection, s.target(), s.max_distance, k, after)?
    {
        for &(d, id) in &batch {
            if !take(d, id, &mut kept)? {
                return Ok(Some(kept.into_ranked()));
            }
        }
        if complete || batch.len() < k {
            return Ok(kept.worst().is_some().then(|| kept.into_ranked()));
        }
        after = batch.last().copied();
        k *= 8;
    }
    // No grid for this target (or no longer: then after the batches taken): every
    // distance, sorted a head first.
    let mut order = points.distances(conn, s.field(), plan.collection, s.target(), |d| s.within(d))?;
    if let Some((ad, aid)) = after {
        order.retain(|&(d, id)| d > ad || (d == ad && id < aid));
    }
    let by_distance = |a: &(f64, i64), b: &(f64, i64)| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1));
    let head = k.min(order.len());
    if head < order.len() {
        order.select_nth_unstable_by(head, by_distance);
    }
    order[..head].sort_unstable_by(by_distance);
    for i in 0..order.len() {
        if i == head {
            order[head..].sort_unstable_by(by_distance);
        }
        let (d, id) = order[i];
        if !take(d, id, &mut kept)? {
            return Ok(Some(kept.into_ranked()));
        }
    }
    Ok(kept.worst().is_some().then(|| kept.into_ranked()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relevance_of_a_real_world_match_is_boosted() {
        assert_eq!(Relevance::lexical(0.4, true).score, 0.4 * REAL_WORLD_BOOST);
        assert_eq!(Relevance::lexical(0.4, false).lexical, Some(0.4));
        assert_eq!(Relevance::listed().lexical, None);
    }
}
