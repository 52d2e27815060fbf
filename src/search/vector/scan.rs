//! KNN over one collection's codes ([`super::quant`]).
//!
//! Small collections: every `hi` plane in int8, then the best few times `k`
//! re-scored with both planes. From [`BINARY_FROM`] vectors a first pass over
//! the sign bits (64 bytes per 512-d vector instead of 512) keeps the
//! `binary_candidates(k)` vectors whose signs agree most with the query's,
//! weighing each component by the query's magnitude there ([`quant::first_pass`]);
//! only those are scanned in int8 and re-scored. The pass is checked: if the
//! k-th neighbour found is not clearly nearer than the nearest of the vectors
//! the pass barely kept (its outer shell), neighbours beyond it may have been
//! missed (neighbours barely above the noise), and the pass keeps four times
//! more, up to a third of the collection; beyond, every vector is scanned.
//! The estimates are computed once per query ([`Estimates`]), so a recall that
//! asks again for more neighbours (filters rejected many) does not repeat the
//! pass.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::quant::{self, Query};
use super::{Inner, Neighbours, Part};

/// Candidates taken from the int8 scan for a top-`k` (re-scored exactly).
pub fn candidates(k: usize) -> usize {
    k * 2 + 16
}

/// Collections at least this large are first narrowed by their sign bits (at
/// 100k vectors the int8 scan alone is bound by memory bandwidth).
pub const BINARY_FROM: usize = 20_000;

/// How much nearer (in cosine) than the outer shell of the first pass the k-th
/// neighbour must be for the pass to be trusted. 0.02: at 100k (the workload
/// benchmark's file) hybrid p50 / p95 4.9 / 15.8 ms at 0.05, 3.9 / 8.8 at 0.02,
/// 3.6 / 7.8 at 0.01, recall@80 against exact 0.9953 / 0.9945 / 0.9945 (every
/// neighbour traded within 1e-3 of the k-th); 0.01 misses true neighbours of a
/// noise-level tail (`sign_bit_pass_keeps_the_true_neighbours`), 0.02 does not.
const BINARY_MARGIN: f32 = 0.02;

/// Width of the outer shell, in first-pass units (a component's weight is 0..=3).
const SHELL: u16 = 3;

/// Candidates kept by the first pass for a top-`k` (then scanned in int8).
pub fn binary_candidates(k: usize) -> usize {
    (k * 20).max(2000)
}

/// The first pass of one query over one collection: each slot's estimate and
/// how many slots have each estimate.
pub(crate) struct Estimates {
    est: Vec<u16>,
    hist: Vec<u32>,
}

impl Estimates {
    fn of(part: &Part, q: &Query) -> Estimates {
        let mut est = Vec::with_capacity(part.ids.len());
        quant::first_pass(&q.planes, &part.bits, &mut est);
        let mut hist = vec![0u32; q.planes.len() * 64 * 3 + 1];
        for &e in &est {
            hist[e as usize] += 1;
        }
        Estimates { est, hist }
    }

    /// The highest estimate that at least `m` slots reach (0: all slots).
    fn cut(&self, m: usize) -> u16 {
        let mut seen = 0usize;
        for (e, &n) in self.hist.iter().enumerate().rev() {
            seen += n as usize;
            if seen >= m {
                return e as u16;
            }
        }
        0
    }
}

/// What the passes of one query so far scanned: the slots of estimate `cut`
/// or more, with their int8 scores.
#[derive(Default)]
struct Pass {
    cut: Option<u16>,
    scored: Vec<(f32, u32)>,
}

/// Orders scan candidates by score (a min-heap keeps the best).
#[derive(PartialEq)]
struct Scored(f32, u32);
impl Eq for Scored {}
impl PartialOrd for Scored {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Scored {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0).then(o.1.cmp(&self.1))
    }
}

/// Which memories a search may return (by id); `None`: all.
pub(crate) type Admit<'a> = Option<&'a dyn Fn(i64) -> bool>;

impl Inner {
    /// Top `k` of `collection` by cosine among the memories `admit` takes;
    /// `est` keeps the first pass of `q` for later calls with the same query.
    pub(super) fn knn(
        &self,
        collection: &str,
        q: &Query,
        k: usize,
        est: &mut Option<Estimates>,
        admit: Admit,
    ) -> Neighbours {
        let Some(&p) = self.names.get(collection) else { return Vec::new() };
        let part = &self.parts[p as usize];
        let binary = part.ids.len() >= BINARY_FROM;
        self.knn_in(part, q, k, binary.then_some(est), admit)
    }

    /// With `est` (large collections), the first pass first.
    fn knn_in(
        &self,
        part: &Part,
        q: &Query,
        k: usize,
        est: Option<&mut Option<Estimates>>,
        admit: Admit,
    ) -> Neighbours {
        let n = part.ids.len();
        let m = candidates(k).min(n);
        if m == 0 {
            return Vec::new();
        }
        if let Some(est) = est {
            let est = est.get_or_insert_with(|| Estimates::of(part, q));
            // Beyond a third of the collection a shortlist (rows read out of
            // order) costs about as much as the int8 scan of all, which is then
            // made at once (at 100k, k = 80: p95 6.8 ms with the limit at an
            // eighth, 4.6 ms at a third; k = 320 p50 5.9 -> 3.8 ms).
            // A wider pass scans only the slots the narrower ones did not.
            let (mut wide, mut pass) = (binary_candidates(k), Pass::default());
            while wide <= n / 3 {
                if let Some(out) = self.by_first_pass(part, q, k, (est, wide), admit, &mut pass) {
                    return out;
                }
                wide *= 4;
            }
        }
        let mut scores = Vec::new();
        match admit {
            Some(admit) => {
                let slots: Vec<u32> = (0..n as u32).filter(|&s| admit(part.ids[s as usize])).collect();
                q.approx_slots(&part.hi, &part.scale, &slots, &mut scores);
            }
            None => {
                let mut dots = Vec::new();
                let mut approx = Vec::new();
                q.approx_all(&part.hi, &part.scale, &mut dots, &mut approx);
                scores.extend(approx.into_iter().zip(0u32..));
            }
        }
        self.rescored(part, q, top(scores.into_iter(), m), k)
    }

    /// Top `k` of the memories `ids` of `collection` (a few thousand: each is
    /// looked up, scanned in int8, the best re-scored).
    pub(super) fn knn_among(&self, collection: &str, ids: &[i64], q: &Query, k: usize) -> Neighbours {
        let Some(&p) = self.names.get(collection) else { return Vec::new() };
        let part = &self.parts[p as usize];
        let slots: Vec<u32> = ids.iter().filter_map(|&id| part.slots.get(id)).collect();
        let mut scored = Vec::new();
        q.approx_slots(&part.hi, &part.scale, &slots, &mut scored);
        self.rescored(part, q, top(scored.into_iter(), candidates(k)), k)
    }

    /// The vectors the first pass ranks in the best `wide` that `admit` takes,
    /// scanned in int8 and re-scored; `None` when the result cannot be trusted
    /// (see the module docs; fewer than `k` found is not trusted either).
    /// `pass` holds what narrower passes of the same query scanned.
    fn by_first_pass(
        &self,
        part: &Part,
        q: &Query,
        k: usize,
        (est, wide): (&Estimates, usize),
        admit: Admit,
        pass: &mut Pass,
    ) -> Option<Neighbours> {
        let cut = est.cut(wide);
        let slots: Vec<u32> = est
            .est
            .iter()
            .zip(0u32..)
            .filter(|&(&e, s)| {
                e >= cut && pass.cut.is_none_or(|c| e < c) && admit.is_none_or(|a| a(part.ids[s as usize]))
            })
            .map(|(_, s)| s)
            .collect();
        let mut scored = Vec::new();
        q.approx_slots(&part.hi, &part.scale, &slots, &mut scored);
        pass.scored.append(&mut scored);
        pass.cut = Some(cut);
        let scored = &pass.scored;
        let shell = scored
            .iter()
            .filter(|&&(_, s)| est.est[s as usize] < cut.saturating_add(SHELL))
            .fold(f32::NEG_INFINITY, |m, &(a, _)| m.max(a));
        let out = self.rescored(part, q, top(scored.iter().copied(), candidates(k)), k);
        let trusted = cut == 0
            || out.len() == k.min(part.ids.len()) && out.last().is_some_and(|&(cos, _)| cos >= shell + BINARY_MARGIN);
        trusted.then_some(out)
    }

    /// The best `k` of `slots` re-scored with the f32 query.
    fn rescored(&self, part: &Part, q: &Query, slots: Vec<u32>, k: usize) -> Neighbours {
        let d = self.dim;
        let mut out: Neighbours = slots
            .into_iter()
            .map(|s| {
                let r = s as usize * d..(s as usize + 1) * d;
                (q.rescore(&part.hi[r], part.scale[s as usize]), part.ids[s as usize])
            })
            .collect();
        out.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        out.truncate(k);
        out
    }
}

/// The `m` best-scoring slots (a min-heap of the best so far).
fn top(scored: impl Iterator<Item = (f32, u32)>, m: usize) -> Vec<u32> {
    let mut heap: BinaryHeap<Reverse<Scored>> = BinaryHeap::with_capacity(m + 1);
    let mut floor = f32::NEG_INFINITY;
    for (score, s) in scored {
        if heap.len() < m {
            heap.push(Reverse(Scored(score, s)));
            if heap.len() == m {
                floor = heap.peek().map_or(floor, |r| r.0 .0);
            }
        } else if score > floor {
            heap.pop();
            heap.push(Reverse(Scored(score, s)));
            floor = heap.peek().map_or(floor, |r| r.0 .0);
        }
    }
    heap.into_iter().map(|Reverse(Scored(_, s))| s).collect()
}

#[cfg(test)]
mod tests {
    use super::super::quant::unit;
    use super::*;
    use std::collections::HashMap;

    fn inner(dim: usize) -> Inner {
        Inner { stamp: Some("m".into()), dim, ..Inner::default() }
    }

    /// Exact f32 scores, best first.
    fn exact(all: &[(i64, Vec<f32>)], q: &[f32]) -> Vec<(f32, i64)> {
        let mut s: Vec<(f32, i64)> = all.iter().map(|(id, v)| (crate::embed::cosine(q, v), *id)).collect();
        s.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        s
    }

    /// `centre + 0.6 · noise`, as a unit vector.
    fn near(centre: &[f32], noise: &[f32]) -> Vec<f32> {
        let v: Vec<f32> = centre.iter().zip(noise).map(|(c, n)| c + 0.6 * n).collect();
        let n = v.iter().map(|a| a * a).sum::<f32>().sqrt();
        v.iter().map(|a| a / n).collect()
    }

    /// Largest error of a re-scored cosine (the int8 code's, see `quant`).
    const CODE_ERROR: f32 = 2e-3;

    /// `got` is the exact order `want` up to the codes' error: the i-th result
    /// scores (exactly) what the i-th should, and its re-scored cosine is close to
    /// its exact one. Returns how many of `want`'s ids `got` holds.
    fn ranked_like(got: &Neighbours, want: &[(f32, i64)], what: &str) -> usize {
        let score: HashMap<i64, f32> = want.iter().map(|&(s, id)| (id, s)).collect();
        for (i, (s, id)) in got.iter().enumerate() {
            let exact = score.get(id).copied().unwrap_or(f32::NEG_INFINITY);
            assert!((exact - want[i].0).abs() < CODE_ERROR, "{what}, rank {i}: {exact} vs {}", want[i].0);
            assert!((s - exact).abs() < CODE_ERROR, "{what}: re-scored {s} vs exact {exact}");
        }
        let wanted: std::collections::HashSet<i64> = want.iter().take(got.len()).map(|x| x.1).collect();
        got.iter().filter(|(_, id)| wanted.contains(id)).count()
    }

    #[test]
    fn knn_equals_exact_f32_up_to_the_code_error() {
        // Clustered vectors: many near-ties, which codes may order either way.
        let dim = 384;
        let centres: Vec<Vec<f32>> = (0..20).map(|c| unit(c, dim)).collect();
        let all: Vec<(i64, Vec<f32>)> = (0..3000)
            .map(|i| {
                let noise = unit(10_000 + i as u64, dim);
                let mut v: Vec<f32> = centres[i % 20].iter().zip(&noise).map(|(c, n)| c + 0.15 * n).collect();
                let n = v.iter().map(|a| a * a).sum::<f32>().sqrt();
                v.iter_mut().for_each(|a| *a /= n);
                (i as i64 + 1, v)
            })
            .collect();
        let mut idx = inner(dim);
        for (id, v) in &all {
            idx.insert(*id, "c", v);
        }
        // Members of a cluster are within ~1e-3 of each other's cosine, so which of
        // them make the cut at k is up to the codes (recall@k is measured on spread
        // neighbours below and by the workload benchmark on real vectors).
        for t in 0..40u64 {
            let q = &all[(t * 71) as usize % all.len()].1;
            let want = exact(&all, q);
            for k in [1, 8, 40] {
                let got = idx.knn("c", &Query::new(q), k, &mut None, None);
                assert_eq!(got.len(), k);
                ranked_like(&got, &want, &format!("query {t}, k {k}"));
            }
        }
    }

    #[test]
    fn sign_bit_pass_keeps_the_true_neighbours() {
        // 20k clustered vectors (400 clusters of 50). Ranks 51-80 are then
        // near-orthogonal to the query (cosine ~0.05, differences ~0.01), which
        // sign bits cannot rank (the pass alone found 99.3 % of them): the index
        // must notice and scan all, so nothing is lost.
        let dim = 384;
        let centres: Vec<Vec<f32>> = (0..400).map(|c| unit(c, dim)).collect();
        let mut idx = inner(dim);
        let mut all = Vec::new();
        for i in 0..20_000usize {
            let noise = unit(100_000 + i as u64, dim);
            let mut v: Vec<f32> = centres[i % 400].iter().zip(&noise).map(|(c, n)| c + 0.6 * n).collect();
            let n = v.iter().map(|a| a * a).sum::<f32>().sqrt();
            v.iter_mut().for_each(|a| *a /= n);
            idx.insert(i as i64, "c", &v);
            all.push((i as i64, v));
        }
        let part = &idx.parts[0];
        let (mut found, mut wanted, mut distrusted) = (0, 0, 0);
        for t in 0..10u64 {
            let q = unit(7_000 + t, dim);
            let q = near(&centres[(t * 37 % 400) as usize], &q);
            let ranked = exact(&all, &q);
            let want: Vec<i64> = ranked.iter().take(80).map(|x| x.1).collect();
            let q = Query::new(&q);
            let got = idx.knn_in(part, &q, 80, Some(&mut None), None);
            let est = Estimates::of(part, &q);
            distrusted += usize::from(
                idx.by_first_pass(part, &q, 80, (&est, binary_candidates(80)), None, &mut Pass::default()).is_none(),
            );
            found += ranked_like(&got, &ranked, &format!("query {t}"));
            wanted += want.len();
            let mut close: Vec<i64> = got.iter().take(50).map(|x| x.1).collect();
            let mut cluster = want[..50].to_vec();
            close.sort_unstable();
            cluster.sort_unstable();
            assert_eq!(close, cluster, "the query's own cluster");
        }
        assert!(found as f64 >= 0.99 * wanted as f64, "recall@80: {found} of {wanted}");
        assert!(distrusted > 0, "the noise-level tail is noticed");
        // Top 10 of the same data: all within the query's cluster, well above the
        // noise, so the sign-bit pass is trusted (and the order exact up to the
        // codes' error: a near-tie at rank 10 may go either way).
        let mut found = 0;
        for t in 0..10u64 {
            let q = unit(7_000 + t, dim);
            let q = near(&centres[(t * 37 % 400) as usize], &q);
            let want = exact(&all, &q);
            let q = Query::new(&q);
            let est = Estimates::of(part, &q);
            let got = idx
                .by_first_pass(part, &q, 10, (&est, binary_candidates(10)), None, &mut Pass::default())
                .expect("trusted: neighbours far above the noise");
            found += ranked_like(&got, &want, "top 10");
            // A filter that admits a third of the memories: its 10 nearest.
            let admit = |id: i64| id % 3 == 0;
            let admitted: Vec<(i64, Vec<f32>)> = all.iter().filter(|(id, _)| admit(*id)).cloned().collect();
            let want = exact(&admitted, &q.exact);
            let got = idx.knn_in(part, &q, 10, Some(&mut None), Some(&admit));
            found += ranked_like(&got, &want, "admitted");
        }
        assert!(found >= 196, "recall@10: {found} of 200");
    }

    #[test]
    fn a_wider_pass_adds_to_the_narrower_ones() {
        // The widening passes of one query scan each slot once and end with what
        // a single pass as wide finds (same slots scored, same neighbours).
        let dim = 128;
        let mut idx = inner(dim);
        for i in 0..30_000i64 {
            idx.insert(i, "c", &unit(500_000 + i as u64, dim));
        }
        let part = &idx.parts[0];
        for t in 0..5u64 {
            let q = Query::new(&unit(t, dim));
            let est = Estimates::of(part, &q);
            let admit = |id: i64| id % 2 == 0;
            for admit in [None, Some(&admit as &dyn Fn(i64) -> bool)] {
                let mut pass = Pass::default();
                let mut wide = binary_candidates(10);
                let mut last = None;
                while wide <= part.ids.len() {
                    last = idx.by_first_pass(part, &q, 10, (&est, wide), admit, &mut pass);
                    let mut once = Pass::default();
                    let alone = idx.by_first_pass(part, &q, 10, (&est, wide), admit, &mut once);
                    assert_eq!(last, alone, "query {t}, wide {wide}");
                    let (mut a, mut b) = (pass.scored.clone(), once.scored.clone());
                    a.sort_by_key(|x| x.1);
                    b.sort_by_key(|x| x.1);
                    assert_eq!(a, b, "query {t}, wide {wide}");
                    wide *= 4;
                }
                assert!(last.is_some(), "the whole collection is trusted");
            }
        }
    }

    #[test]
    fn knn_among_ranks_only_the_ids_asked_for() {
        let dim = 64;
        let all: Vec<(i64, Vec<f32>)> = (1..=500).map(|id| (id, unit(id as u64, dim))).collect();
        let mut idx = inner(dim);
        for (id, v) in &all {
            idx.insert(*id, if id % 50 == 0 { "other" } else { "c" }, v);
        }
        let among: Vec<i64> = (1..=500).filter(|id| id % 7 == 0).chain([9_999]).collect();
        let q = unit(77, dim);
        let subset: Vec<(i64, Vec<f32>)> =
            all.iter().filter(|(id, _)| among.contains(id) && id % 50 != 0).cloned().collect();
        let want = exact(&subset, &q);
        for k in [1, 10, 1000] {
            let got = idx.knn_among("c", &among, &Query::new(&q), k);
            assert_eq!(got.len(), k.min(subset.len()));
            ranked_like(&got, &want, &format!("k {k}"));
            assert!(got.iter().all(|(_, id)| subset.iter().any(|(s, _)| s == id)), "k {k}");
        }
        assert!(idx.knn_among("missing", &among, &Query::new(&q), 10).is_empty());
        // The same memories through an admit function.
        let admit = |id: i64| among.contains(&id);
        let by_admit = idx.knn("c", &Query::new(&q), 10, &mut None, Some(&admit));
        assert_eq!(by_admit, idx.knn_among("c", &among, &Query::new(&q), 10));
    }

    #[test]
    fn remove_moves_the_last_slot_and_collections_stay_apart() {
        let mut idx = inner(8);
        for id in 1..=5 {
            idx.insert(id, if id == 5 { "other" } else { "c" }, &unit(id as u64, 8));
        }
        idx.remove(2);
        idx.insert(3, "c", &unit(99, 8)); // replace
        let q = Query::new(&unit(4, 8));
        let got: Vec<i64> = idx.knn("c", &q, 10, &mut None, None).into_iter().map(|x| x.1).collect();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], 4);
        assert!(!got.contains(&2) && !got.contains(&5));
        let q = Query::new(&unit(99, 8));
        assert_eq!(idx.knn("c", &q, 1, &mut None, None)[0].1, 3);
        assert_eq!(idx.knn("other", &q, 10, &mut None, None).len(), 1);
        assert!(idx.knn("missing", &q, 10, &mut None, None).is_empty());
    }
}
