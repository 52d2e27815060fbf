//! In-process BM25 index of the active memories, one per open handle.
//!
//! FTS5 scores every match of a query before it returns the first row, which at
//! 10k memories and a few common words costs milliseconds. This index ranks from
//! in-memory postings, pruned to the best few ([`ranking`]).
//!
//! The SQLite file stays the source of truth. Every write that changes what is
//! searchable (insert, content update, forget, supersede, removal: a row of
//! `memory_removals`, see `store::retention`) stamps the row with the
//! next `rev` (an indexed, monotonically increasing column, assigned inside the
//! write transaction, so it is ordered across processes). Before ranking, a
//! reader compares `max(rev)` with the index's and applies the newer rows — its
//! own writes and other processes' alike. The first sync loads the copy stored
//! in the file when the last handle closed ([`snapshot`]) or, without
//! one, builds the whole index (`rm_open_options.preload` does it during open).
//!
//! Words are those of [`crate::text`] (lowercased, Chinese segmented by jieba),
//! English words stemmed with Snowball English, so "grasping" finds "grasp".

use std::collections::HashMap;

use parking_lot::RwLock;
use rusqlite::{params, Connection};

pub(super) mod ids;
mod ranking;
mod snapshot;
mod words;

use crate::error::Result;
use crate::text::{self, term, Script};
use ids::IdMap;
pub use ranking::{Admit, Ranking};
use words::Words;

/// BM25 parameters (the usual values, as FTS5 uses).
const K1: f32 = 1.2;
const B: f32 = 0.75;

pub(super) struct Doc {
    pub(super) id: i64,
    pub(super) collection: u32,
    pub(super) len: u32,
    pub(super) live: bool,
    /// Word count of the near-duplicate layer (`term_count`) for an active fact
    /// without numbers, else -1: the memories [`TextIndex::near_duplicates`] considers.
    pub(super) dedup_len: i32,
    /// The content's script class, for hybrid fusion (no read of the content per recall).
    pub(super) script: Script,
}

/// A document holding a term. The document's length is repeated here (saturated;
/// [`Posting::LONG`] sends the reader to [`Doc::len`]), so ranking walks the
/// postings without touching the documents. 8 bytes, as a (u32, u16) pair is.
#[derive(Clone, Copy)]
pub(super) struct Posting {
    pub(super) doc: u32,
    pub(super) tf: u16,
    pub(super) len: u16,
}

impl Posting {
    pub(super) const LONG: u16 = u16::MAX;
}

#[derive(Default)]
pub(super) struct Inner {
    /// Highest `rev` applied; `None` before the first sync.
    pub(super) rev: Option<i64>,
    pub(super) term_ids: HashMap<String, u32>,
    /// Per term: its documents, ascending.
    pub(super) postings: Vec<Vec<Posting>>,
    /// Live documents per term.
    pub(super) df: Vec<u32>,
    /// Per term: the largest term frequency and the shortest document among its
    /// postings (kept through removals, so an upper bound): see [`Inner::bound`].
    pub(super) max_tf: Vec<u16>,
    pub(super) min_len: Vec<u32>,
    /// Per term: it can stem from a word the near-duplicate layer ignores (an
    /// English stopword or a one-character word), see [`TextIndex::near_duplicates`].
    pub(super) ignorable: Vec<bool>,
    pub(super) collections: HashMap<String, u32>,
    pub(super) docs: Vec<Doc>,
    /// Each document's (term id, term frequency) pairs, ascending: kept to rebuild
    /// postings when compacting, and for the checks of single documents.
    words: Words,
    by_id: IdMap,
    pub(super) live: u32,
    pub(super) total_len: u64,
}

/// The index of one handle. Thread-safe: ranking takes a read lock, syncing a
/// short write lock.
#[derive(Default)]
pub struct TextIndex {
    pub(super) inner: RwLock<Inner>,
}

impl TextIndex {
    /// Applies every searchable change newer than the index. `conn` should be in the
    /// read transaction the caller ranks in.
    pub fn sync(&self, conn: &Connection) -> Result<()> {
        let head: i64 =
            conn.prepare_cached("SELECT coalesce(max(rev), 0) FROM memories")?.query_row([], |r| r.get(0))?;
        self.sync_to(conn, head)
    }

    /// [`Self::sync`] up to `head` (a write transaction's committed rev: see
    /// `Db::committed_rev`); rows of a later rev are not applied.
    pub fn sync_to(&self, conn: &Connection, head: i64) -> Result<()> {
        if self.inner.read().rev.is_some_and(|r| r >= head) {
            return Ok(());
        }
        let mut inner = self.inner.write();
        if inner.rev.is_none() {
            if let Some(saved) = snapshot::load(conn, head)? {
                *inner = saved;
            }
        }
        let from = match inner.rev {
            Some(r) if r >= head => return Ok(()), // another thread synced meanwhile
            Some(r) => r,
            None => -1,
        };
        let mut st = conn.prepare_cached(
            "SELECT id, collection, status = 'active', content,
                    CASE WHEN type = 'fact' AND numbers_sig = '' THEN term_count ELSE -1 END
             FROM memories WHERE rev > ?1 AND rev <= ?2
             UNION ALL SELECT id, '', 0, NULL, -1 FROM memory_removals WHERE rev > ?1 AND rev <= ?2",
        )?;
        let mut rows = st.query(params![from, head])?;
        // A first build (no stored copy) posts at the end, each list at its size.
        let fresh = inner.rev.is_none();
        while let Some(r) = rows.next()? {
            let id: i64 = r.get(0)?;
            inner.remove(id);
            if r.get::<_, bool>(2)? {
                let collection: String = r.get(1)?;
                // Bytes, not a String: a damaged text must not stop the index (reading
                // that memory reports it as corrupt).
                let content = String::from_utf8_lossy(r.get_ref(3)?.as_bytes()?).into_owned();
                inner.add_doc(id, &collection, &content, r.get(4)?, !fresh);
            }
        }
        if fresh {
            inner.post_built();
        }
        inner.rev = Some(head);
        if inner.docs.len() > 1024 && inner.live < inner.docs.len() as u32 / 2 {
            inner.compact();
        }
        Ok(())
    }

    /// Memory ids of `collection` matching any of `words`, best BM25 score first
    /// (ties: newest first), with their scores, and the query's BM25 ceiling;
    /// with `admit`, only the ids it admits. Computed lazily, see [`Ranking`].
    pub fn rank<'a>(&'a self, collection: &'a str, words: &'a [String], admit: Option<Admit<'a>>) -> Ranking<'a> {
        let inner = self.inner.read();
        if inner.stats(collection).is_none() {
            return Ranking::empty();
        }
        Ranking::new(self, &inner, collection, words, admit)
    }

    pub(super) fn read(&self) -> parking_lot::RwLockReadGuard<'_, Inner> {
        self.inner.read()
    }

    /// The share of the query's BM25 ceiling that [`rank`](Self::rank) gives each
    /// of `ids` for `words` (0 for a memory that holds none of them, or is not in
    /// the index), without scoring every match: for the few memories a hybrid or
    /// spatial recall finds by other means.
    pub fn shares(&self, collection: &str, words: &[String], ids: &[i64]) -> Vec<f64> {
        let inner = self.inner.read();
        let Some(coll) = inner.stats(collection) else { return vec![0.0; ids.len()] };
        let terms: Vec<(u32, f32)> = inner.query_terms(words).collect();
        let ceiling: f64 = terms.iter().map(|&(_, idf)| inner.ceiling_of(idf)).sum();
        ids.iter()
            .map(|&id| match inner.doc_in(id, coll.0).map(|d| inner.score(d, &terms, coll.1)) {
                Some(s) if s > 0.0 => s as f64 / ceiling,
                _ => 0.0,
            })
            .collect()
    }

    /// The script class of each of `ids`' content, as the index holds it (`None`:
    /// not a live memory of the index), so that hybrid fusion need not read the
    /// contents: [`Script::of`] of the text the index was last synced with.
    pub fn scripts(&self, ids: &[i64]) -> Vec<Option<Script>> {
        let inner = self.inner.read();
        ids.iter()
            .map(|&id| inner.by_id.get(id).map(|d| &inner.docs[d as usize]).filter(|d| d.live).map(|d| d.script))
            .collect()
    }

    /// Drops what the index holds, for a handle that is closing once its copy
    /// is stored: the memory goes back before the next index is encoded. A later
    /// sync would build it again from the rows.
    pub fn release(&self) {
        *self.inner.write() = Inner::default();
    }

    /// Stores the index in the database (`conn` in a write transaction) if it was
    /// synced and at least `min_changes` rows changed since the snapshot stored
    /// (or there is none, or it is of another format). Returns whether it wrote.
    pub fn save(&self, conn: &Connection, min_changes: i64) -> Result<bool> {
        let inner = self.inner.read();
        let Some(rev) = inner.rev else { return Ok(false) };
        snapshot::save(conn, rev, min_changes, || inner.encode())
    }

    /// The `rev` the index was last synced to (`None` before the first sync).
    pub fn rev(&self) -> Option<i64> {
        self.inner.read().rev
    }

    /// Candidates for the near-duplicate check of a fact without numbers whose
    /// dedup words are `words` (each once): the active facts without numbers of
    /// `collection` with `lo..=hi` dedup words that could hold all of `words` or
    /// be held by them, with at most `max_missing` of them missing. Exact in the
    /// safe direction: every near-duplicate is returned (the caller checks each).
    ///
    /// In stems, a near-duplicate holds all of our stems (it holds our words) or
    /// all its stems are ours or ignorable (its words are among ours). It lacks at
    /// most `max_missing` of our stems, so of our `p` rarest stems it holds at least
    /// `p - max_missing`: only those postings are read, and only documents that
    /// appear in enough of them are checked for containment.
    pub fn near_duplicates(
        &self,
        collection: &str,
        words: &[String],
        (lo, hi): (i64, i64),
        max_missing: usize,
    ) -> Vec<i64> {
        /// Probes beyond the `max_missing + 1` needed: each one more a candidate
        /// must hold (a sharper filter) for the cost of a rare word's postings.
        const EXTRA_PROBES: usize = 2;
        let inner = self.inner.read();
        let Some(&coll) = inner.collections.get(collection) else { return Vec::new() };
        let mut ours: Vec<Option<u32>> = words.iter().map(|w| inner.term_ids.get(&term(w)).copied()).collect();
        ours.sort_unstable();
        ours.dedup();
        // Stems the index has never seen are missing from every candidate.
        let unseen = ours.iter().filter(|t| t.is_none()).count();
        let mut known: Vec<u32> = ours.into_iter().flatten().collect();
        let Some(may_miss) = max_missing.checked_sub(unseen) else { return Vec::new() };
        let mut probe = known.clone();
        probe.sort_unstable_by_key(|&t| inner.df[t as usize]);
        probe.truncate(may_miss + 1 + EXTRA_PROBES);
        let need = probe.len().saturating_sub(may_miss).max(1);
        known.sort_unstable();
        let mut docs: Vec<u32> = Vec::new();
        for t in probe {
            for &Posting { doc: d, .. } in &inner.postings[t as usize] {
                let doc = &inner.docs[d as usize];
                if doc.live && doc.collection == coll && (lo..=hi).contains(&(doc.dedup_len as i64)) {
                    docs.push(d);
                }
            }
        }
        docs.sort_unstable();
        let holds_ours = |d: u32| unseen == 0 && inner.words.of(d).holds_all(&known);
        let within_ours =
            |d: u32| inner.words.of(d).all(|(t, _)| inner.ignorable[t as usize] || known.binary_search(&t).is_ok());
        docs.chunk_by(|a, b| a == b)
            .filter(|run| run.len() >= need)
            .map(|run| run[0])
            .filter(|&d| holds_ours(d) || within_ours(d))
            .map(|d| inner.docs[d as usize].id)
            .collect()
    }

    /// Live documents (for tests and diagnostics).
    pub fn len(&self) -> usize {
        self.inner.read().live as usize
    }
}

impl Inner {
    /// The collection's number and the average document length, if it has live documents.
    pub(super) fn stats(&self, collection: &str) -> Option<(u32, f32)> {
        let &coll = self.collections.get(collection)?;
        (self.live > 0).then(|| (coll, (self.total_len as f32 / self.live as f32).max(1.0)))
    }

    /// The live document of memory `id` in collection `coll`.
    pub(super) fn doc_in(&self, id: i64, coll: u32) -> Option<u32> {
        let d = self.by_id.get(id)?;
        let doc = &self.docs[d as usize];
        (doc.live && doc.collection == coll).then_some(d)
    }

    /// Document `d`'s BM25 score for `terms`, summed in query order as the
    /// rankings sum it (0: it holds none of them).
    pub(super) fn score(&self, d: u32, terms: &[(u32, f32)], avg_len: f32) -> f32 {
        let len = self.docs[d as usize].len;
        let mut s = 0f32;
        for &(t, idf) in terms {
            let tf = self.words.of(d).tf(t);
            if tf > 0 {
                s += self.weight(idf, tf, len, avg_len);
            }
        }
        s
    }

    /// Live documents.
    pub(super) fn live(&self) -> u32 {
        self.live
    }

    /// The distinct indexed terms of `words` with their idf.
    pub(super) fn query_terms<'a>(&'a self, words: &'a [String]) -> impl Iterator<Item = (u32, f32)> + 'a {
        let n = self.live as f32;
        let mut seen: Vec<u32> = Vec::new();
        words.iter().filter_map(move |w| {
            let t = *self.term_ids.get(&term(w))?;
            if seen.contains(&t) {
                return None;
            }
            seen.push(t);
            let df = self.df[t as usize] as f32;
            Some((t, (1.0 + (n - df + 0.5) / (df + 0.5)).ln()))
        })
    }

    /// BM25 weight of a term with `idf` occurring `tf` times in a document of `len` words.
    pub(super) fn weight(&self, idf: f32, tf: u16, len: u32, avg_len: f32) -> f32 {
        let tf = tf as f32;
        idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len as f32 / avg_len))
    }

    /// The most term `t` (with `idf`) can weigh in any document: BM25's weight grows
    /// with the term frequency and shrinks with the length.
    pub(super) fn bound(&self, t: u32, idf: f32, avg_len: f32) -> f32 {
        self.weight(idf, self.max_tf[t as usize], self.min_len[t as usize], avg_len)
    }

    /// What a term with `idf` adds to the query's ceiling (see [`Ranking::ceiling`]).
    pub(super) fn ceiling_of(&self, idf: f32) -> f64 {
        (idf * (K1 + 1.0)) as f64
    }
}

impl TextIndex {
    /// An index of `docs` (id, collection, content), for tests elsewhere.
    #[cfg(test)]
    pub(crate) fn of(docs: &[(i64, &str, &str)]) -> TextIndex {
        let mut i = Inner::default();
        for (id, c, text) in docs {
            i.add(*id, c, text, -1);
        }
        i.rev = Some(0);
        TextIndex { inner: RwLock::new(i) }
    }
}

impl Inner {
    #[cfg(test)]
    pub(super) fn add(&mut self, id: i64, collection: &str, content: &str, dedup_len: i32) {
        self.add_doc(id, collection, content, dedup_len, true);
    }

    /// Adds a document; without `post`, its postings are left to [`Self::post_built`].
    fn add_doc(&mut self, id: i64, collection: &str, content: &str, dedup_len: i32, post: bool) {
        let mut counts: HashMap<u32, u16> = HashMap::new();
        let mut len = 0u32;
        text::for_each_word(content, |w| {
            let t = term(w);
            let next = self.term_ids.len() as u32;
            let tid = *self.term_ids.entry(t).or_insert(next);
            if tid as usize == self.postings.len() {
                self.postings.push(Vec::new());
                self.df.push(0);
                self.ignorable.push(false);
                self.max_tf.push(0);
                self.min_len.push(u32::MAX);
            }
            if !text::is_dedup_word(w) {
                self.ignorable[tid as usize] = true;
            }
            let c = counts.entry(tid).or_insert(0);
            *c = c.saturating_add(1);
            len += 1;
        });
        let next = self.collections.len() as u32;
        let coll = *self.collections.entry(collection.to_string()).or_insert(next);
        let d = self.docs.len() as u32;
        let mut terms: Vec<(u32, u16)> = counts.into_iter().collect();
        terms.sort_unstable();
        for &(t, tf) in &terms {
            if post {
                self.post(t, d, tf, len);
            }
            self.df[t as usize] += 1;
        }
        self.words.push(terms);
        self.docs.push(Doc { id, collection: coll, len, live: true, dedup_len, script: Script::of(content) });
        self.by_id.insert(id, d);
        self.live += 1;
        self.total_len += len as u64;
    }

    pub(super) fn remove(&mut self, id: i64) {
        if let Some(d) = self.by_id.remove(id) {
            let doc = &mut self.docs[d as usize];
            doc.live = false;
            self.live -= 1;
            self.total_len -= doc.len as u64;
            for (t, _) in self.words.of(d) {
                self.df[t as usize] -= 1;
            }
        }
    }

    pub(super) fn post(&mut self, t: u32, d: u32, tf: u16, len: u32) {
        let t = t as usize;
        self.postings[t].push(Posting { doc: d, tf, len: len.min(u16::MAX as u32) as u16 });
        self.max_tf[t] = self.max_tf[t].max(tf);
        self.min_len[t] = self.min_len[t].min(len);
    }

    /// Drops dead documents and rebuilds the postings (and the bounds) from the live ones.
    pub(super) fn compact(&mut self) {
        let docs = std::mem::take(&mut self.docs);
        let words = std::mem::take(&mut self.words);
        self.postings.iter_mut().for_each(Vec::clear);
        self.max_tf.iter_mut().for_each(|x| *x = 0);
        self.min_len.iter_mut().for_each(|x| *x = u32::MAX);
        self.by_id.clear();
        for (old, doc) in docs.into_iter().enumerate().filter(|(_, d)| d.live) {
            self.words.push_from(&words, old as u32);
            self.by_id.insert(doc.id, self.docs.len() as u32);
            self.docs.push(doc);
        }
        self.post_all();
    }

    /// After a build by `add_doc` without posting (every document live): each
    /// posting list made at its exact size, and the other arrays trimmed — a
    /// build of a million memories would otherwise hold up to twice the postings
    /// while its lists grow.
    fn post_built(&mut self) {
        for (list, &df) in self.postings.iter_mut().zip(&self.df) {
            list.reserve_exact(df as usize);
        }
        self.post_all();
        self.words.shrink_to_fit();
        self.docs.shrink_to_fit();
    }

    /// Posts every document's words (postings empty before).
    pub(super) fn post_all(&mut self) {
        let mut terms: Vec<(u32, u16)> = Vec::new();
        for d in 0..self.docs.len() as u32 {
            terms.clear();
            terms.extend(self.words.of(d));
            for &(t, tf) in &terms {
                self.post(t, d, tf, self.docs[d as usize].len);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(docs: &[(i64, &str, &str)]) -> Inner {
        TextIndex::of(docs).inner.into_inner()
    }

    #[test]
    fn a_released_index_holds_nothing_and_stores_nothing() {
        let idx = TextIndex::of(&[(1, "a", "grasp the red mug"), (2, "a", "dock at station B")]);
        assert_eq!(idx.rev(), Some(0));
        idx.release();
        // Unsynced: the next sync builds it from the rows, and a save after the
        // release cannot put an empty copy over the one just stored (it returns
        // before it reads the connection, which here has no tables at all).
        assert_eq!(idx.rev(), None);
        assert!(idx.inner.read().docs.is_empty() && idx.inner.read().postings.is_empty());
        let bare = Connection::open_in_memory().unwrap();
        assert!(!idx.save(&bare, 1).unwrap());
    }

    #[test]
    fn scripts_follow_the_contents_through_removal_and_compaction() {
        let docs = [
            (1, "a", "grasp the red mug"),
            (2, "a", "抓取杯子成功"),
            (3, "b", "AGV-3 dock B 坡道 打滑"),
            (4, "a", "12.5"),
        ];
        let want = |ids: &[i64], i: &TextIndex| ids.iter().map(|&id| i.scripts(&[id])[0]).collect::<Vec<_>>();
        let idx = TextIndex::of(&docs);
        assert_eq!(
            idx.scripts(&[1, 2, 3, 4, 5]),
            [Some(Script::NoCjk), Some(Script::MostlyCjk), Some(Script::Mixed), Some(Script::NoCjk), None]
        );
        for (id, _, text) in docs {
            assert_eq!(idx.scripts(&[id]), [Some(Script::of(text))]);
        }
        idx.inner.write().remove(2);
        assert_eq!(idx.scripts(&[2]), [None], "a removed memory has none");
        let before = want(&[1, 3, 4], &idx);
        idx.inner.write().compact();
        assert_eq!(want(&[1, 3, 4], &idx), before);
        assert_eq!(idx.scripts(&[2]), [None]);
    }

    fn rank(i: Inner, coll: &str, q: &str) -> Vec<i64> {
        let idx = TextIndex { inner: RwLock::new(i) };
        let words = text::query_words(q);
        let out = idx.rank(coll, &words, None).map(|x| x.0).collect();
        out
    }

    #[test]
    fn a_first_build_posts_as_one_document_at_a_time_does() {
        let texts = ["grasp the red mug", "grasp grasp mug slipped", "抓取 杯子 成功", "navigation to the dock", ""];
        let (mut one, mut built) = (Inner::default(), Inner::default());
        for id in 1..=400i64 {
            let text = texts[(id as usize * 7) % texts.len()];
            let coll = if id % 3 == 0 { "b" } else { "a" };
            one.add(id, coll, text, -1);
            built.add_doc(id, coll, text, -1, false);
        }
        built.post_built();
        let lists = |i: &Inner| -> Vec<Vec<(u32, u16, u16)>> {
            i.postings.iter().map(|l| l.iter().map(|p| (p.doc, p.tf, p.len)).collect()).collect()
        };
        assert_eq!(lists(&built), lists(&one));
        assert!(built.postings.iter().zip(&built.df).all(|(l, &df)| l.capacity() == df as usize), "exact sizes");
        assert_eq!((&built.df, &built.max_tf, &built.min_len), (&one.df, &one.max_tf, &one.min_len));
        assert_eq!(built.encode(), one.encode());
    }

    #[test]
    fn stems_and_ranks_by_bm25() {
        let i = index(&[
            (1, "a", "grasping the red mug worked"),
            (2, "a", "navigation to the dock"),
            (3, "a", "grasp grasp grasp the mug"),
            (4, "b", "grasp in another collection"),
        ]);
        assert_eq!(rank(i, "a", "grasp"), vec![3, 1]);
    }

    #[test]
    fn removed_and_compacted_documents_leave_results() {
        let mut i = index(&[(1, "a", "mug on table"), (2, "a", "mug in sink"), (3, "a", "cup")]);
        i.remove(1);
        i.compact();
        assert_eq!(i.docs.len(), 2);
        assert_eq!(rank(i, "a", "mug"), vec![2]);
    }

    #[test]
    fn chinese_words_are_indexed() {
        let i = index(&[(1, "a", "抓取杯子成功"), (2, "a", "导航到充电桩")]);
        assert_eq!(rank(i, "a", "杯子"), vec![1]);
    }
}
