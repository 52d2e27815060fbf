//! In-process vector index of the stored vectors, one per open handle.
//!
//! sqlite-vec's `vec0` table stays the store of record, but its KNN costs about
//! 0.5–0.7 µs per stored vector (4–7 ms at 10k, 52–74 ms at 100k on the
//! benchmark machine) and a read of one vector by rowid about 250 µs. This index
//! keeps every vector as 16-bit codes in two int8 planes plus its sign bits
//! ([`quant`]): a KNN scans the int8 plane (one byte per dimension, SIMD)
//! and re-scores a few times `k` candidates with both planes, which ranks as f32
//! does. Large collections are first narrowed by the sign bits, when that pass
//! can be trusted ([`BINARY_FROM`]).
//!
//! Synchronisation follows the BM25 index ([`super::text`]): every write that
//! adds, replaces or drops a vector stamps the row with the next `rev`; a reader
//! compares `max(rev)` with the index's and applies the newer rows in its own
//! read transaction. Vectors this handle wrote come from a cache filled when
//! their transaction committed; others' are read from sqlite-vec, and when many
//! rows changed (or the model stamp did) the index is reloaded from sqlite-vec's
//! chunk tables in one pass (5–9 µs per vector).
//!
//! A write transaction that searches vectors (cosine dedup) syncs the index
//! before its own first write, so the index then holds exactly the committed
//! state and the transaction's own new vectors are searched from its staging
//! list ([`VectorIndex::stage`]).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::thread::ThreadId;

use parking_lot::{Mutex, RwLock};
use rusqlite::Connection;

pub mod quant;

use crate::embed::ModelStamp;
use crate::error::{Error, Result};
use crate::store::vectors;
use quant::Query;

/// Changed rows whose vectors would each be read from sqlite-vec above which a
/// sync reloads the whole index instead.
const RELOAD_AT: usize = 128;
/// Most vectors kept for the next sync (beyond: read back from sqlite-vec).
const FRESH_MAX: usize = 16_384;

/// Candidates taken from the int8 scan for a top-`k` (re-scored exactly).
pub fn candidates(k: usize) -> usize {
    k * 2 + 16
}

/// Collections at least this large are first narrowed by Hamming distance of
/// sign bits (48 bytes per 384-d vector instead of 384: at 100k vectors the
/// int8 scan alone is bound by memory bandwidth).
pub const BINARY_FROM: usize = 20_000;

/// How much nearer (in cosine) than the outer shell of the sign-bit pass the
/// k-th neighbour must be for the pass to be trusted.
const BINARY_MARGIN: f32 = 0.05;

/// Candidates kept by the sign-bit pass for a top-`k` (then scanned in int8).
pub fn binary_candidates(k: usize) -> usize {
    (k * 60).max(3000)
}

/// Vectors of one collection, slot by slot.
#[derive(Default)]
struct Part {
    ids: Vec<i64>,
    bits: Vec<u64>,
    hi: Vec<i8>,
    lo: Vec<i8>,
    scale: Vec<f32>,
}

#[derive(Default)]
struct Inner {
    /// Stamp of the model whose vectors are loaded; `None` before the first sync.
    stamp: Option<String>,
    dim: usize,
    rev: i64,
    parts: Vec<Part>,
    names: HashMap<String, u32>,
    /// id → (part, slot)
    slots: HashMap<i64, (u32, u32)>,
}

/// A vector written by an uncommitted or recently committed transaction.
struct Written {
    id: i64,
    rev: i64,
    collection: String,
    vector: Vec<f32>,
}

/// The vector index of one handle. Thread-safe: searching takes a read lock,
/// syncing a write lock.
#[derive(Default)]
pub struct VectorIndex {
    inner: RwLock<Inner>,
    /// Committed writes of this handle not yet applied, by id.
    fresh: Mutex<HashMap<i64, Written>>,
    /// Writes of the write transaction each thread has open.
    staged: Mutex<HashMap<ThreadId, Vec<Written>>>,
}

/// Where a search looks for neighbours: a handle's vector index, for the vectors
/// of `model` in one collection.
pub struct Nearest<'a> {
    pub index: &'a VectorIndex,
    pub model: &'a ModelStamp,
    pub collection: &'a str,
}

impl Nearest<'_> {
    /// The `k` nearest to `query` (see [`VectorIndex::nearest`]). The caller
    /// synced the index in this transaction, so not holding the model's vectors
    /// is a bug, reported as an internal error.
    pub fn knn(&self, query: &[f32], k: usize) -> Result<Neighbours> {
        self.index
            .nearest(self.model, self.collection, query, k)
            .ok_or_else(|| Error::internal("vector index searched before it was synced"))
    }
}

/// Scores `(cosine, id)`, best first.
pub type Neighbours = Vec<(f32, i64)>;

impl VectorIndex {
    /// Applies every vector change newer than the index, or reloads it when the
    /// model stamp changed or many rows did. `conn` is the caller's transaction
    /// (a read transaction, or a write transaction before its own first write).
    pub fn sync(&self, conn: &Connection, model: &ModelStamp) -> Result<()> {
        let head: i64 =
            conn.prepare_cached("SELECT coalesce(max(rev), 0) FROM memories")?.query_row([], |r| r.get(0))?;
        self.sync_to(conn, model, head)
    }

    /// [`Self::sync`] up to `head` (a write transaction's committed rev: see
    /// `Db::committed_rev`); rows of a later rev are not applied.
    pub fn sync_to(&self, conn: &Connection, model: &ModelStamp, head: i64) -> Result<()> {
        let stamp = model.encode();
        let current = |i: &Inner| i.stamp.as_deref() == Some(stamp.as_str()) && i.rev >= head;
        if current(&self.inner.read()) {
            return Ok(());
        }
        let mut inner = self.inner.write();
        if current(&inner) {
            return Ok(()); // another thread synced meanwhile
        }
        let mut fresh = self.fresh.lock();
        let loaded = inner.stamp.as_deref() == Some(stamp.as_str());
        let changed = if loaded { Some(vectors::changed_since(conn, inner.rev, head)?) } else { None };
        let lookups = changed.as_ref().map_or(usize::MAX, |c| {
            c.iter().filter(|c| c.has_vector && fresh.get(&c.id).is_none_or(|w| w.rev != c.rev)).count()
        });
        if lookups > RELOAD_AT {
            *inner = Inner { stamp: Some(stamp), dim: model.dim, ..Inner::default() };
            let inner = &mut *inner;
            vectors::for_each_stored(conn, model.dim, |id, coll, v| inner.insert(id, coll, v))?;
            // The chunk tables also hold this transaction's own uncommitted vectors
            // (those written after `head`): they are staged, not part of the index.
            for id in vectors::changed_since(conn, head, i64::MAX)?.into_iter().map(|c| c.id) {
                inner.remove(id);
            }
        } else {
            for c in changed.unwrap_or_default() {
                inner.remove(c.id);
                if !c.has_vector {
                    continue;
                }
                match fresh.remove(&c.id).filter(|w| w.rev == c.rev) {
                    Some(w) => inner.insert(c.id, &c.collection, &w.vector),
                    None => {
                        if let Some(v) = vectors::get(conn, c.id)? {
                            inner.insert(c.id, &c.collection, &v);
                        }
                    }
                }
            }
        }
        inner.rev = head;
        fresh.retain(|_, w| w.rev > head);
        Ok(())
    }

    /// The `k` stored vectors of `collection` nearest to the unit vector `query`,
    /// as of the last sync plus the calling thread's staged writes; `None` when
    /// the index does not hold `model`'s vectors (not synced yet).
    pub fn nearest(&self, model: &ModelStamp, collection: &str, query: &[f32], k: usize) -> Option<Neighbours> {
        let q = Query::new(query);
        let mut out = {
            let inner = self.inner.read();
            if inner.stamp.as_deref() != Some(model.encode().as_str()) {
                return None;
            }
            inner.knn(collection, &q, k)
        };
        let staged = self.staged.lock();
        if let Some(own) = staged.get(&std::thread::current().id()) {
            for w in own.iter().filter(|w| w.collection == collection) {
                out.retain(|&(_, id)| id != w.id);
                out.push((crate::embed::cosine(query, &w.vector), w.id));
            }
            out.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
            out.truncate(k);
        }
        Some(out)
    }

    /// The vector of memory `id` as of the last sync plus the calling thread's
    /// staged writes (decoded from its 16-bit codes when it comes from the index).
    pub fn vector(&self, id: i64) -> Option<Vec<f32>> {
        if let Some(own) = self.staged.lock().get(&std::thread::current().id()) {
            if let Some(w) = own.iter().rev().find(|w| w.id == id) {
                return Some(w.vector.clone());
            }
        }
        let inner = self.inner.read();
        let &(p, s) = inner.slots.get(&id)?;
        let (part, d, s) = (&inner.parts[p as usize], inner.dim, s as usize);
        Some(quant::decode(&part.hi[s * d..(s + 1) * d], &part.lo[s * d..(s + 1) * d], part.scale[s]))
    }

    /// Records a vector written (with `rev`) by the calling thread's open write
    /// transaction.
    pub fn stage(&self, id: i64, rev: i64, collection: &str, vector: &[f32]) {
        let w = Written { id, rev, collection: collection.to_string(), vector: vector.to_vec() };
        self.staged.lock().entry(std::thread::current().id()).or_default().push(w);
    }

    /// How many vectors the calling thread has staged (for [`Self::truncate_staged`]).
    pub fn staged_mark(&self) -> usize {
        self.staged.lock().get(&std::thread::current().id()).map_or(0, Vec::len)
    }

    /// Drops the calling thread's vectors staged after `mark` (a write rolled back
    /// to its savepoint).
    pub fn truncate_staged(&self, mark: usize) {
        if let Some(own) = self.staged.lock().get_mut(&std::thread::current().id()) {
            own.truncate(mark);
        }
    }

    /// Ends the calling thread's write transaction: on commit its staged vectors
    /// are kept for the next sync, on rollback they are dropped.
    pub fn finish(&self, committed: bool) {
        let Some(own) = self.staged.lock().remove(&std::thread::current().id()) else { return };
        if !committed || self.inner.read().stamp.is_none() {
            return;
        }
        let mut fresh = self.fresh.lock();
        for w in own {
            if fresh.len() >= FRESH_MAX && !fresh.contains_key(&w.id) {
                break;
            }
            fresh.insert(w.id, w);
        }
    }

    /// Whether the index holds `model`'s vectors (was synced with it).
    pub fn holds(&self, model: &ModelStamp) -> bool {
        self.inner.read().stamp.as_deref() == Some(model.encode().as_str())
    }

    /// Stored vectors in the index (for tests and diagnostics).
    pub fn len(&self) -> usize {
        self.inner.read().slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

impl Inner {
    fn insert(&mut self, id: i64, collection: &str, v: &[f32]) {
        if v.len() != self.dim {
            return; // not this model's vector (cannot happen with a matching stamp)
        }
        self.remove(id);
        let next = self.parts.len() as u32;
        let p = *self.names.entry(collection.to_string()).or_insert(next);
        if p == next {
            self.parts.push(Part::default());
        }
        let part = &mut self.parts[p as usize];
        let code = quant::encode(v);
        self.slots.insert(id, (p, part.ids.len() as u32));
        part.ids.push(id);
        part.bits.extend(quant::sign_bits(v));
        part.hi.extend_from_slice(&code.hi);
        part.lo.extend_from_slice(&code.lo);
        part.scale.push(code.scale);
    }

    /// Drops the vector of `id` (the last slot of its part moves into its place).
    fn remove(&mut self, id: i64) {
        let Some((p, s)) = self.slots.remove(&id) else { return };
        let (d, w, s) = (self.dim, self.dim.div_ceil(64), s as usize);
        let part = &mut self.parts[p as usize];
        let last = part.ids.len() - 1;
        if s != last {
            part.bits.copy_within(last * w..(last + 1) * w, s * w);
            part.hi.copy_within(last * d..(last + 1) * d, s * d);
            part.lo.copy_within(last * d..(last + 1) * d, s * d);
            part.scale[s] = part.scale[last];
            part.ids[s] = part.ids[last];
            self.slots.insert(part.ids[s], (p, s as u32));
        }
        part.ids.pop();
        part.scale.pop();
        part.bits.truncate(last * w);
        part.hi.truncate(last * d);
        part.lo.truncate(last * d);
    }

    /// Top `k` of `collection` by cosine: int8 scan (after a sign-bit pass in
    /// large collections), then re-scored candidates.
    fn knn(&self, collection: &str, q: &Query, k: usize) -> Neighbours {
        let Some(&p) = self.names.get(collection) else { return Vec::new() };
        self.knn_in(&self.parts[p as usize], q, k, self.parts[p as usize].ids.len() >= BINARY_FROM)
    }

    fn knn_in(&self, part: &Part, q: &Query, k: usize, binary: bool) -> Neighbours {
        let m = candidates(k).min(part.ids.len());
        if m == 0 {
            return Vec::new();
        }
        if binary && binary_candidates(k) < part.ids.len() {
            if let Some(out) = self.knn_by_sign_bits(part, q, k) {
                return out;
            }
        }
        let (mut dots, mut scores) = (Vec::new(), Vec::new());
        q.approx_all(&part.hi, &part.scale, &mut dots, &mut scores);
        self.rescored(part, q, top(scores.into_iter().zip(0u32..), m), k)
    }

    /// The sign-bit pass, then int8 and re-scoring of what it kept; `None` when
    /// its result cannot be trusted. The pass keeps every vector within Hamming
    /// distance `cut`; the ones just inside (the outer shell, `cut - 1..=cut`)
    /// show how near the vectors beyond it can be. If the k-th neighbour found
    /// is not clearly nearer than the nearest of the shell, true neighbours may
    /// have been left out (neighbours barely above the noise, e.g. random data).
    fn knn_by_sign_bits(&self, part: &Part, q: &Query, k: usize) -> Option<Neighbours> {
        let d = self.dim;
        let (near, cut) = nearest_by_hamming(part, q, binary_candidates(k));
        let mut shell = f32::NEG_INFINITY;
        let scored = near.into_iter().map(|(s, h)| {
            let a = q.approx(&part.hi[s as usize * d..(s as usize + 1) * d], part.scale[s as usize]);
            if h + 1 >= cut {
                shell = shell.max(a);
            }
            (a, s)
        });
        let best = top(scored, candidates(k));
        let out = self.rescored(part, q, best, k);
        let trusted =
            out.len() == k.min(part.ids.len()) && out.last().is_some_and(|&(cos, _)| cos >= shell + BINARY_MARGIN);
        trusted.then_some(out)
    }

    /// The best `k` of `slots` re-scored with both planes.
    fn rescored(&self, part: &Part, q: &Query, slots: Vec<u32>, k: usize) -> Neighbours {
        let d = self.dim;
        let mut out: Neighbours = slots
            .into_iter()
            .map(|s| {
                let r = s as usize * d..(s as usize + 1) * d;
                (q.rescore(&part.hi[r.clone()], &part.lo[r], part.scale[s as usize]), part.ids[s as usize])
            })
            .collect();
        out.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        out.truncate(k);
        out
    }
}

/// As (slot, distance), with the largest distance kept.
fn nearest_by_hamming(part: &Part, q: &Query, m: usize) -> (Vec<(u32, usize)>, usize) {
    let mut dist = Vec::new();
    quant::hamming_rows(&q.bits, &part.bits, &mut dist);
    let mut hist = vec![0usize; q.bits.len() * 64 + 1];
    for &x in &dist {
        hist[x as usize] += 1;
    }
    let (mut cut, mut seen) = (0, 0);
    while cut < hist.len() && seen + hist[cut] < m {
        seen += hist[cut];
        cut += 1;
    }
    (dist.iter().zip(0u32..).filter(|(&x, _)| x as usize <= cut).map(|(&x, s)| (s, x as usize)).collect(), cut)
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
    use super::quant::unit;
    use super::*;

    fn inner(dim: usize) -> Inner {
        Inner { stamp: Some("m".into()), dim, ..Inner::default() }
    }

    /// Exact f32 scores, best first.
    fn exact(all: &[(i64, Vec<f32>)], q: &[f32]) -> Vec<(f32, i64)> {
        let mut s: Vec<(f32, i64)> = all.iter().map(|(id, v)| (crate::embed::cosine(q, v), *id)).collect();
        s.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        s
    }

    #[test]
    fn knn_equals_exact_f32_on_near_neighbours() {
        // Clustered vectors: many near-ties, where int8 alone would misorder.
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
        for t in 0..40u64 {
            let q = &all[(t * 71) as usize % all.len()].1;
            let want = exact(&all, q);
            let score: HashMap<i64, f32> = want.iter().map(|&(s, id)| (id, s)).collect();
            for k in [1, 8, 40] {
                let got = idx.knn("c", &Query::new(q), k);
                assert_eq!(got.len(), k);
                // Same order as f32 up to ties closer than 1e-5 (f32 rounding of the
                // sum itself is ~1e-7): the i-th result scores what the i-th should.
                for (i, (s, id)) in got.iter().enumerate() {
                    assert!(
                        (score[id] - want[i].0).abs() < 1e-5,
                        "query {t}, k {k}, rank {i}: {} vs {}",
                        score[id],
                        want[i].0
                    );
                    assert!((s - score[id]).abs() < 1e-5, "re-scored {s} vs exact {}", score[id]);
                }
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
            let q: Vec<f32> = centres[(t * 37 % 400) as usize].iter().zip(&q).map(|(c, n)| c + 0.6 * n).collect();
            let want: Vec<i64> = exact(&all, &q).into_iter().take(80).map(|x| x.1).collect();
            let got = idx.knn_in(part, &Query::new(&q), 80, true);
            distrusted += usize::from(idx.knn_by_sign_bits(part, &Query::new(&q), 80).is_none());
            found += got.iter().filter(|(_, id)| want.contains(id)).count();
            wanted += want.len();
            let close: Vec<i64> = got.iter().take(50).map(|x| x.1).collect();
            assert_eq!(close, want[..50], "the query's own cluster, in order");
        }
        assert_eq!(found, wanted, "recall@80");
        assert!(distrusted > 0, "the noise-level tail is noticed");
        // Top 10 of the same data: all within the query's cluster, well above the
        // noise, so the sign-bit pass is trusted and exact.
        for t in 0..10u64 {
            let q = unit(7_000 + t, dim);
            let q: Vec<f32> = centres[(t * 37 % 400) as usize].iter().zip(&q).map(|(c, n)| c + 0.6 * n).collect();
            let want: Vec<i64> = exact(&all, &q).into_iter().take(10).map(|x| x.1).collect();
            let got = idx.knn_by_sign_bits(part, &Query::new(&q), 10).expect("trusted: neighbours far above the noise");
            assert_eq!(got.iter().map(|x| x.1).collect::<Vec<_>>(), want);
        }
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
        let got: Vec<i64> = idx.knn("c", &q, 10).into_iter().map(|x| x.1).collect();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], 4);
        assert!(!got.contains(&2) && !got.contains(&5));
        let q = Query::new(&unit(99, 8));
        assert_eq!(idx.knn("c", &q, 1)[0].1, 3);
        assert_eq!(idx.knn("other", &q, 10).len(), 1);
        assert!(idx.knn("missing", &q, 10).is_empty());
    }
}
