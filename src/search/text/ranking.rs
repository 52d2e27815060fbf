//! BM25 ranking over the in-process [`TextIndex`], best first, produced in
//! batches by top-k pruning (MaxScore).
//!
//! A recall consumes a few dozen ranked memories (it stops when no later one can
//! enter its n), not the tens of thousands a common word matches. So the ranking
//! computes the best 64 first, and only when a consumer (a constrained recall
//! whose filter rejects most matches, or a deep fusion list) wants more, the next
//! 512, then 4,096, then everything else at once.
//!
//! MaxScore (Turtle & Flood, 1995): each query term has an upper bound of what it
//! can add to a score, from the largest term frequency and the shortest document
//! among its postings. Terms are ordered by bound; once the k-th best score so far
//! (θ) exceeds the summed bounds of the weakest terms, a document holding only
//! those terms cannot enter, so their postings are no longer walked — only probed
//! (galloping search) for the documents the other terms bring. A document is
//! abandoned as soon as its partial score plus the bounds of the terms not yet
//! probed falls below θ. Documents are walked newest first, so ties (equal
//! scores, broken newest first) fill the top early.
//!
//! The result is exact: every batch is exactly the next stretch of the full
//! ranking (same f32 scores summed in the same order, same tie-break), which the
//! tests check against the full ranking.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashSet};

use super::{Inner, Posting, TextIndex};

/// Size of the first batch; each later one is [`GROWTH`] times larger.
const FIRST_BATCH: usize = 64;
const GROWTH: usize = 8;
/// A batch this large compared with the live documents ranks everything at once.
const FULL_SHARE: usize = 4;
/// Relative slack on the bounds, so f32 rounding never prunes a document that
/// reaches its bound exactly.
const SLACK: f32 = 1.0 + 1e-5;

/// Which memory ids a ranking may return (a context filter's pre-selection).
pub type Admit<'a> = Box<dyn Fn(i64) -> bool + 'a>;

/// Ranked matches, best BM25 score first (ties: newest first), computed lazily
/// in batches. Holds no lock between batches.
pub struct Ranking<'a> {
    index: Option<&'a TextIndex>,
    collection: &'a str,
    words: &'a [String],
    /// The query's terms and idf, from `new`, for the first batch.
    terms: Option<Vec<(u32, f32)>>,
    admit: Option<Admit<'a>>,
    ceiling: f64,
    items: Sorted,
    /// Size of the last batch computed (0 before the first).
    batch: usize,
    /// The last batch held every remaining match.
    complete: bool,
    emitted: Vec<i64>,
}

impl<'a> Ranking<'a> {
    /// The ranking of `words` in `collection`; with `admit`, only the memories it
    /// admits (a context filter's pre-selection), so a selective filter does not
    /// make the consumer wade through batches of rejected matches.
    pub(super) fn new(
        index: &'a TextIndex,
        inner: &Inner,
        collection: &'a str,
        words: &'a [String],
        admit: Option<Admit<'a>>,
    ) -> Self {
        let terms: Vec<(u32, f32)> = inner.query_terms(words).collect();
        let ceiling = terms.iter().map(|&(_, idf)| inner.ceiling_of(idf)).sum();
        Ranking {
            index: Some(index),
            collection,
            words,
            terms: Some(terms),
            admit,
            ceiling,
            items: Sorted::default(),
            batch: 0,
            complete: false,
            emitted: Vec::new(),
        }
    }

    /// A ranking without matches.
    pub fn empty() -> Self {
        Ranking {
            index: None,
            collection: "",
            words: &[],
            terms: None,
            admit: None,
            ceiling: 0.0,
            items: Sorted::default(),
            batch: 0,
            complete: true,
            emitted: Vec::new(),
        }
    }

    /// The highest score a memory could reach for this query: Σ idf·(k1 + 1) over
    /// its distinct indexed words (BM25's term frequency part stays below k1 + 1).
    /// `score / ceiling` is the share of the query a memory holds, in [0, 1).
    pub fn ceiling(&self) -> f64 {
        self.ceiling
    }

    /// Computes the next batch: the best matches not yet emitted.
    fn fetch(&mut self) {
        let Some(index) = self.index else {
            self.complete = true;
            return;
        };
        let inner = index.read();
        let Some((coll, avg)) = inner.stats(self.collection) else {
            self.complete = true;
            return;
        };
        // The first batch ranks with the terms `new` looked up (words are stemmed once);
        // later ones look them up again, as the index may have changed meanwhile.
        let terms = self.terms.take().unwrap_or_else(|| inner.query_terms(self.words).collect());
        let skip: HashSet<i64> = if self.batch == 0 { HashSet::new() } else { self.emitted.iter().copied().collect() };
        let admit = self.admit.as_deref();
        let keep = |id: i64| !skip.contains(&id) && admit.is_none_or(|a| a(id));
        self.batch = if self.batch == 0 { FIRST_BATCH } else { self.batch * GROWTH };
        if self.batch * FULL_SHARE >= inner.live() as usize {
            self.items = Sorted::unsorted(full(&inner, coll, avg, &terms, &keep));
            self.complete = true;
        } else {
            let best = top_k(&inner, coll, avg, &terms, self.batch, &keep);
            self.complete = best.len() < self.batch;
            self.items = Sorted::in_order(best);
        }
    }
}

impl Iterator for Ranking<'_> {
    type Item = (i64, f64);
    fn next(&mut self) -> Option<(i64, f64)> {
        loop {
            if let Some(x) = self.items.next() {
                if !self.complete {
                    self.emitted.push(x.0);
                }
                return Some(x);
            }
            if self.complete {
                return None;
            }
            self.fetch();
        }
    }
}

/// Every match kept by `keep`: scores accumulated per document, sorted lazily.
fn full(inner: &Inner, coll: u32, avg: f32, terms: &[(u32, f32)], keep: &dyn Fn(i64) -> bool) -> Vec<(i64, f64)> {
    let mut acc = vec![0f32; inner.docs.len()];
    let mut touched: Vec<u32> = Vec::new();
    for &(t, idf) in terms {
        for &Posting { doc: d, tf, .. } in &inner.postings[t as usize] {
            let doc = &inner.docs[d as usize];
            if !doc.live || doc.collection != coll {
                continue;
            }
            if acc[d as usize] == 0.0 {
                touched.push(d);
            }
            acc[d as usize] += inner.weight(idf, tf, doc.len, avg);
        }
    }
    touched
        .into_iter()
        .map(|d| (inner.docs[d as usize].id, acc[d as usize] as f64))
        .filter(|&(id, _)| keep(id))
        .collect()
}

/// A posting list being walked (or probed) from its newest document down.
struct Cursor<'p> {
    list: &'p [Posting],
    /// `list[pos..]` is behind the walk.
    pos: usize,
    idf: f32,
    /// Upper bound of the term's weight in any document (with [`SLACK`]).
    bound: f32,
    /// Position of the term in the query (scores are summed in query order).
    q: usize,
}

impl Cursor<'_> {
    fn head(&self) -> Option<u32> {
        self.pos.checked_sub(1).map(|i| self.list[i].doc)
    }

    /// Moves the cursor down to `d`; its posting if the list holds `d`.
    /// Galloping, then a binary search: documents are visited in falling order.
    fn seek(&mut self, d: u32) -> Option<Posting> {
        if self.head()? > d {
            let mut hi = self.pos - 1; // list[hi] > d
            let mut step = 1;
            let lo = loop {
                if hi < step {
                    break 0;
                }
                let lo = hi - step;
                if self.list[lo].doc <= d {
                    break lo;
                }
                hi = lo;
                step *= 2;
            };
            self.pos = lo + self.list[lo..hi].partition_point(|x| x.doc <= d);
        }
        self.head().filter(|&h| h == d).map(|_| self.list[self.pos - 1])
    }
}

/// A kept document, ordered by score, then newest first.
#[derive(Clone, Copy, PartialEq)]
struct Key(f32, i64);
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0).then(self.1.cmp(&o.1))
    }
}

/// The `k` best matches kept by `keep`, best first (MaxScore, see the module).
fn top_k(
    inner: &Inner,
    coll: u32,
    avg: f32,
    terms: &[(u32, f32)],
    k: usize,
    keep: &dyn Fn(i64) -> bool,
) -> Vec<(i64, f64)> {
    let mut cur: Vec<Cursor> = terms
        .iter()
        .enumerate()
        .map(|(q, &(t, idf))| {
            let list = &inner.postings[t as usize][..];
            Cursor { list, pos: list.len(), idf, bound: inner.bound(t, idf, avg) * SLACK, q }
        })
        .collect();
    cur.sort_by(|a, b| a.bound.total_cmp(&b.bound));
    // prefix[j]: what the j weakest terms can add together.
    let mut prefix = vec![0f32; cur.len() + 1];
    for j in 0..cur.len() {
        prefix[j + 1] = prefix[j] + cur[j].bound;
    }
    let mut top: BinaryHeap<Reverse<Key>> = BinaryHeap::with_capacity(k + 1);
    let mut theta = f32::NEG_INFINITY; // score of the k-th best once k are kept
    let mut weak = 0; // cur[..weak] are only probed
    let mut part = vec![0f32; terms.len()];
    // The weight of a posting; a document's row is read only for a long document
    // and for a document whose score would enter the top.
    let weight = |c: &Cursor, p: Posting| {
        let len = if p.len == Posting::LONG { inner.docs[p.doc as usize].len } else { p.len as u32 };
        inner.weight(c.idf, p.tf, len, avg)
    };
    while let Some(d) = cur[weak..].iter().filter_map(Cursor::head).max() {
        let mut sum = 0f32;
        for c in cur[weak..].iter_mut().filter(|c| c.head() == Some(d)) {
            let w = weight(c, c.list[c.pos - 1]);
            part[c.q] = w;
            sum += w;
            c.pos -= 1;
        }
        let mut alive = sum + prefix[weak] >= theta;
        for j in (0..weak).rev() {
            if !alive {
                break;
            }
            if let Some(p) = cur[j].seek(d) {
                let w = weight(&cur[j], p);
                part[cur[j].q] = w;
                sum += w;
            }
            alive = sum + prefix[j] >= theta;
        }
        if alive {
            // The exact score, summed in query order as the full ranking sums it.
            let score = part.iter().fold(0f32, |s, &w| s + w);
            let doc = &inner.docs[d as usize];
            let key = Key(score, doc.id);
            let enters = top.len() < k || top.peek().is_some_and(|w| key > w.0);
            if enters && doc.live && doc.collection == coll && keep(doc.id) {
                top.push(Reverse(key));
                if top.len() > k {
                    top.pop();
                }
                if top.len() == k {
                    theta = top.peek().map_or(theta, |w| w.0 .0);
                    while weak < cur.len() && prefix[weak + 1] < theta {
                        weak += 1;
                    }
                    if weak == cur.len() {
                        break; // no document can enter any more
                    }
                }
            }
        }
        part.iter_mut().for_each(|w| *w = 0.0);
    }
    top.into_sorted_vec().into_iter().map(|Reverse(Key(s, id))| (id, s as f64)).collect()
}

/// Items in final order up to `sorted`, the rest sorted in growing chunks on demand.
#[derive(Default)]
struct Sorted {
    items: Vec<(i64, f64)>,
    /// `items[..sorted]` is in final order.
    sorted: usize,
    next: usize,
}

impl Sorted {
    fn in_order(items: Vec<(i64, f64)>) -> Sorted {
        Sorted { sorted: items.len(), items, next: 0 }
    }

    fn unsorted(items: Vec<(i64, f64)>) -> Sorted {
        Sorted { items, sorted: 0, next: 0 }
    }
}

pub(super) fn better(a: &(i64, f64), b: &(i64, f64)) -> Ordering {
    b.1.total_cmp(&a.1).then(b.0.cmp(&a.0))
}

impl Iterator for Sorted {
    type Item = (i64, f64);
    fn next(&mut self) -> Option<(i64, f64)> {
        if self.next == self.sorted {
            let rest = &mut self.items[self.sorted..];
            if rest.is_empty() {
                return None;
            }
            let chunk = (self.sorted.max(32)).min(rest.len());
            if chunk < rest.len() {
                rest.select_nth_unstable_by(chunk - 1, better);
            }
            rest[..chunk].sort_unstable_by(better);
            self.sorted += chunk;
        }
        self.next += 1;
        Some(self.items[self.next - 1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::RwLock;

    /// SplitMix64, enough for test data.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    const WORDS: [&str; 24] = [
        "grasp", "mug", "red", "blue", "push", "box", "slip", "dock", "arm", "cup", "force", "table", "shelf", "belt",
        "tray", "bowl", "wrench", "cable", "door", "lift", "speed", "angle", "tool", "plate",
    ];

    /// A word drawn with a skewed (Zipf-like) frequency, so some words are common.
    fn word(r: &mut Rng) -> &'static str {
        let x = r.below(1 << 20) as f64 / (1 << 20) as f64;
        WORDS[((x * x * x) * WORDS.len() as f64) as usize]
    }

    /// The whole ranking, sorted at once: what every batch must agree with.
    fn reference(idx: &TextIndex, coll: &str, words: &[String], admit: &dyn Fn(i64) -> bool) -> Vec<(i64, f64)> {
        let inner = idx.inner.read();
        let Some((c, avg)) = inner.stats(coll) else { return Vec::new() };
        let terms: Vec<(u32, f32)> = inner.query_terms(words).collect();
        let mut all = full(&inner, c, avg, &terms, admit);
        all.sort_by(better);
        all
    }

    #[test]
    fn batches_are_the_full_ranking() {
        let mut r = Rng(7);
        for round in 0..12 {
            let mut inner = Inner::default();
            let docs = 500 + r.below(4000) as i64;
            let mut text = String::new();
            for id in 1..=docs {
                // Lengths from 1 to 60 words, repeated words, a few very long documents,
                // and texts repeated (equal scores: ties broken newest first).
                if text.is_empty() || r.below(3) != 0 {
                    let len = if r.below(500) == 0 { 70_000 } else { 1 + r.below(60) as usize };
                    text = (0..len).map(|_| word(&mut r)).collect::<Vec<_>>().join(" ");
                }
                let coll = if r.below(5) == 0 { "b" } else { "a" };
                inner.add(id, coll, &text, -1);
            }
            for _ in 0..docs / 4 {
                inner.remove(1 + r.below(docs as u64) as i64);
            }
            if round % 3 == 0 {
                inner.compact();
            }
            let idx = TextIndex { inner: RwLock::new(inner) };
            for q in 0..40 {
                let words: Vec<String> = (0..1 + r.below(6)).map(|_| word(&mut r).to_string()).collect();
                let modulus = [1, 2, 7, 50][q % 4];
                let admit = move |id: i64| id % modulus == 0;
                let want = reference(&idx, "a", &words, &admit);
                let boxed: Option<Admit> = (modulus > 1).then(|| Box::new(admit) as Admit);
                let got: Vec<(i64, f64)> = idx.rank("a", &words, boxed).collect();
                assert_eq!(got.len(), want.len(), "round {round} query {words:?} admit 1/{modulus}");
                assert!(got == want, "round {round} query {words:?} admit 1/{modulus}: order differs");
                // A consumer that stops early gets the same prefix.
                let some: Vec<(i64, f64)> = idx.rank("a", &words, None).take(70).collect();
                assert_eq!(some[..], reference(&idx, "a", &words, &|_| true)[..some.len()]);
            }
        }
    }

    #[test]
    fn a_word_missing_from_the_index_ranks_nothing() {
        let mut inner = Inner::default();
        inner.add(1, "a", "grasp mug", -1);
        let idx = TextIndex { inner: RwLock::new(inner) };
        assert_eq!(idx.rank("a", &["zebra".to_string()], None).count(), 0);
        assert_eq!(idx.rank("nope", &["grasp".to_string()], None).count(), 0);
    }

    #[test]
    fn lazy_sort_is_a_full_sort() {
        let items: Vec<(i64, f64)> = (0..1000).map(|i| (i, ((i * 7919) % 101) as f64)).collect();
        let mut expect = items.clone();
        expect.sort_by(better);
        let got: Vec<(i64, f64)> = Sorted::unsorted(items).collect();
        assert_eq!(got, expect);
    }
}
