//! What a recall asks for, validated ([`Plan`]), and what each stage hands on
//! before the memory rows are loaded ([`Ranked`]).

use std::cell::OnceCell;

use rusqlite::Connection;

use crate::error::Result;
use crate::search::columns::{Checker, ColumnIndex};
use crate::search::filter::{ContextFilter, SpatialSort};
use crate::search::spatial::PointIndex;

/// A validated recall, ready to run.
pub struct Plan<'a> {
    pub collection: &'a str,
    /// Query words (see [`crate::text::query_words`]); empty → scan newest first.
    pub words: Vec<String>,
    pub n: usize,
    pub min_confidence: f64,
    pub session_id: Option<&'a str>,
    /// Leave out this session's memories (proactive recall at end_session).
    pub exclude_session: Option<&'a str>,
    pub filter: Option<ContextFilter>,
    pub spatial: Option<SpatialSort>,
    pub rrf_k: f64,
    /// The in-process coordinates spatial_sort orders by (none: every row is read).
    pub points: Option<&'a PointIndex>,
    /// The in-process values context_filter pre-selects by (none: every row is read).
    pub columns: Option<&'a ColumnIndex>,
    /// The filter over the columns, made on first use in the recall's read
    /// transaction ([`Plan::checker`]).
    pub checker: OnceCell<Option<Checker>>,
}

/// One ranked result, before the memory row is loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    pub id: i64,
    pub score: f64,
    /// Share of the query's BM25 weight the memory holds (see `search::text::Ranking::ceiling`).
    pub lexical: Option<f64>,
    /// Cosine to the query's vector (hybrid recall).
    pub cosine: Option<f64>,
    pub distance: Option<f64>,
    /// Whether the memory matched the query (else it only satisfies the constraints).
    pub matched: bool,
}

impl<'a> Plan<'a> {
    /// Whether candidates need their context JSON (for context_filter / spatial_sort).
    pub fn needs_context(&self) -> bool {
        self.filter.is_some() || self.spatial.is_some()
    }

    /// The context filter over the in-process columns, synced in this read
    /// transaction; `None` without a filter or columns. It only
    /// pre-selects: every row loaded is still checked against its stored context
    /// ([`super::rank::admit`]).
    pub fn checker(&self, conn: &Connection) -> Result<Option<&Checker>> {
        if self.checker.get().is_none() {
            let c = match (self.columns, &self.filter) {
                (Some(c), Some(f)) => Some(c.checker(conn, f, self.collection)?),
                _ => None,
            };
            let _ = self.checker.set(c);
        }
        Ok(self.checker.get().and_then(Option::as_ref))
    }

    /// Whether the recall has constraints that hold over all memories: then it
    /// returns min(n, memories satisfying them), matches of the query first.
    pub fn constrained(&self) -> bool {
        self.filter.is_some() || self.spatial.is_some() || self.session_id.is_some()
    }
}
