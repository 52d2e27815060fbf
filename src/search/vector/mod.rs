//! In-process vector index of the stored vectors, one per open handle.
//!
//! sqlite-vec's `vec0` table stays the store of record, but its KNN costs about
//! 0.5–0.7 µs per stored vector (4–7 ms at 10k, 52–74 ms at 100k on the
//! benchmark machine) and a read of one vector by rowid about 250 µs. This index
//! keeps every vector as an int8 code plus its sign bits ([`quant`]): a KNN
//! scans the codes (one byte per dimension, SIMD) and re-scores a few times `k`
//! candidates with the f32 query. Large collections are first narrowed by the sign bits (`scan`,
//! [`BINARY_FROM`]).
//!
//! The index is stored with the other index snapshots when the handle closes
//! (`snapshot`) and loaded from there by the next handle's first sync, then
//! brought up to date by `rev` like any index behind the file.
//!
//! Synchronisation follows the BM25 index ([`super::text`]): every write that
//! adds, replaces or drops a vector stamps the row with the next `rev`; a reader
//! compares `max(rev)` with the index's and applies the newer rows in its own
//! read transaction. Vectors this handle wrote come from a cache filled when
//! their transaction committed; others' are read from sqlite-vec, and when many
//! rows changed (or the model stamp did, and no snapshot of the model's vectors
//! is stored) the index is reloaded from sqlite-vec's chunk tables in one pass
//! (5–9 µs per vector).
//!
//! A write transaction that searches vectors (cosine dedup) syncs the index
//! before its own first write, so the index then holds exactly the committed
//! state and the transaction's own new vectors are searched from its staging
//! list ([`VectorIndex::stage`]).

use std::collections::HashMap;
use std::thread::ThreadId;

use parking_lot::{Mutex, RwLock};
use rusqlite::Connection;

pub mod quant;
mod scan;
pub mod simd;
mod snapshot;

use super::text::ids::IdMap;
use crate::embed::ModelStamp;
use crate::error::{Error, Result};
use crate::store::vectors;
use quant::Query;
pub use scan::{binary_candidates, candidates, BINARY_FROM};
use scan::{Admit, Scan};

/// Changed rows whose vectors would each be read from sqlite-vec above which a
/// sync reloads the whole index instead.
const RELOAD_AT: usize = 128;
/// Most vectors kept for the next sync (beyond: read back from sqlite-vec).
const FRESH_MAX: usize = 16_384;
/// Bytes [`VectorIndex::warm`] reads between two checks of its stop condition.
pub const WARM_STEP: usize = 64 * 1024;
/// Most bytes [`VectorIndex::warm`] reads: more would not stay in the caches of
/// the CPUs this runs on (32 MiB of L3 at most, shared), and the search reads
/// from memory at the same rate.
pub const WARM_MAX: usize = 16 << 20;

/// Asks the kernel to back `v`'s allocation with 2 MiB pages where it can (a
/// hint: transparent huge pages in `madvise` mode, the usual default, give them
/// only to ranges asked for; pages already touched are left as they are). A
/// query's first pass reads every sign bit, 64 MB at 1M vectors: with 4 KiB pages
/// that is 16k page translations a query, costly in a virtual machine.
fn prefer_huge_pages<T>(v: &Vec<T>) {
    const HUGE: usize = 2 << 20;
    let start = v.as_ptr() as usize;
    let end = start + v.capacity() * std::mem::size_of::<T>();
    let (from, to) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
    #[cfg(target_os = "linux")]
    if to > from {
        // SAFETY: an advice on whole pages inside `v`'s own allocation; it does
        // not change their contents or their mapping.
        unsafe { libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE) };
    }
}

/// Vectors of one collection, slot by slot.
#[derive(Default)]
struct Part {
    ids: Vec<i64>,
    bits: Vec<u64>,
    hi: Vec<i8>,
    scale: Vec<f32>,
    /// id → slot (4 bytes an id: a `HashMap<i64, (u32, u32)>` over all parts
    /// was 36 MB at 1M).
    slots: IdMap,
}

#[derive(Default)]
struct Inner {
    /// Stamp of the model whose vectors are loaded; `None` before the first sync.
    stamp: Option<String>,
    dim: usize,
    rev: i64,
    /// The stored snapshot was loaded into this index or saved from it.
    snapshot: bool,
    parts: Vec<Part>,
    names: HashMap<String, u32>,
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
        Ok(self.searcher(query, None)?.knn(k))
    }

    /// A search for neighbours of `query` that can be asked for more
    /// ([`Searcher::knn`]), and for those `admit` takes ([`Searcher::knn_filtered`]);
    /// same conditions as [`Self::knn`].
    pub fn searcher<'q>(&self, query: &'q [f32], admit: Option<&'q dyn Fn(i64) -> bool>) -> Result<Searcher<'_, 'q>>
    where
        Self: 'q,
    {
        self.index
            .searcher(self.model, self.collection, query, admit)
            .ok_or_else(|| Error::internal("vector index searched before it was synced"))
    }
}

/// The neighbours of one query, of all memories or of those its filter admits,
/// asked for as often as a recall needs (more each time other conditions
/// rejected many): the index stays as it was at the first call (its read lock
/// is held: drop the searcher before anything that may sync), the first pass
/// over sign bits is made once, and a vector scanned for one search is not
/// scanned again for another.
pub struct Searcher<'a, 'q> {
    index: &'a VectorIndex,
    inner: parking_lot::RwLockReadGuard<'a, Inner>,
    collection: &'a str,
    query: &'q [f32],
    q: Query,
    /// The filter of [`Self::knn_filtered`] (a context filter's columns).
    admit: Admit<'q>,
    scan: Option<Scan>,
}

impl Searcher<'_, '_> {
    /// The `k` nearest, as of the last sync plus the calling thread's staged writes.
    pub fn knn(&mut self, k: usize) -> Neighbours {
        let out = self.inner.knn(self.collection, &self.q, k, &mut self.scan, None);
        self.with_staged(out, k, |_| true)
    }

    /// The `k` nearest of the memories the searcher's filter admits (all
    /// without one), as [`Self::knn`].
    pub fn knn_filtered(&mut self, k: usize) -> Neighbours {
        let out = self.inner.knn(self.collection, &self.q, k, &mut self.scan, self.admit);
        let admit = self.admit;
        self.with_staged(out, k, |id| admit.is_none_or(|a| a(id)))
    }

    /// The `k` nearest among the memories `ids` (a few thousand: a selective
    /// filter's), as [`Self::knn`].
    pub fn knn_among(&self, ids: &[i64], k: usize) -> Neighbours {
        let out = self.inner.knn_among(self.collection, ids, &self.q, k);
        self.with_staged(out, k, |id| ids.contains(&id))
    }

    /// The vector of memory `id`, as [`VectorIndex::vector`] but under the
    /// searcher's read lock (which the calling thread must not take again).
    pub fn vector(&self, id: i64) -> Option<Vec<f32>> {
        self.index.vector_in(&self.inner, id)
    }

    /// `out` with the calling thread's staged vectors whose ids `among` takes.
    fn with_staged(&self, mut out: Neighbours, k: usize, among: impl Fn(i64) -> bool) -> Neighbours {
        let staged = self.index.staged.lock();
        if let Some(own) = staged.get(&std::thread::current().id()) {
            for w in own.iter().filter(|w| w.collection == self.collection) {
                out.retain(|&(_, id)| id != w.id);
                if among(w.id) {
                    out.push((crate::embed::cosine(self.query, &w.vector), w.id));
                }
            }
            out.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
            out.truncate(k);
        }
        out
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
        if inner.stamp.as_deref() != Some(stamp.as_str()) {
            if let Some(stored) = snapshot::load(conn, &stamp, model.dim, head)? {
                *inner = stored; // then brought up to date like any index behind
            }
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
        Some(self.searcher(model, collection, query, None)?.knn(k))
    }

    /// A [`Searcher`] for `query` in `collection`; `None` as for [`Self::nearest`].
    pub fn searcher<'a, 'q>(
        &'a self,
        model: &ModelStamp,
        collection: &'a str,
        query: &'q [f32],
        admit: Admit<'q>,
    ) -> Option<Searcher<'a, 'q>> {
        let inner = self.inner.read();
        if inner.stamp.as_deref() != Some(model.encode().as_str()) {
            return None;
        }
        Some(Searcher { index: self, inner, collection, query, q: Query::new(query), admit, scan: None })
    }

    /// The vector of memory `id` as of the last sync plus the calling thread's
    /// staged writes (decoded from its int8 code when it comes from the index).
    pub fn vector(&self, id: i64) -> Option<Vec<f32>> {
        self.vector_in(&self.inner.read(), id)
    }

    /// [`Self::vector`] with the index's read lock already held (`inner`): a
    /// thread must not take it twice, since a sync waiting for the write lock
    /// blocks new readers.
    fn vector_in(&self, inner: &Inner, id: i64) -> Option<Vec<f32>> {
        if let Some(own) = self.staged.lock().get(&std::thread::current().id()) {
            if let Some(w) = own.iter().rev().find(|w| w.id == id) {
                return Some(w.vector.clone());
            }
        }
        let (p, s) = inner.slot(id)?;
        let (part, d, s) = (&inner.parts[p], inner.dim, s as usize);
        Some(quant::decode(&part.hi[s * d..(s + 1) * d], part.scale[s]))
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

    /// Drops what the index holds, for a handle that is closing once its copy
    /// is stored: the memory goes back before the next index is encoded. A later
    /// sync would build it again from the rows.
    pub fn release(&self) {
        *self.inner.write() = Inner::default();
        self.fresh.lock().clear();
    }

    /// Stores the index in the database (`conn` in a write transaction) if it
    /// was synced and holds the vectors of the model the file is stamped with,
    /// unless the snapshot stored is this index's and fewer than `min_changes`
    /// rows behind. Returns whether it wrote.
    pub fn save(&self, conn: &Connection, min_changes: i64) -> Result<bool> {
        let mut inner = self.inner.write();
        if inner.stamp.is_none() || vectors::stamp(conn)? != inner.stamp {
            return Ok(false);
        }
        let wrote = snapshot::save(conn, &inner, min_changes)?;
        inner.snapshot = true;
        Ok(wrote)
    }

    /// Reads what a search of `collection` reads first in full (the sign bits of a
    /// collection searched by them, else the int8 codes), one byte per cache line,
    /// [`WARM_STEP`] bytes a step, until `stop` says so (asked before each step) or
    /// [`WARM_MAX`] bytes were read: a recall does this while its query's vector is
    /// still being made on another thread, so that the search then finds them in the
    /// CPU's caches instead of memory. The read lock is taken for one step at a
    /// time, so a sync waiting to write waits at most one step.
    pub fn warm(&self, collection: &str, stop: &dyn Fn() -> bool) {
        let mut seen = 0u64;
        let mut from = 0; // bytes
        while from < WARM_MAX {
            let inner = self.inner.read();
            let Some(&p) = inner.names.get(collection) else { break };
            let part = &inner.parts[p as usize];
            if stop() {
                break;
            }
            // 8 sign-bit words or 64 code bytes to a 64-byte line.
            let last = if part.ids.len() >= BINARY_FROM {
                let words = &part.bits[(from / 8).min(part.bits.len())..];
                seen ^= words.iter().take(WARM_STEP / 8).step_by(8).fold(0, |a, &w| a ^ w);
                words.len() * 8 <= WARM_STEP
            } else {
                let codes = &part.hi[from.min(part.hi.len())..];
                seen ^= codes.iter().take(WARM_STEP).step_by(64).fold(0, |a, &c| a ^ c as u8 as u64);
                codes.len() <= WARM_STEP
            };
            if last {
                break;
            }
            from += WARM_STEP;
        }
        std::hint::black_box(seen);
    }

    /// Whether the index holds `model`'s vectors (was synced with it).
    pub fn holds(&self, model: &ModelStamp) -> bool {
        self.inner.read().stamp.as_deref() == Some(model.encode().as_str())
    }

    /// Stored vectors in the index (for tests and diagnostics).
    pub fn len(&self) -> usize {
        self.inner.read().parts.iter().map(|p| p.slots.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Inner {
    /// The part and slot of `id`'s vector (an id is in one part at most; the
    /// parts are the collections, a few).
    fn slot(&self, id: i64) -> Option<(usize, u32)> {
        self.parts.iter().enumerate().find_map(|(p, part)| Some((p, part.slots.get(id)?)))
    }

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
        part.slots.insert(id, part.ids.len() as u32);
        part.ids.push(id);
        part.bits.extend(quant::sign_bits(v));
        part.hi.extend_from_slice(&code.hi);
        part.scale.push(code.scale);
    }

    /// Drops the vector of `id` (the last slot of its part moves into its place).
    fn remove(&mut self, id: i64) {
        let Some((p, s)) = self.slot(id) else { return };
        let (d, w, s) = (self.dim, self.dim.div_ceil(64), s as usize);
        let part = &mut self.parts[p];
        part.slots.remove(id);
        let last = part.ids.len() - 1;
        if s != last {
            part.bits.copy_within(last * w..(last + 1) * w, s * w);
            part.hi.copy_within(last * d..(last + 1) * d, s * d);
            part.scale[s] = part.scale[last];
            part.ids[s] = part.ids[last];
            part.slots.insert(part.ids[s], s as u32);
        }
        part.ids.pop();
        part.scale.pop();
        part.bits.truncate(last * w);
        part.hi.truncate(last * d);
    }
}

#[cfg(test)]
mod tests {
    use super::quant::unit;
    use super::*;
    use std::cell::Cell;

    fn index(n: usize, dim: usize) -> VectorIndex {
        let mut inner = Inner { stamp: Some("m".into()), dim, ..Inner::default() };
        for i in 0..n {
            inner.insert(i as i64, "c", &unit(i as u64, dim));
        }
        VectorIndex { inner: RwLock::new(inner), ..VectorIndex::default() }
    }

    #[test]
    fn a_released_index_holds_nothing_and_stores_nothing() {
        let idx = index(3000, 64);
        idx.release();
        let inner = idx.inner.read();
        assert!(inner.parts.is_empty() && inner.names.is_empty() && inner.stamp.is_none());
        drop(inner);
        // No stamp: the save returns before it reads the connection (no tables).
        let bare = rusqlite::Connection::open_in_memory().unwrap();
        assert!(!idx.save(&bare, 1).unwrap());
    }

    /// The smaps entry of the mapping holding `addr`: (AnonHugePages in kB, VmFlags).
    #[cfg(target_os = "linux")]
    fn mapping_of(addr: usize) -> (u64, String) {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let (mut inside, mut huge, mut flags) = (false, 0, String::new());
        for line in smaps.lines() {
            let range = line.split_whitespace().next().and_then(|r| r.split_once('-'));
            if let Some((a, b)) = range {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                    inside = (a..b).contains(&addr);
                    continue;
                }
            }
            if inside {
                if let Some(kb) = line.strip_prefix("AnonHugePages:") {
                    huge = kb.trim().trim_end_matches("kB").trim().parse().unwrap();
                } else if let Some(f) = line.strip_prefix("VmFlags:") {
                    flags = f.trim().to_string();
                }
            }
        }
        (huge, flags)
    }

    #[test]
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn large_code_arrays_are_advised_for_huge_pages() {
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
        if !mode.contains("[madvise]") && !mode.contains("[always]") {
            eprintln!("SKIPPED huge pages: transparent huge pages are {:?} on this kernel", mode.trim());
            return;
        }
        let mut v: Vec<u64> = Vec::with_capacity(1 << 20); // 8 MiB
        prefer_huge_pages(&v);
        v.resize(v.capacity(), 7);
        // The advice covers the array's whole 2 MiB pages: the middle is in one,
        // and the kernel records it on that mapping ("hg"). Whether it then backs
        // the range with huge pages depends on its free memory and defrag setting
        // at that moment (a CI host under load gave none): reported, not asserted.
        let (huge, flags) = mapping_of(v.as_ptr() as usize + (4 << 20));
        assert!(flags.split_whitespace().any(|f| f == "hg"), "no huge page advice on the array: VmFlags {flags:?}");
        eprintln!("huge pages: {huge} kB of the 8 MiB array ({})", mode.trim());
        assert!(v.iter().all(|&x| x == 7));
        // The control: a fresh mapping of the same size, not advised, has no such
        // flag, so the assertion above sees the advice and not the kernel's
        // default. (Mapped directly: an allocation could reuse memory another
        // test advised.)
        const LEN: usize = 8 << 20;
        // SAFETY: a new private anonymous mapping, only read through smaps, then unmapped.
        let plain = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(plain, libc::MAP_FAILED);
        let (_, flags) = mapping_of(plain as usize + LEN / 2);
        // SAFETY: the mapping made above, unmapped once.
        unsafe { libc::munmap(plain, LEN) };
        assert!(!flags.split_whitespace().any(|f| f == "hg"), "a mapping not advised has VmFlags {flags:?}");
    }

    #[test]
    fn warm_reads_what_the_search_reads_first_until_told_to_stop() {
        // Sign bits (64 bytes a 512-d vector) of a collection searched by them, the
        // int8 codes (512 bytes) of a smaller one; the stop condition is asked once
        // per step, and the first time it says stop nothing more is read.
        for (n, bytes) in [(BINARY_FROM, BINARY_FROM * 64), (3000, 3000 * 512)] {
            let idx = index(n, 512);
            let asked = Cell::new(0usize);
            idx.warm("c", &|| {
                asked.set(asked.get() + 1);
                false
            });
            assert_eq!(asked.get(), bytes.div_ceil(WARM_STEP), "{n} vectors");
            asked.set(0);
            idx.warm("c", &|| {
                asked.set(asked.get() + 1);
                true
            });
            assert_eq!(asked.get(), 1);
        }
        let never = || -> bool { panic!("no collection, nothing to read") };
        index(10, 512).warm("missing", &never);
    }
}
