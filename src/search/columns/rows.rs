//! The memories the columns hold values of, one table for all columns (issue
//! 29: each column had its own ids, collections and slot map, 16 bytes a memory
//! a path). A column is then one cell per row.
//!
//! Rows are in ascending id order (a new memory has the largest id so far), so
//! a column walked backwards gives the newest first. A memory's collection never
//! changes, so one collection per row serves every column.

use crate::search::text::ids::IdMap;

#[derive(Clone, Default)]
pub(super) struct Rows {
    pub(super) ids: Vec<i64>,
    pub(super) collections: Vec<u32>,
    row_of: IdMap,
}

impl Rows {
    pub(super) fn row(&self, id: i64) -> Option<usize> {
        self.row_of.get(id).map(|r| r as usize)
    }

    pub(super) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Of the (id, collection) pairs `new`, those without a row.
    pub(super) fn missing(&self, new: impl IntoIterator<Item = (i64, u32)>) -> Vec<(i64, u32)> {
        let mut new: Vec<(i64, u32)> = new.into_iter().filter(|&(id, _)| self.row(id).is_none()).collect();
        new.sort_unstable_by_key(|a| a.0);
        new.dedup_by_key(|a| a.0);
        new
    }

    /// Adds rows for `new` (from [`Self::missing`]). If one of them is older than
    /// a row held, the rows are put back in id order: then returns, for each row,
    /// the row it was (for the columns to follow, [`super::Column::follow`]).
    pub(super) fn add(&mut self, new: Vec<(i64, u32)>) -> Option<Vec<usize>> {
        let in_order = new.first().is_none_or(|a| self.ids.last().is_none_or(|&last| last < a.0));
        for (id, c) in new {
            self.row_of.insert(id, self.ids.len() as u32);
            self.ids.push(id);
            self.collections.push(c);
        }
        if in_order {
            return None;
        }
        let mut order: Vec<usize> = (0..self.ids.len()).collect();
        order.sort_unstable_by_key(|&i| self.ids[i]);
        self.keep(&order);
        Some(order)
    }

    /// Keeps the rows `order` lists (ascending ids), in that order.
    pub(super) fn keep(&mut self, order: &[usize]) {
        self.ids = order.iter().map(|&i| self.ids[i]).collect();
        self.collections = order.iter().map(|&i| self.collections[i]).collect();
        self.row_of = IdMap::with_capacity(self.ids.len());
        for (r, &id) in self.ids.iter().enumerate() {
            self.row_of.insert(id, r as u32);
        }
    }
}
