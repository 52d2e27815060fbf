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
//! missed (neighbours barely above the noise), and the pass keeps more
//! ([`wider`]), up to a third of the collection; beyond, every vector is scanned.
//!
//! What one query's passes computed is kept for its later searches ([`Scan`]):
//! the first pass is made once, and a slot scanned in int8 by one search (a
//! recall's filtered search) is not scanned again by another (its unfiltered
//! one, or a second round asking for more neighbours).

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

/// How much wider an untrusted pass's successor is: the first pass's, four
/// times (its neighbours are near the noise: a narrow step rarely ends it); the
/// later ones', twice (to stop close to where a pass is trusted). In one process
/// at 100k (the workload benchmark's file, the mix's texts, the query's vector
/// kept), the vector list of a recall p90 / p95: 4x every time, plain 1.45 /
/// 3.57 ms, filtered 4.69 / 5.84; 2x every time 1.80 / 2.54, 3.95 / 5.00; 4x
/// then 2x 1.49 / 2.29, 3.53 / 4.22 (against 1.82 / 2.59, 4.12 / 5.14 for 2x in
/// the same runs).
fn wider(wide: usize, k: usize) -> usize {
    wide * if wide == binary_candidates(k) { 4 } else { 2 }
}

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

/// What the searches of one query in one large collection have computed: the
/// first pass, and the int8 score of every slot scanned so far (each slot is
/// scanned once, whichever search asked first).
pub(crate) struct Scan {
    est: Estimates,
    /// One bit per slot: scanned.
    done: Vec<u64>,
    /// Scanned by a search with the searcher's filter: admitted by it.
    admitted: Vec<(f32, u32)>,
    /// Scanned by a search without it (admission not asked).
    others: Vec<(f32, u32)>,
}

impl Scan {
    fn new(part: &Part, q: &Query) -> Scan {
        let done = vec![0u64; part.ids.len().div_ceil(64)];
        Scan { est: Estimates::of(part, q), done, admitted: Vec::new(), others: Vec::new() }
    }

    /// Slots scanned in int8 so far.
    #[cfg(test)]
    fn scanned(&self) -> usize {
        self.admitted.len() + self.others.len()
    }
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

/// Which memories a search may return (by id); `None`: all. One searcher
/// filters with one function: what it admitted once, it admits again.
pub(crate) type Admit<'a> = Option<&'a dyn Fn(i64) -> bool>;

impl Inner {
    /// Top `k` of `collection` by cosine among the memories `admit` takes;
    /// `scan` keeps what the searches of `q` computed, for its later searches
    /// (with the same `admit` or none).
    pub(super) fn knn(
        &self,
        collection: &str,
        q: &Query,
        k: usize,
        scan: &mut Option<Scan>,
        admit: Admit,
    ) -> Neighbours {
        let Some(&p) = self.names.get(collection) else { return Vec::new() };
        let part = &self.parts[p as usize];
        let binary = part.ids.len() >= BINARY_FROM;
        self.knn_in(part, q, k, binary.then_some(scan), admit)
    }

    /// With `scan` (large collections), the first pass first.
    fn knn_in(&self, part: &Part, q: &Query, k: usize, scan: Option<&mut Option<Scan>>, admit: Admit) -> Neighbours {
        let n = part.ids.len();
        let m = candidates(k).min(n);
        if m == 0 {
            return Vec::new();
        }
        if let Some(scan) = scan {
            let scan = scan.get_or_insert_with(|| Scan::new(part, q));
            // Beyond a third of the collection a shortlist (rows read out of
            // order) costs about as much as the int8 scan of all, which is then
            // made at once (at 100k, k = 80: p95 6.8 ms with the limit at an
            // eighth, 4.6 ms at a third; k = 320 p50 5.9 -> 3.8 ms).
            // A wider pass scans only the slots not scanned before.
            let (mut wide, mut cut) = (binary_candidates(k), None);
            while wide <= n / 3 {
                let (out, trusted) = self.by_first_pass(part, q, k, wide, admit, scan, &mut cut);
                if trusted {
                    return out;
                }
                wide = wider(wide, k);
            }
            if admit.is_some() {
                // Every admitted slot (estimate 0 and up): exact.
                return self.by_first_pass(part, q, k, n, admit, scan, &mut cut).0;
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
    /// scanned in int8 (those not scanned before) and re-scored, and whether the
    /// result can be trusted (see the module docs; fewer than `k` found is not
    /// trusted either). `cut` is where this search's previous pass stopped.
    #[allow(clippy::too_many_arguments)]
    fn by_first_pass(
        &self,
        part: &Part,
        q: &Query,
        k: usize,
        wide: usize,
        admit: Admit,
        scan: &mut Scan,
        cut: &mut Option<u16>,
    ) -> (Neighbours, bool) {
        let now = scan.est.cut(wide);
        let before = cut.replace(now);
        let mut fresh = Vec::new();
        // Every estimate is read again: sorting the slots by estimate once
        // costs about three such reads (at 100k), and most searches make one pass.
        let Scan { est, done, admitted, others } = scan;
        for (&e, s) in est.est.iter().zip(0u32..) {
            let (w, b) = (s as usize / 64, 1u64 << (s % 64));
            if e >= now
                && before.is_none_or(|c| e < c)
                && done[w] & b == 0
                && admit.is_none_or(|a| a(part.ids[s as usize]))
            {
                done[w] |= b;
                fresh.push(s);
            }
        }
        let mut scored = Vec::new();
        q.approx_slots(&part.hi, &part.scale, &fresh, &mut scored);
        match admit {
            Some(_) => admitted.append(&mut scored),
            None => others.append(&mut scored),
        }
        // This search's candidates: the slots of estimate `now` or more that it
        // admits, whichever search scanned them (exactly what it would have
        // scanned alone: sharing changes what is computed, not what is found).
        let reached = |&&(_, s): &&(f32, u32)| est.est[s as usize] >= now;
        let mut mine: Vec<(f32, u32)> = admitted.iter().filter(reached).copied().collect();
        match admit {
            Some(a) => mine.extend(others.iter().filter(reached).filter(|&&(_, s)| a(part.ids[s as usize]))),
            None => mine.extend(others.iter().filter(reached)),
        }
        let shell = mine
            .iter()
            .filter(|&&(_, s)| est.est[s as usize] < now.saturating_add(SHELL))
            .fold(f32::NEG_INFINITY, |m, &(a, _)| m.max(a));
        let out = self.rescored(part, q, top(mine.into_iter(), candidates(k)), k);
        let trusted = now == 0
            || out.len() == k.min(part.ids.len()) && out.last().is_some_and(|&(cos, _)| cos >= shell + BINARY_MARGIN);
        (out, trusted)
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
            let mut scan = Scan::new(part, &q);
            distrusted +=
                usize::from(!idx.by_first_pass(part, &q, 80, binary_candidates(80), None, &mut scan, &mut None).1);
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
            let mut scan = Scan::new(part, &q);
            let (got, trusted) = idx.by_first_pass(part, &q, 10, binary_candidates(10), None, &mut scan, &mut None);
            assert!(trusted, "trusted: neighbours far above the noise");
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
        // The widening passes of one search scan each slot once and end with what
        // a single pass as wide finds (same slots scanned, same neighbours, same
        // trust).
        let dim = 128;
        let mut idx = inner(dim);
        for i in 0..30_000i64 {
            idx.insert(i, "c", &unit(500_000 + i as u64, dim));
        }
        let part = &idx.parts[0];
        for t in 0..5u64 {
            let q = Query::new(&unit(t, dim));
            let admit = |id: i64| id % 2 == 0;
            for admit in [None, Some(&admit as &dyn Fn(i64) -> bool)] {
                let (mut scan, mut cut) = (Scan::new(part, &q), None);
                let mut wide = binary_candidates(10);
                let mut last = None;
                while wide <= part.ids.len() {
                    let got = idx.by_first_pass(part, &q, 10, wide, admit, &mut scan, &mut cut);
                    let mut once = Scan::new(part, &q);
                    let alone = idx.by_first_pass(part, &q, 10, wide, admit, &mut once, &mut None);
                    assert_eq!(got, alone, "query {t}, wide {wide}");
                    let slots = |s: &Scan| {
                        let mut v: Vec<(f32, u32)> = s.admitted.iter().chain(&s.others).copied().collect();
                        v.sort_by_key(|x| x.1);
                        v
                    };
                    assert_eq!(slots(&scan), slots(&once), "query {t}, wide {wide}");
                    last = Some(got.1);
                    wide = wider(wide, 10);
                }
                assert_eq!(last, Some(true), "the whole collection is trusted");
            }
        }
    }

    #[test]
    fn searches_of_one_query_share_what_they_scanned() {
        // A recall's filtered search, then its unfiltered one (and the other way
        // round, and a second round asking for more): on one `Scan` each finds
        // what it finds alone, and no slot is scanned twice.
        let dim = 128;
        let centres: Vec<Vec<f32>> = (0..300).map(|c| unit(900 + c, dim)).collect();
        let mut idx = inner(dim);
        for i in 0..40_000usize {
            let v = near(&centres[i % 300], &unit(800_000 + i as u64, dim));
            idx.insert(i as i64, "c", &v);
        }
        let part = &idx.parts[0];
        let mut shared_total = 0;
        let mut alone_total = 0;
        for t in 0..8u64 {
            let q = Query::new(&near(&centres[(t * 41 % 300) as usize], &unit(70 + t, dim)));
            let share = [2, 3, 10][t as usize % 3];
            let admit = move |id: i64| id % share == 0;
            let admit = Some(&admit as &dyn Fn(i64) -> bool);
            for order in [[(50, admit), (40, None), (200, admit)], [(40, None), (50, admit), (160, None)]] {
                let mut scan = None;
                let mut union = std::collections::HashSet::new();
                for (k, a) in order {
                    let got = idx.knn_in(part, &q, k, Some(&mut scan), a);
                    let mut own = None;
                    assert_eq!(got, idx.knn_in(part, &q, k, Some(&mut own), a), "query {t}, k {k}");
                    let own = own.expect("a large collection's scan");
                    union.extend(own.admitted.iter().chain(&own.others).map(|x| x.1));
                    alone_total += own.scanned();
                }
                let scan = scan.expect("a large collection's scan");
                let done: u32 = scan.done.iter().map(|w| w.count_ones()).sum();
                assert_eq!(scan.scanned(), done as usize, "each slot scanned once");
                assert!(scan.scanned() <= union.len(), "query {t}: {} > {}", scan.scanned(), union.len());
                shared_total += scan.scanned();
            }
        }
        assert!(shared_total < alone_total, "{shared_total} slots scanned shared, {alone_total} alone");
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
