//! Dedup stage: exact (indexed content hash) → Jaccard (word sets) → cosine (embeddings issue).
//!
//! The Jaccard layer is exact and symmetric. A memory B with Jaccard(A, B) > 0.70
//! shares more than 70 % of A's words, so it contains at least one word of any
//! subset of A larger than 30 % of A. The FTS candidate query is the OR of such a
//! subset (the words most likely to be rare: with digits, then longest), built only
//! from sanitised words (never raw text), and candidates are pre-filtered by word
//! count (|B| within (0.7·|A|, |A|/0.7)). Every candidate is then compared exactly.
//! Memories whose numbers differ ("12.5N" vs "15N") are never duplicates.

use std::collections::BTreeSet;

use rusqlite::{params, Connection};
use sha2::{Digest, Sha256};

use crate::error::Result;
use crate::store::memory;
use crate::text;
use crate::types::{DupMethod, Duplicate};

/// Jaccard similarity above which two memories are duplicates.
pub const JACCARD_THRESHOLD: f64 = 0.70;
/// Most candidates compared per check (bounds a pathological corpus).
const MAX_CANDIDATES: i64 = 5000;

/// Content hash of a fact: SHA-256 of the trimmed text (first 128 bits, hex).
pub fn fact_hash(content: &str) -> String {
    hash_parts(&[b"fact", content.as_bytes()])
}

/// Content hash of a perception: description, type, data and metadata together.
pub fn perception_hash(description: &str, ptype: &str, data: Option<&[u8]>, metadata: Option<&str>) -> String {
    hash_parts(&[
        b"perception",
        ptype.as_bytes(),
        description.as_bytes(),
        data.unwrap_or_default(),
        metadata.unwrap_or_default().as_bytes(),
    ])
}

fn hash_parts(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// What the Jaccard layer compares for one text.
pub struct Terms {
    pub set: BTreeSet<String>,
    pub numbers: Vec<String>,
}

impl Terms {
    pub fn of(content: &str) -> Terms {
        Terms { set: text::term_set(content), numbers: text::numbers(content) }
    }
    pub fn count(&self) -> i64 {
        self.set.len() as i64
    }
    /// Similarity if the two texts count as the same fact, else `None`.
    pub fn duplicate_similarity(&self, other: &Terms) -> Option<f64> {
        let j = text::jaccard_sets(&self.set, &other.set);
        (j > JACCARD_THRESHOLD && self.numbers == other.numbers).then_some(j)
    }
}

/// Exact layer: an active memory with the same hash in the collection.
pub fn exact(conn: &Connection, collection: &str, hash: &str, exclude: Option<i64>) -> Result<Option<Duplicate>> {
    Ok(memory::find_by_hash(conn, collection, hash, exclude)?
        .map(|id| Duplicate { existing_id: id, method: DupMethod::Exact, similarity: 1.0 }))
}

/// Jaccard layer over active facts of the collection; the most similar one wins.
pub fn jaccard(conn: &Connection, collection: &str, terms: &Terms, exclude: Option<i64>) -> Result<Option<Duplicate>> {
    let n = terms.set.len();
    if n == 0 {
        return Ok(None);
    }
    let mut probe: Vec<&String> = terms.set.iter().collect();
    probe.sort_by_key(|w| (!w.chars().any(|c| c.is_ascii_digit()), std::cmp::Reverse(w.chars().count())));
    probe.truncate((n as f64 * (1.0 - JACCARD_THRESHOLD)).floor() as usize + 1);
    let Some(query) = text::fts_or_query(&probe) else { return Ok(None) };
    let lo = (n as f64 * JACCARD_THRESHOLD).floor() as i64;
    let hi = (n as f64 / JACCARD_THRESHOLD).ceil() as i64;
    let mut st = conn.prepare_cached(
        "SELECT m.id, m.content FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
         WHERE memories_fts MATCH ?1 AND m.collection = ?2 AND m.status = 'active'
           AND m.type = 'fact' AND m.term_count BETWEEN ?3 AND ?4 AND m.id != ?5
         LIMIT ?6",
    )?;
    let mut rows = st.query(params![query, collection, lo, hi, exclude.unwrap_or(0), MAX_CANDIDATES])?;
    let mut best: Option<Duplicate> = None;
    while let Some(r) = rows.next()? {
        let content: String = r.get(1)?;
        if let Some(sim) = terms.duplicate_similarity(&Terms::of(&content)) {
            if best.is_none_or(|b| sim > b.similarity) {
                best = Some(Duplicate { existing_id: r.get(0)?, method: DupMethod::Jaccard, similarity: sim });
            }
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_separate_kinds_and_fields() {
        assert_eq!(fact_hash("a"), fact_hash("a"));
        assert_ne!(fact_hash("a"), perception_hash("a", "visual", None, None));
        assert_ne!(
            perception_hash("ab", "visual", Some(b"c"), None),
            perception_hash("a", "visual", Some(b"bc"), None)
        );
        assert_eq!(fact_hash("x").len(), 32);
    }

    #[test]
    fn numbers_block_duplicates() {
        let a = Terms::of("grasp succeeded on the red cup at 12.5N");
        let b = Terms::of("grasp succeeded on the red cup at 15N");
        assert!(a.duplicate_similarity(&b).is_none());
        let c = Terms::of("Grasp succeeded on the red cup at 12.5N!");
        assert!(a.duplicate_similarity(&c).is_some());
    }
}
