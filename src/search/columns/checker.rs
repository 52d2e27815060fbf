//! A context filter compiled over the columns for one recall ([`Checker`]):
//! which memories can satisfy it, and those memories newest first.

use std::sync::Arc;

use super::{Cell, Column};
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

    fn holds_at(&self, collection: Option<u32>, i: usize) -> bool {
        let c = &*self.column;
        if Some(c.collections[i]) != collection {
            return false;
        }
        match (c.cells[i].get(), &self.strings) {
            (Cell::Str(s), Some(ok)) => ok[s as usize],
            (cell, _) => c.view(cell).is_some_and(|v| ContextFilter::holds(&self.ops, v)),
        }
    }
}

/// The filter's conditions over the columns, for one recall (see
/// [`ColumnIndex::checker`]). Holds the columns as they were synced for it.
pub struct Checker {
    pub(super) cols: Vec<Compiled>,
    /// None: the collection has no memory holding any of the paths.
    pub(super) collection: Option<u32>,
}

impl Checker {
    /// Whether memory `id` can satisfy the filter: its value at each path does
    /// (a memory lacking a path never satisfies its condition).
    pub fn admits(&self, id: i64) -> bool {
        self.cols.iter().all(|k| k.column.slot(id).is_some_and(|i| k.holds_at(self.collection, i)))
    }

    /// The ids that satisfy the filter, newest (largest) first: the shortest
    /// column walked backwards, each id checked against the others.
    /// Lazy: a recall stops as soon as it has its n.
    pub fn newest_first(&self) -> impl Iterator<Item = i64> + '_ {
        let first = self.cols.iter().min_by_key(|k| k.column.ids.len() - k.column.dead);
        let len = first.map_or(0, |k| k.column.ids.len());
        (0..len)
            .rev()
            .filter_map(move |i| {
                let k = first?;
                k.holds_at(self.collection, i).then(|| k.column.ids[i])
            })
            .filter(|&id| self.admits(id))
    }
}
