//! A context filter compiled over the columns for one recall ([`Checker`]):
//! which memories can satisfy it, and those memories newest first.

use std::sync::Arc;

use super::{Cell, Column, Rows};
use crate::search::filter::{Conditions, ContextFilter, View};

/// Distinct strings of a column decided up front per recall (more: compared one
/// by one).
const MAX_DECIDED_STRINGS: usize = 4096;

/// One condition over its column.
pub(super) struct Compiled {
    column: Arc<Column>,
    ops: Conditions,
    /// Whether each interned string satisfies the condition.
    strings: Option<Vec<bool>>,
}

impl Compiled {
    pub(super) fn new(column: Arc<Column>, ops: &Conditions) -> Compiled {
        // Each distinct string decided once, if there are not too many.
        let strings = (column.strings.len() <= MAX_DECIDED_STRINGS)
            .then(|| column.strings.iter().map(|t| ContextFilter::holds(ops, View::Str(t))).collect());
        Compiled { column, ops: ops.clone(), strings }
    }

    /// Whether the value at row `r` satisfies the condition (a row without one never does).
    fn holds_at(&self, r: usize) -> bool {
        let c = &*self.column;
        match (c.at(r).get(), &self.strings) {
            (Cell::Str(s), Some(ok)) => ok[s as usize],
            (cell, _) => c.view(cell).is_some_and(|v| ContextFilter::holds(&self.ops, v)),
        }
    }
}

/// The filter's conditions over the columns, for one recall (see
/// [`ColumnIndex::checker`]). Holds the columns as they were synced for it.
pub struct Checker {
    pub(super) rows: Arc<Rows>,
    pub(super) cols: Vec<Compiled>,
    /// None: the collection has no memory holding any of the paths.
    pub(super) collection: Option<u32>,
    /// Every condition of the filter has its column here (none is left to the row check).
    pub(super) exact: bool,
}

impl Checker {
    /// Whether the columns decide the whole filter: a memory they admit satisfies
    /// it (the columns agree with the stored contexts), so a recall need not read
    /// a candidate's context to check it.
    pub fn exact(&self) -> bool {
        self.exact
    }

    /// Whether the memory at row `r` can satisfy the filter: it is of the
    /// collection and its value at each path does.
    fn admits_row(&self, r: usize) -> bool {
        Some(self.rows.collections[r]) == self.collection && self.cols.iter().all(|k| k.holds_at(r))
    }

    /// Whether memory `id` can satisfy the filter: its value at each path does
    /// (a memory lacking a path never satisfies its condition).
    pub fn admits(&self, id: i64) -> bool {
        self.cols.is_empty() || self.rows.row(id).is_some_and(|r| self.admits_row(r))
    }

    /// The ids that satisfy the filter, newest (largest) first: the rows up to the
    /// last value of the column with the fewest values, walked backwards.
    /// Lazy: a recall stops as soon as it has its n.
    pub fn newest_first(&self) -> impl Iterator<Item = i64> + '_ {
        let first = self.cols.iter().min_by_key(|k| k.column.held);
        let len = first.map_or(0, |k| k.column.cells.len());
        (0..len)
            .rev()
            .filter(move |&r| first.is_some_and(|k| k.holds_at(r)) && self.admits_row(r))
            .map(|r| self.rows.ids[r])
    }
}
