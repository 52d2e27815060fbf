//! Every document's word list in one byte array (issue 29: a `Vec` per document
//! cost about 112 bytes a memory at 1M, most of it the allocator's).
//!
//! A document's list is its distinct term ids ascending, each with its frequency,
//! as LEB128 pairs (gap to the previous term id, from 0; frequency), as the
//! snapshot stores them: about 3 bytes a term instead of 8 plus the `Vec`.

use crate::search::snapshot::put;

#[derive(Default)]
pub(super) struct Words {
    bytes: Vec<u8>,
    /// Where each document's list ends in `bytes` (it starts where the previous ends).
    ends: Vec<usize>,
}

impl Words {
    /// Appends the list of the next document: `terms` ascending by term id.
    pub(super) fn push(&mut self, terms: impl IntoIterator<Item = (u32, u16)>) {
        let mut prev = 0u32;
        for (t, tf) in terms {
            debug_assert!(t >= prev);
            put(&mut self.bytes, (t - prev) as u64);
            put(&mut self.bytes, tf as u64);
            prev = t;
        }
        self.ends.push(self.bytes.len());
    }

    /// Appends document `d` of `other` as it is (compaction).
    pub(super) fn push_from(&mut self, other: &Words, d: u32) {
        self.bytes.extend_from_slice(other.raw(d));
        self.ends.push(self.bytes.len());
    }

    /// The (term id, frequency) pairs of document `d`, ascending.
    pub(super) fn of(&self, d: u32) -> Terms<'_> {
        Terms { b: self.raw(d), prev: 0 }
    }

    fn raw(&self, d: u32) -> &[u8] {
        let d = d as usize;
        let start = if d == 0 { 0 } else { self.ends[d - 1] };
        &self.bytes[start..self.ends[d]]
    }

    /// Room for `bytes` more bytes of lists and `docs` more documents.
    pub(super) fn reserve(&mut self, bytes: usize, docs: usize) {
        self.bytes.reserve(bytes);
        self.ends.reserve(docs);
    }

    /// Gives back the room [`Self::reserve`] took beyond what was used.
    pub(super) fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
}

/// One document's word list, read in order.
pub(super) struct Terms<'a> {
    b: &'a [u8],
    prev: u32,
}

impl Terms<'_> {
    /// The LEB128 integer `Words::push` wrote (a `put` of a u32 or u16: at most 5 bytes).
    fn int(&mut self) -> u32 {
        let mut v = 0u32;
        let mut shift = 0;
        loop {
            let byte = self.b[0];
            self.b = &self.b[1..];
            v |= ((byte & 0x7f) as u32) << shift;
            if byte & 0x80 == 0 {
                return v;
            }
            shift += 7;
        }
    }

    /// The frequency of term `t` in the document (0: it does not hold it).
    pub(super) fn tf(self, t: u32) -> u16 {
        self.take_while(|&(u, _)| u <= t).find(|&(u, _)| u == t).map_or(0, |(_, tf)| tf)
    }

    /// Whether the document holds every term of `sorted` (ascending).
    pub(super) fn holds_all(mut self, sorted: &[u32]) -> bool {
        sorted.iter().all(|&want| self.by_ref().map(|(t, _)| t).find(|&t| t >= want) == Some(want))
    }
}

impl Iterator for Terms<'_> {
    type Item = (u32, u16);
    fn next(&mut self) -> Option<(u32, u16)> {
        if self.b.is_empty() {
            return None;
        }
        let t = self.prev + self.int();
        self.prev = t;
        Some((t, self.int() as u16))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_back_and_answer_lookups() {
        let lists: Vec<Vec<(u32, u16)>> =
            vec![vec![(0, 1), (5, 2), (200, 1), (70_000, u16::MAX), (u32::MAX - 1, 3)], vec![], vec![(3, 7)]];
        let mut w = Words::default();
        lists.iter().for_each(|l| w.push(l.iter().copied()));
        let mut copy = Words::default();
        (0..3).for_each(|d| copy.push_from(&w, d));
        for (d, l) in lists.iter().enumerate() {
            assert_eq!(&w.of(d as u32).collect::<Vec<_>>(), l);
            assert_eq!(&copy.of(d as u32).collect::<Vec<_>>(), l);
        }
        assert_eq!(w.of(0).tf(200), 1);
        assert_eq!(w.of(0).tf(70_000), u16::MAX);
        assert_eq!(w.of(0).tf(6), 0);
        assert_eq!(w.of(1).tf(0), 0);
        assert!(w.of(0).holds_all(&[0, 200, u32::MAX - 1]));
        assert!(!w.of(0).holds_all(&[0, 4]));
        assert!(!w.of(0).holds_all(&[u32::MAX]));
        assert!(w.of(1).holds_all(&[]));
        assert!(!w.of(1).holds_all(&[3]));
    }
}
