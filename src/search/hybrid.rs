//! Hybrid recall: the BM25 list and the vector (KNN) list, each made of memories
//! that pass every filter (filters apply *before* the lists are cut, so a
//! selective context_filter still yields n results when n memories match), cut
//! at the fusion depth, fused by RRF (`Σ 1/(k + rank + 1)`), real-world ×1.5,
//! top n. With spatial_sort the BM25 list is not cut (every matching memory is a
//! candidate for "nearest"), as in BM25-only recall.
//!
//! Modes: both lists non-empty → hybrid; only one → bm25_only / vec_only (the
//! other found nothing, e.g. a query with no indexed word).

use std::collections::HashMap;

use rusqlite::Connection;

use super::candidates::{self, Candidate, Lookup};
use super::index::TextIndex;
use super::vindex::Nearest;
use super::{admit, normalise, quality, rrf, Plan, Ranked, REAL_WORLD_BOOST};
use crate::error::Result;
use crate::store::vectors;
use crate::types::SearchMode;

/// Smallest number of entries taken from each list.
pub const MIN_FUSION_DEPTH: usize = 40;

/// Entries taken from each list for `n` results.
pub fn fusion_depth(n: usize) -> usize {
    (n * 4).clamp(MIN_FUSION_DEPTH, vectors::MAX_K)
}

/// An accepted list entry.
struct Entry {
    id: i64,
    is_real: bool,
    bm25: Option<f64>,
    distance: Option<f64>,
}

fn accept(plan: &Plan, c: Candidate) -> Option<Entry> {
    let distance = admit(plan, &c)?;
    Some(Entry { id: c.id, is_real: c.is_real, bm25: c.bm25, distance })
}

/// Runs the plan with `query` (the query's embedding) as the second list.
/// `near` is synced in this read transaction.
pub fn run(conn: &Connection, index: &TextIndex, near: &Nearest, plan: &Plan, query: &[f32]) -> Result<(Vec<Ranked>, SearchMode)> {
    let depth = fusion_depth(plan.n);
    let by_vector = vector_list(conn, near, plan, query, depth)?;
    let mut by_words = Vec::new();
    if !plan.words.is_empty() {
        let limit = if plan.spatial.is_some() { usize::MAX } else { depth };
        candidates::for_each(conn, index, plan, |c| {
            if let Some(e) = accept(plan, c) {
                by_words.push(e);
            }
            Ok(by_words.len() < limit)
        })?;
    }
    let mode = match (by_words.is_empty(), by_vector.is_empty()) {
        (false, true) => SearchMode::Bm25Only,
        (true, false) => SearchMode::VecOnly,
        _ => SearchMode::Hybrid,
    };
    // id → (fused entry, real-world)
    let mut fused: HashMap<i64, (Ranked, bool)> = HashMap::new();
    for list in [&by_words, &by_vector] {
        for (rank, e) in list.iter().enumerate() {
            let (r, _) = fused
                .entry(e.id)
                .or_insert((Ranked { id: e.id, score: 0.0, bm25: None, distance: e.distance }, e.is_real));
            r.score += rrf(plan.rrf_k, rank);
            r.bm25 = r.bm25.or(e.bm25);
        }
    }
    let spatial = plan.spatial.is_some();
    let mut out: Vec<Ranked> = fused
        .into_values()
        .map(|(mut r, real)| {
            if real {
                r.score *= REAL_WORLD_BOOST;
            }
            r
        })
        .collect();
    out.sort_by(|a, b| quality(b, a, spatial));
    out.truncate(plan.n);
    normalise(&mut out);
    Ok((out, mode))
}

/// Memories nearest to `query` that pass the filters, nearest first, at most
/// `depth`. Asks for more neighbours while filters reject too many; each memory
/// is looked up and filtered once, however many rounds it appears in.
fn vector_list(conn: &Connection, near: &Nearest, plan: &Plan, query: &[f32], depth: usize) -> Result<Vec<Entry>> {
    let mut lookup = Lookup::new(conn, plan)?;
    let mut seen: HashMap<i64, bool> = HashMap::new();
    // Without a context filter, spatial radius or session condition nearly every
    // neighbour is accepted; with one, start wider than a second round would.
    let selective = plan.filter.is_some() || plan.spatial.is_some() || plan.session_id.is_some() || plan.exclude_session.is_some();
    let mut k = if selective { depth * 4 } else { depth + depth / 4 };
    loop {
        let found = near.knn(query, k)?;
        let exhausted = found.len() < k;
        let mut out = Vec::with_capacity(depth);
        for (_, id) in found {
            if seen.get(&id) == Some(&false) {
                continue;
            }
            if let Some(e) = lookup.get(id, None)?.and_then(|c| accept(plan, c)) {
                seen.insert(id, true);
                out.push(e);
                if out.len() == depth {
                    return Ok(out);
                }
            } else {
                seen.insert(id, false);
            }
        }
        if exhausted {
            return Ok(out);
        }
        k *= 4;
    }
}
