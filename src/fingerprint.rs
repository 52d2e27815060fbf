//! Fingerprints of a memory's text, computed before it is stored and written
//! with it: the content hash of the exact-duplicate layer ([`fact_hash`],
//! [`perception_hash`]), the checksum of the other stored texts ([`meta_hash`]),
//! and the word set, numbers and outcome the near-duplicate layer, consolidation
//! and grouped recall compare ([`Terms`], [`outcome`]).
//!
//! A leaf: it imports only [`crate::text`], so the store that writes these
//! columns and the stages that compare them (dedup, sessions, grouping) all sit
//! above it.

use std::collections::BTreeSet;

use sha2::{Digest, Sha256};

use crate::text;

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
                let s = text::term(w);
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
