//! BM25-only recall: candidates in BM25 order ([`super::candidates`]), RRF
//! score `1/(k + rank + 1)`, real-world ×1.5, the filters on each loaded row,
//! top n; a constrained recall is then filled with the newest other memories
//! that satisfy its constraints, and a spatial one takes the nearest of all
//! ([`super::constrained`]).

use rusqlite::Connection;

use super::rank::{admit, rrf, TopN, REAL_WORLD_BOOST};
use super::{candidates, constrained, Plan, Ranked};
use crate::error::Result;
use crate::search::text::TextIndex;
use crate::types::SearchMode;

/// Runs the plan with BM25 alone; results best first (nearest first with
/// spatial_sort), scores normalised to a maximum of 1.0.
pub(super) fn run(conn: &Connection, index: &TextIndex, plan: &Plan) -> Result<(Vec<Ranked>, SearchMode)> {
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
