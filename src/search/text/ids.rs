//! Memory id → a number (the text index's document, a column row), issue 29:
//! the text index's `HashMap<i64, u32>` cost 36 MB at 1M.
//!
//! Memory ids are SQLite rowids, 1, 2, 3, ... in practice: those are held in a
//! dense array (4 bytes an id up to the largest), the others (negative, or far
//! beyond the number of ids held, which would make the array mostly empty) in a
//! hash map. An id below the array's length is only ever in the array.

use std::collections::HashMap;

const NONE: u32 = u32::MAX;

/// The array grows only to cover ids below `SLACK` times the ids held plus [`MIN_DENSE`].
const SLACK: usize = 2;
const MIN_DENSE: usize = 1 << 16;

#[derive(Clone, Default)]
pub(in crate::search) struct IdMap {
    dense: Vec<u32>,
    sparse: HashMap<i64, u32>,
    len: usize,
}

impl IdMap {
    pub(in crate::search) fn with_capacity(n: usize) -> IdMap {
        IdMap { dense: Vec::with_capacity(n + 1), ..IdMap::default() }
    }

    /// Ids mapped.
    pub(in crate::search) fn len(&self) -> usize {
        self.len
    }

    pub(in crate::search) fn get(&self, id: i64) -> Option<u32> {
        match usize::try_from(id).ok().and_then(|i| self.dense.get(i)) {
            Some(&d) => (d != NONE).then_some(d),
            None => self.sparse.get(&id).copied(),
        }
    }

    /// Maps `id` to `doc`; the document it mapped to before, if any.
    pub(in crate::search) fn insert(&mut self, id: i64, doc: u32) -> Option<u32> {
        debug_assert!(doc != NONE);
        if let Ok(i) = usize::try_from(id) {
            if i >= self.dense.len() && i < (self.len + 1) * SLACK + MIN_DENSE {
                self.grow(i + 1);
            }
            if let Some(slot) = self.dense.get_mut(i) {
                let old = std::mem::replace(slot, doc);
                self.len += (old == NONE) as usize;
                return (old != NONE).then_some(old);
            }
        }
        let old = self.sparse.insert(id, doc);
        self.len += old.is_none() as usize;
        old
    }

    pub(in crate::search) fn remove(&mut self, id: i64) -> Option<u32> {
        let old = match usize::try_from(id).ok().and_then(|i| self.dense.get_mut(i)) {
            Some(slot) => Some(std::mem::replace(slot, NONE)).filter(|&d| d != NONE),
            None => self.sparse.remove(&id),
        };
        self.len -= old.is_some() as usize;
        old
    }

    pub(in crate::search) fn clear(&mut self) {
        self.dense.iter_mut().for_each(|d| *d = NONE);
        self.sparse.clear();
        self.len = 0;
    }

    /// Makes the array cover ids below at least `n` (doubling, so the hash map's
    /// ids that it now covers move at most a logarithmic number of times).
    fn grow(&mut self, n: usize) {
        let n = n.max(self.dense.len() * 2).min((self.len + 1) * SLACK + MIN_DENSE).max(n);
        self.dense.resize(n, NONE);
        if !self.sparse.is_empty() {
            let covered: Vec<i64> = self.sparse.keys().copied().filter(|&id| (0..n as i64).contains(&id)).collect();
            for id in covered {
                self.dense[id as usize] = self.sparse.remove(&id).expect("listed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_and_sparse_ids_map_like_a_hash_map() {
        let mut m = IdMap::default();
        let mut reference: HashMap<i64, u32> = HashMap::new();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for step in 0..200_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let id = match x % 8 {
                0 => -(((x >> 8) % 1000) as i64),
                1 => (x >> 8) as i64,             // far beyond: sparse
                2 => ((x >> 8) % 500_000) as i64, // sparse at first, dense later
                _ => (step / 2) as i64,
            };
            if x.is_multiple_of(5) {
                assert_eq!(m.remove(id), reference.remove(&id), "remove {id}");
            } else {
                assert_eq!(m.insert(id, step), reference.insert(id, step), "insert {id}");
            }
            assert_eq!(m.len, reference.len());
        }
        for (&id, &d) in &reference {
            assert_eq!(m.get(id), Some(d));
        }
        assert!(m.dense.len() > 100_000, "ascending ids went to the array");
        assert_eq!(m.get(-1_000_001), None);
        m.clear();
        assert!(reference.keys().all(|&id| m.get(id).is_none()));
    }
}
