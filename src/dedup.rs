//! Dedup stage: exact (indexed content hash) → near-duplicate (word sets) → cosine
//! (embeddings, guarded; see [`cosine`]).
//!
//! A near-duplicate is the same fact written again: word-set Jaccard > 0.70, the
//! same numbers, the same success/failure outcome, one text's words contain the
//! other's, in the same order (words were added or dropped, none substituted or
//! moved: "grasp of blue tray" is not "grasp of blue apple", "12.5N" is not "15N",
//! "succeeded" is not "failed", "from the door to the bench" is not "from the
//! bench to the door").
//! Being wrong here would lose a memory, so the rule is conservative.
//!
//! The check is exact, symmetric and fast: duplicates share their numbers, so
//! candidates come from an index on (collection, numbers signature, word count)
//! with each memory's word set stored beside it — no text is re-read or
//! re-tokenised. Memories without numbers are looked up in the in-process text
//! index: the postings of the rarest few of the new text's words (enough that any
//! near-duplicate must hold one), filtered in memory by word count and by stem
//! containment, so only true near-duplicates reach SQLite — the cost depends on
//! those few postings, not on how many memories are stored.
//!
//! What the layers compare (content hashes, word sets, numbers, outcome) is
//! computed by [`crate::fingerprint`] when a memory is drafted and stored with it.

use rusqlite::{params, Connection, OptionalExtension};

use crate::error::Result;
use crate::fingerprint::{Terms, JACCARD_THRESHOLD};
use crate::search::text::TextIndex;
use crate::search::vector::Nearest;
use crate::store::memory::{self, not_expired};
use crate::types::{DupMethod, Duplicate};

/// Exact layer: an active memory with the same hash in the collection.
pub fn exact(conn: &Connection, collection: &str, hash: &str, exclude: Option<i64>) -> Result<Option<Duplicate>> {
    Ok(memory::find_by_hash(conn, collection, hash, exclude)?.map(|id| Duplicate {
        existing_id: id,
        method: DupMethod::Exact,
        similarity: 1.0,
    }))
}

/// Near-duplicate layer over active facts of the collection; the most similar wins.
/// `index` must have been synced in the caller's transaction before its own writes.
pub fn near(
    conn: &Connection,
    index: &TextIndex,
    collection: &str,
    terms: &Terms,
    exclude: Option<i64>,
) -> Result<Option<Duplicate>> {
    let n = terms.set.len();
    if n == 0 {
        return Ok(None);
    }
    let lo = (n as f64 * JACCARD_THRESHOLD).floor() as i64;
    let hi = (n as f64 / JACCARD_THRESHOLD).ceil() as i64;
    let sig = terms.signature();
    let exclude = exclude.unwrap_or(0);
    let mut best: Option<Duplicate> = None;
    let mut consider = |id: i64, stored: &str, content: &str| {
        if let Some(sim) = terms.duplicate_similarity(&Terms::from_stored(stored, &sig, content)) {
            if best.is_none_or(|b| sim > b.similarity) {
                best = Some(Duplicate { existing_id: id, method: DupMethod::Jaccard, similarity: sim });
            }
        }
    };
    if !sig.is_empty() {
        facts_with_numbers(conn, collection, &sig, (lo, hi), exclude, |id, t, c| {
            consider(id, t, c);
            Ok(())
        })?;
        return Ok(best);
    }
    // Facts without numbers: candidates from the in-process text index, which the
    // caller synced to the committed state in this transaction before its own
    // writes, plus the rows this transaction wrote since (a batch's earlier items).
    let synced = index.rev().unwrap_or(-1);
    let mut ids = index.near_duplicates(collection, &terms.order, (lo, hi), max_missing(n));
    let mut own = conn.prepare_cached(concat!(
        "SELECT id FROM memories INDEXED BY idx_mem_rev WHERE rev > ?1 AND collection = ?2 AND numbers_sig = ''
               AND term_count BETWEEN ?3 AND ?4 AND status = 'active' AND type = 'fact' AND ",
        not_expired!()
    ))?;
    for id in own.query_map(params![synced, collection, lo, hi], |r| r.get(0))? {
        ids.push(id?);
    }
    let mut st = conn.prepare_cached(concat!(
        "SELECT terms, content FROM memories WHERE id = ?1 AND collection = ?2 AND numbers_sig = ''
               AND status = 'active' AND type = 'fact' AND ",
        not_expired!()
    ))?;
    for id in ids {
        if id != exclude {
            let row: Option<(String, String)> =
                st.query_row(params![id, collection], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
            if let Some((stored, content)) = row {
                consider(id, &stored, &content);
            }
        }
    }
    Ok(best)
}

/// How many of a text's `n` words a near-duplicate contained in it may lack:
/// the largest `k` with `(n - k) / n > JACCARD_THRESHOLD`.
fn max_missing(n: usize) -> usize {
    (0..n).take_while(|&k| (n - k) as f64 / n as f64 > JACCARD_THRESHOLD).last().unwrap_or(0)
}

/// Active facts of `collection` whose numbers signature is `sig` (indexed) and
/// whose word count is within `counts`: `f(id, stored terms, content)`.
fn facts_with_numbers(
    conn: &Connection,
    collection: &str,
    sig: &str,
    counts: (i64, i64),
    exclude: i64,
    mut f: impl FnMut(i64, &str, &str) -> Result<()>,
) -> Result<()> {
    let mut st = conn.prepare_cached(concat!(
        "SELECT id, terms, content FROM memories INDEXED BY idx_mem_dedup
             WHERE collection = ?1 AND numbers_sig = ?2 AND term_count BETWEEN ?3 AND ?4
               AND status = 'active' AND type = 'fact' AND id != ?5 AND ",
        not_expired!()
    ))?;
    let mut rows = st.query(params![collection, sig, counts.0, counts.1, exclude])?;
    while let Some(r) = rows.next()? {
        f(r.get(0)?, r.get_ref(1)?.as_str()?, r.get_ref(2)?.as_str()?)?;
    }
    Ok(())
}

/// Neighbours examined by the cosine layer for texts without numbers.
const COSINE_NEIGHBOURS: usize = 8;

/// Cosine layer over active facts of the collection: the most similar stored
/// vector above `threshold` whose memory states the same numbers and outcome with
/// the same words up to inflection, in the same order.
///
/// Cosine alone is not evidence of the same fact: with all-MiniLM-L6-v2, "pick up
/// the red cup" / "pick up the blue cup" score 0.902 and "pulling the handle
/// down" / "pushing the handle up" 0.963 — above the spec's 0.85, and merging them
/// would lose a memory. So the layer catches rewordings the word layer misses
/// (inflections and function words: "Gripper slipped on wet cups" / "the gripper
/// slips on a wet cup"), never a substituted word.
///
/// Only a memory with the same numbers can qualify, so a text with numbers looks
/// its candidates up in the numbers index and compares vectors of those that pass
/// the word guard (no vector scan on the learn path); a text without numbers asks
/// the vector index for its nearest neighbours. The caller synced the index in
/// this transaction before its own writes (see [`crate::search::vector`]).
pub fn cosine(
    conn: &Connection,
    near: &Nearest,
    vector: &[f32],
    terms: &Terms,
    threshold: f64,
    exclude: Option<i64>,
) -> Result<Option<Duplicate>> {
    if threshold > 1.0 {
        return Ok(None);
    }
    let exclude = exclude.unwrap_or(0);
    let sig = terms.signature();
    let qualifies = |t: &str, n: &str, c: &str| {
        let other = Terms::from_stored(t, n, c);
        terms.same_facts(&other) && terms.rewording_of(&other)
    };
    let mut best: Option<Duplicate> = None;
    let mut offer = |id: i64, similarity: f64| {
        if similarity > threshold && best.is_none_or(|b| similarity > b.similarity) {
            best = Some(Duplicate { existing_id: id, method: DupMethod::Cosine, similarity });
        }
    };
    if !sig.is_empty() {
        facts_with_numbers(conn, near.collection, &sig, (0, i64::MAX), exclude, |id, t, c| {
            if qualifies(t, &sig, c) {
                if let Some(v) = near.index.vector(id) {
                    offer(id, crate::embed::cosine(vector, &v) as f64);
                }
            }
            Ok(())
        })?;
        return Ok(best);
    }
    let mut facts = conn.prepare_cached(concat!(
        "SELECT terms, numbers_sig, content FROM memories WHERE id = ?1 AND status = 'active' AND type = 'fact'
               AND id != ?2 AND ",
        not_expired!()
    ))?;
    for (similarity, id) in near.knn(vector, COSINE_NEIGHBOURS)? {
        let similarity = similarity as f64;
        if similarity <= threshold {
            break;
        }
        let row: Option<(String, String, String)> =
            facts.query_row(params![id, exclude], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional()?;
        if row.is_some_and(|(t, n, c)| qualifies(&t, &n, &c)) {
            offer(id, similarity);
            break;
        }
    }
    Ok(best)
}
