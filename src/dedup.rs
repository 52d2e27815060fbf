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

use std::collections::BTreeSet;

use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest, Sha256};

use crate::error::Result;
use crate::search::index::TextIndex;
use crate::search::vindex::Nearest;
use crate::store::memory;
use crate::text;
use crate::types::{DupMethod, Duplicate};

/// Jaccard similarity above which two memories are duplicates.
pub const JACCARD_THRESHOLD: f64 = 0.70;

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

/// Checksum of the other texts a read returns, written with them: collection,
/// session id, category, context and creation time (the summary is checked
/// against the content it is made from; see `store::memory::from_row`).
pub fn meta_hash(
    collection: &str,
    session_id: Option<&str>,
    category: &str,
    context: &str,
    created_at: &str,
) -> String {
    let session: &[u8] = match session_id {
        None => b"\0",
        Some(s) => s.as_bytes(),
    };
    hash_parts(&[
        b"meta",
        collection.as_bytes(),
        &[u8::from(session_id.is_some())],
        session,
        category.as_bytes(),
        context.as_bytes(),
        created_at.as_bytes(),
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

/// What the near-duplicate layer compares for one text.
#[derive(Debug, Clone, PartialEq)]
pub struct Terms {
    pub set: BTreeSet<String>,
    /// The words of `set` in order of first occurrence.
    pub order: Vec<String>,
    /// Canonical numbers of the text, sorted.
    pub numbers: Vec<String>,
    /// -1 failure, 1 success, 0 neither (see [`outcome`]).
    pub outcome: i8,
}

impl Terms {
    pub fn of(content: &str) -> Terms {
        Terms::new(text::term_sequence(content), text::numbers(content), content)
    }

    fn new(order: Vec<String>, numbers: Vec<String>, content: &str) -> Terms {
        let set: BTreeSet<String> = order.iter().cloned().collect();
        Terms { outcome: outcome(content, &set), set, order, numbers }
    }

    /// Rebuilds the terms of a stored memory from its `terms` and `numbers_sig`
    /// columns and its content (for the outcome: see [`outcome`]).
    pub fn from_stored(terms: &str, numbers_sig: &str, content: &str) -> Terms {
        Terms::new(
            terms.split(' ').filter(|w| !w.is_empty()).map(str::to_string).collect(),
            numbers_sig.split(' ').filter(|w| !w.is_empty()).map(str::to_string).collect(),
            content,
        )
    }

    /// The words as stored (space-separated, in order of first occurrence).
    pub fn stored(&self) -> String {
        self.order.join(" ")
    }

    /// The numbers as stored and indexed (space-separated, sorted; "" when none).
    pub fn signature(&self) -> String {
        self.numbers.join(" ")
    }

    pub fn count(&self) -> i64 {
        self.set.len() as i64
    }

    /// Same numbers and same outcome: a precondition for being the same fact.
    pub fn same_facts(&self, other: &Terms) -> bool {
        self.numbers == other.numbers && self.outcome == other.outcome
    }

    /// Similarity if the two texts are near-duplicates, else `None`.
    pub fn duplicate_similarity(&self, other: &Terms) -> Option<f64> {
        self.same_fact_above(other, JACCARD_THRESHOLD)
    }

    /// Jaccard similarity if it exceeds `threshold` and the two texts state the same
    /// fact: the same numbers and outcome, one's words holding the other's (words
    /// added or dropped, none substituted), shared words in the same order.
    pub fn same_fact_above(&self, other: &Terms, threshold: f64) -> Option<f64> {
        let j = text::jaccard_sets(&self.set, &other.set);
        (j > threshold && self.nested(other) && self.same_facts(other) && self.same_order(other)).then_some(j)
    }

    /// Whether one text's words hold all of the other's.
    pub fn nested(&self, other: &Terms) -> bool {
        self.set.is_subset(&other.set) || other.set.is_subset(&self.set)
    }

    /// Whether the two texts have the same words up to inflection ("slipped" /
    /// "slip", "cups" / "cup"; Snowball English stems), in the same order.
    pub fn rewording_of(&self, other: &Terms) -> bool {
        fn stems(t: &Terms) -> Vec<String> {
            let mut out: Vec<String> = Vec::with_capacity(t.order.len());
            for w in &t.order {
                let s = crate::search::index::term(w);
                if !out.contains(&s) {
                    out.push(s);
                }
            }
            out
        }
        stems(self) == stems(other)
    }

    /// Whether the words the two texts share appear in the same order in both.
    fn same_order(&self, other: &Terms) -> bool {
        fn shared<'a>(a: &'a Terms, b: &Terms) -> Vec<&'a String> {
            a.order.iter().filter(|w| b.set.contains(*w)).collect()
        }
        shared(self, other) == shared(other, self)
    }
}

/// Success/failure polarity of a text: -1 failure, 1 success, 0 neither.
///
/// English outcome words count only as whole tokens of the text, where a token is
/// a run of letters, digits and `_`: "result=success" reports a success, but
/// `place_error=0.01` (a parameter name) reports no error. Chinese outcome words
/// are matched among the segmented `words`.
pub fn outcome(content: &str, words: &BTreeSet<String>) -> i8 {
    const FAIL: &[&str] = &[
        "fail",
        "failed",
        "failure",
        "failing",
        "fails",
        "slipped",
        "slip",
        "slips",
        "dropped",
        "drops",
        "collided",
        "collision",
        "missed",
        "error",
        "unsuccessful",
    ];
    const OK: &[&str] = &["success", "succeeded", "successful", "successfully", "succeeds", "worked", "works"];
    const FAIL_ZH: &[&str] = &["失败", "滑落", "掉落", "碰撞", "未能"];
    let (mut fail, mut ok) = (FAIL_ZH.iter().any(|w| words.contains(*w)), words.contains("成功"));
    for token in content.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        if token.len() < 4 || token.len() > 14 || !token.is_ascii() {
            continue;
        }
        let token = token.to_ascii_lowercase();
        fail |= FAIL.contains(&token.as_str());
        ok |= OK.contains(&token.as_str());
    }
    match (fail, ok) {
        (true, _) => -1,
        (false, true) => 1,
        _ => 0,
    }
}

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
    let mut own = conn.prepare_cached(
        "SELECT id FROM memories INDEXED BY idx_mem_rev WHERE rev > ?1 AND collection = ?2 AND numbers_sig = ''
           AND term_count BETWEEN ?3 AND ?4 AND status = 'active' AND type = 'fact'",
    )?;
    for id in own.query_map(params![synced, collection, lo, hi], |r| r.get(0))? {
        ids.push(id?);
    }
    let mut st = conn.prepare_cached(
        "SELECT terms, content FROM memories WHERE id = ?1 AND collection = ?2 AND numbers_sig = ''
           AND status = 'active' AND type = 'fact'",
    )?;
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
    let mut st = conn.prepare_cached(
        "SELECT id, terms, content FROM memories INDEXED BY idx_mem_dedup
         WHERE collection = ?1 AND numbers_sig = ?2 AND term_count BETWEEN ?3 AND ?4
           AND status = 'active' AND type = 'fact' AND id != ?5",
    )?;
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
/// this transaction before its own writes (see [`crate::search::vindex`]).
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
    let mut facts = conn.prepare_cached(
        "SELECT terms, numbers_sig, content FROM memories WHERE id = ?1 AND status = 'active' AND type = 'fact' AND id != ?2",
    )?;
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
    fn substitutions_and_outcomes_block_duplicates() {
        let a = Terms::of("grasp of blue tray succeeded with vacuum gripper on conveyor belt");
        let b = Terms::of("grasp of blue apple succeeded with vacuum gripper on conveyor belt");
        assert!(a.duplicate_similarity(&b).is_none(), "a different object is a different fact");
        let c = Terms::of("xArm7 succeeded grasping the can from the top shelf");
        let d = Terms::of("xArm7 failed grasping the can from the top shelf");
        assert!(c.duplicate_similarity(&d).is_none());
        let e = Terms::of("xArm7 succeeded grasping the can from the top shelf quickly");
        assert!(c.duplicate_similarity(&e).is_some(), "an added word is the same fact");
        assert_eq!(
            Terms::from_stored(&c.stored(), &c.signature(), "xArm7 succeeded grasping the can from the top shelf"),
            c
        );
        let f = Terms::of("导航到实验室门口用时61.8秒，成功，从工作台出发");
        let g = Terms::of("导航到工作台用时61.8秒，成功，从实验室门口出发");
        assert!(f.duplicate_similarity(&g).is_none(), "same words, opposite route");
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
