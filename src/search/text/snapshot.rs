//! The text index's stored snapshot (the shared codec and its binding are
//! [`crate::search::snapshot`]'s).
//!
//! Layout (integers LEB128; ids zig-zag): magic `RMTI`, terms (length, UTF-8,
//! ignorable flag), collections (length, UTF-8), live documents in index order
//! (id, collection, length, dedup length + 1, script class, term count, then per term the gap
//! to the previous term id and the frequency), then the FNV-1a hash of all that.

use rusqlite::Connection;

use super::{Doc, IdMap, Inner};
use crate::error::Result;
use crate::search::snapshot::{load_named, open, put, put_str, save_named, seal, unzigzag, zigzag, Damaged};
use crate::text::Script;

/// The row of the text index in `index_snapshots`.
const NAME: &str = "text";

const MAGIC: &[u8; 4] = b"RMTI";

/// Revision of the word rules the index depends on (splitting, stemming, which
/// words are dedup words). Bump it with any change to `crate::text` or
/// [`crate::text::term`] that changes the words of a text.
const TEXT_RULES: u32 = 1;

/// Revision of the layout above (2: each document's script class).
const LAYOUT: u32 = 2;

/// What a snapshot must say it is to be loaded by this build.
pub(super) fn format() -> String {
    format!("robotmem {} text index, rules {TEXT_RULES}, layout {LAYOUT}", crate::VERSION)
}

/// The stored text index snapshot of this format, as an index synced to its
/// `rev`, if it is not ahead of `head` (the newest `rev` of the caller's read
/// transaction) and decodes. `None`: build from the rows.
pub(super) fn load(conn: &Connection, head: i64) -> Result<Option<Inner>> {
    let Some((rev, data)) = load_named(conn, NAME, &format(), head)? else { return Ok(None) };
    Ok(Inner::decode(&data).ok().map(|mut inner| {
        inner.rev = Some(rev);
        inner
    }))
}

/// Writes the text index snapshot `encode` makes of an index synced to `rev`,
/// unless the stored one is of this format and fewer than `min_changes` revs behind.
pub(super) fn save(conn: &Connection, rev: i64, min_changes: i64, encode: impl FnOnce() -> Vec<u8>) -> Result<bool> {
    save_named(conn, NAME, &format(), rev, min_changes, encode)
}

impl Inner {
    /// The live documents and the words and collections they use.
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.docs.len() * 48);
        out.extend_from_slice(MAGIC);
        let mut terms: Vec<(&str, u32)> = self.term_ids.iter().map(|(s, &t)| (s.as_str(), t)).collect();
        terms.sort_unstable_by_key(|&(_, t)| t);
        put(&mut out, terms.len() as u64);
        for (s, t) in terms {
            put_str(&mut out, s);
            out.push(self.ignorable[t as usize] as u8);
        }
        let mut colls: Vec<(&str, u32)> = self.collections.iter().map(|(s, &c)| (s.as_str(), c)).collect();
        colls.sort_unstable_by_key(|&(_, c)| c);
        put(&mut out, colls.len() as u64);
        for (s, _) in colls {
            put_str(&mut out, s);
        }
        put(&mut out, self.live as u64);
        for (d, doc) in self.docs.iter().enumerate().filter(|(_, d)| d.live) {
            put(&mut out, zigzag(doc.id));
            put(&mut out, doc.collection as u64);
            put(&mut out, doc.len as u64);
            put(&mut out, (doc.dedup_len as i64 + 1) as u64);
            put(&mut out, doc.script as u64);
            put(&mut out, self.words.of(d as u32).count() as u64);
            let mut prev = 0u32;
            for (t, tf) in self.words.of(d as u32) {
                put(&mut out, (t - prev) as u64);
                put(&mut out, tf as u64);
                prev = t;
            }
        }
        seal(out)
    }

    /// The index a snapshot holds (its `rev` is the caller's to set).
    pub(super) fn decode(bytes: &[u8]) -> std::result::Result<Inner, Damaged> {
        let mut r = open(bytes, MAGIC)?;
        let mut inner = Inner::default();
        let n_terms = r.count()?;
        for t in 0..n_terms as u32 {
            let s = r.str()?;
            let ignorable = r.below(2)? == 1;
            if inner.term_ids.insert(s.to_string(), t).is_some() {
                return Err(Damaged);
            }
            inner.postings.push(Vec::new());
            inner.df.push(0);
            inner.ignorable.push(ignorable);
            inner.max_tf.push(0);
            inner.min_len.push(u32::MAX);
        }
        let n_colls = r.count()?;
        for c in 0..n_colls as u32 {
            if inner.collections.insert(r.str()?.to_string(), c).is_some() {
                return Err(Damaged);
            }
        }
        let n_docs = r.count()?;
        inner.docs.reserve_exact(n_docs);
        inner.by_id = IdMap::with_capacity(n_docs);
        // The word lists take fewer bytes than the snapshot's rest (the same pairs).
        inner.words.reserve(bytes.len(), n_docs);
        let mut terms = Vec::new();
        for d in 0..n_docs as u32 {
            let id = unzigzag(r.int()?);
            let collection = r.below(n_colls as u64)? as u32;
            let len = r.below(u32::MAX as u64 + 1)? as u32;
            let dedup_len = r.below(i32::MAX as u64 + 1)? as i32 - 1;
            let script = Script::from_u8(r.below(3)? as u8).ok_or(Damaged)?;
            let n = r.count()?;
            terms.clear();
            let mut t = 0u64;
            for i in 0..n {
                let gap = r.int()?;
                if i > 0 && gap == 0 {
                    return Err(Damaged); // term ids strictly ascending
                }
                t = t.checked_add(gap).filter(|&t| t < n_terms as u64).ok_or(Damaged)?;
                let tf = r.below(u16::MAX as u64 + 1)? as u16;
                if tf == 0 {
                    return Err(Damaged);
                }
                terms.push((t as u32, tf));
            }
            if inner.by_id.insert(id, d).is_some() {
                return Err(Damaged);
            }
            for &(t, _) in &terms {
                inner.df[t as usize] += 1;
            }
            inner.live += 1;
            inner.total_len += len as u64;
            inner.words.push(terms.iter().copied());
            inner.docs.push(Doc { id, collection, len, live: true, dedup_len, script });
        }
        inner.words.shrink_to_fit();
        if !r.done() {
            return Err(Damaged);
        }
        // Postings sized exactly (grown by doubling they would hold up to twice the memory).
        for (list, &df) in inner.postings.iter_mut().zip(&inner.df) {
            list.reserve_exact(df as usize);
        }
        inner.post_all();
        Ok(inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::snapshot::fnv1a;

    fn sample() -> Inner {
        let mut i = Inner::default();
        i.add(1, "a", "grasping the red mug worked", 4);
        i.add(7, "b", "抓取杯子成功 grasp", -1);
        i.add(-3, "a", "mug mug mug on the table", -1);
        i.add(9, "a", "to be removed", -1);
        i.remove(9);
        i
    }

    #[test]
    fn round_trip_keeps_the_live_documents() {
        let i = sample();
        let bytes = i.encode();
        let j = Inner::decode(&bytes).unwrap();
        assert_eq!(j.encode(), bytes, "decoding and encoding again is the identity");
        assert_eq!(j.live, 3);
        assert_eq!(j.docs.len(), 3);
        assert_eq!(j.total_len, i.total_len);
        assert_eq!(j.df, i.df);
        let live = (0..i.docs.len() as u32).filter(|&d| i.docs[d as usize].live);
        for (a, b) in (0..j.docs.len() as u32).zip(live) {
            let (x, y) = (&j.docs[a as usize], &i.docs[b as usize]);
            assert_eq!(
                (x.id, x.collection, x.len, x.dedup_len, x.script, j.words.of(a).collect::<Vec<_>>()),
                (y.id, y.collection, y.len, y.dedup_len, y.script, i.words.of(b).collect::<Vec<_>>())
            );
            assert_eq!(j.by_id.get(x.id), Some(a));
        }
    }

    #[test]
    fn any_damage_is_refused_without_panicking() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            assert_eq!(Inner::decode(&bytes[..cut]).err(), Some(Damaged), "cut at {cut}");
        }
        for at in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[at] ^= 1 << bit;
                assert!(Inner::decode(&b).is_err(), "bit {bit} of byte {at}");
            }
        }
    }

    #[test]
    fn hostile_payloads_with_a_valid_checksum_are_refused() {
        // Arbitrary bodies sealed with a correct checksum: decode must check every
        // count and id itself (no panic, no huge allocation).
        let mut x = 0x1234_5678_9abc_def0u64;
        for round in 0..20_000 {
            let mut body = MAGIC.to_vec();
            let n = (round % 64) + 1;
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                body.push(if round % 3 == 0 { (x % 4) as u8 } else { x as u8 });
            }
            let sum = fnv1a(&body);
            body.extend_from_slice(&sum.to_le_bytes());
            let _ = Inner::decode(&body);
        }
        let mut huge = MAGIC.to_vec();
        put(&mut huge, u64::MAX);
        let sum = fnv1a(&huge);
        huge.extend_from_slice(&sum.to_le_bytes());
        assert!(Inner::decode(&huge).is_err());
    }
}
