//! Grouping stage of recall (`RecallRequest::group_similar`): results that say the
//! same thing fold into the best-ranked of them, so repeats of one event do not
//! crowd the other facts out of the top n.
//!
//! Two results are **similar** when their word sets (the words dedup and
//! consolidation compare: [`text::term_set`], Chinese segmented) have a Jaccard
//! similarity above [`text::SIMILAR_JACCARD`] (0.5, the bar consolidation merges
//! at) and the same success/failure outcome. Unlike dedup and consolidation the
//! numbers may differ: "base-01 could not dock at station 3 at 14:02, the wheels
//! slipped on the wet floor" and the same at station 1 at 09:40 are one group; a
//! success and a failure are never one group. Nothing is hidden: each group's
//! hit lists the ids of the memories folded into it, best first.
//!
//! The walk is greedy in rank order (nearest first with spatial_sort): a result
//! similar to an earlier group's first hit joins that group, otherwise it starts
//! a group. The engine ranks [`DEPTH`]·n results (then 16·n, at most
//! [`MAX_DEPTH`]) until n groups are found or the ranking runs dry, and keeps
//! folding the rest of the ranked results into the n groups — so a group's
//! `similar` lists the similar memories among those ranked, not necessarily every
//! similar memory stored.

use crate::fingerprint::Terms;
use crate::text;
use crate::types::Hit;

/// First depth of the ranking, as a multiple of n.
pub(super) const DEPTH: usize = 4;
/// The deepest ranking grouping reads.
pub(super) const MAX_DEPTH: usize = 1000;

/// The next depth after `depth` results gave fewer than n groups; `None` when
/// `depth` is already the deepest.
pub(super) fn deeper(depth: usize) -> Option<usize> {
    (depth < MAX_DEPTH).then(|| (depth * 4).min(MAX_DEPTH))
}

/// Whether two texts' terms are similar (see the module header).
pub(crate) fn similar(a: &Terms, b: &Terms) -> bool {
    a.outcome == b.outcome && text::jaccard_sets(&a.set, &b.set) > text::SIMILAR_JACCARD
}

/// Folds `ranked` (best first) into at most `n` groups: each returned hit is a
/// group's first, with the ids of the others in `similar`. Returns the groups
/// and whether `n` were found.
pub(super) fn group(ranked: Vec<Hit>, n: usize) -> (Vec<Hit>, bool) {
    let mut heads: Vec<(Hit, Terms)> = Vec::with_capacity(n);
    for hit in ranked {
        let terms = Terms::of(&hit.memory.content);
        if let Some((head, _)) = heads.iter_mut().find(|(_, t)| similar(t, &terms)) {
            head.similar.push(hit.memory.id);
        } else if heads.len() < n {
            heads.push((hit, terms));
        }
    }
    let full = heads.len() == n;
    (heads.into_iter().map(|(h, _)| h).collect(), full)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Memory, MemoryKind, MemoryStatus};

    fn hit(id: i64, content: &str) -> Hit {
        let memory = Memory {
            id,
            collection: "default".into(),
            session_id: None,
            kind: MemoryKind::Fact,
            content: content.to_string(),
            human_summary: String::new(),
            category: "observation".into(),
            confidence: 0.9,
            decay_rate: 0.01,
            status: MemoryStatus::Active,
            superseded_by: None,
            context: "{}".into(),
            perception_type: None,
            perception_data: None,
            perception_metadata: None,
            access_count: 0,
            return_count: 0,
            last_accessed: None,
            created_at: String::new(),
            updated_at: String::new(),
            expires_at: None,
            expired: false,
        };
        Hit { memory, score: 1.0, distance: None, matched: true, lexical: None, cosine: None, similar: Vec::new() }
    }

    fn ids(hits: &[Hit]) -> Vec<(i64, Vec<i64>)> {
        hits.iter().map(|h| (h.memory.id, h.similar.clone())).collect()
    }

    #[test]
    fn repeats_with_other_numbers_fold_into_the_best_ranked() {
        let ranked = vec![
            hit(1, "base-01 could not dock at station 3 at 14:02: the wheels slipped on the wet floor"),
            hit(2, "base-01 could not dock at station 1 at 09:40: the wheels slipped on the wet floor"),
            hit(3, "suction cup lost the wet bottle: seal broke on condensation"),
            hit(4, "base-01 could not dock at station 2 at 11:15: the wheels slipped on the wet floor"),
            hit(5, "gripper pads replaced after 300 cycles"),
        ];
        let (g, full) = group(ranked, 2);
        assert!(full);
        assert_eq!(ids(&g), vec![(1, vec![2, 4]), (3, vec![])]);
    }

    #[test]
    fn a_success_and_a_failure_stay_apart_and_short_lists_say_so() {
        let ranked = vec![
            hit(1, "grasp of the blue cup failed at 12 N"),
            hit(2, "grasp of the blue cup succeeded at 12 N"),
            hit(3, "机械臂 抓取 蓝色 杯子 失败 夹爪 打滑"),
            hit(4, "机械臂 抓取 蓝色 杯子 失败 夹爪 打滑 两次"),
        ];
        let (g, full) = group(ranked, 5);
        assert!(!full);
        assert_eq!(ids(&g), vec![(1, vec![]), (2, vec![]), (3, vec![4])]);
    }

    #[test]
    fn depth_grows_to_the_cap() {
        assert_eq!(deeper(40), Some(160));
        assert_eq!(deeper(400), Some(1000));
        assert_eq!(deeper(1000), None);
    }
}
