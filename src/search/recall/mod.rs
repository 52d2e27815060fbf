//! The recall pipeline of spec 002, one entry: [`run`] takes the indexes, the
//! plan and the query's vector (if any) and makes the one choice between
//! hybrid recall ([`hybrid`]: a vector, and the stored vectors are its model's)
//! and BM25 alone ([`lexical`]).
//!
//! candidates (BM25 from the in-process index, or newest first when the query has
//! no word; [`candidates`]) →
//! RRF score `1/(k + rank + 1)` → real-world ×1.5 → SQL-side min_confidence and
//! session filters → context_filter → spatial max_distance → top-k (by score, or
//! by distance for spatial_sort) → MaxScore normalisation ([`rank`]).
//!
//! Filters are exact: candidates are consumed in rank order until no later
//! candidate could still enter the top-k (a later one scores at most
//! `1.5/(k + rank + 1)`), so when at least n memories match the query and every
//! filter, n are returned — there is no fixed over-fetch that runs dry.
//!
//! Constraints (context_filter, session, spatial_sort) hold over *all* memories,
//! not only those that match the query ([`constrained`]): a constrained recall
//! returns min(n, memories satisfying them) — the query's matches first, then
//! the newest other memories that satisfy them; with spatial_sort the n nearest
//! of all that satisfy them (relevance breaks distance ties). Each hit says
//! whether it matched the query. Hybrid recall fuses BM25 with cosines as
//! [`fusion`] describes.

pub mod candidates;
pub mod constrained;
pub mod fusion;
pub mod hybrid;
mod lexical;
mod plan;
mod rank;

use rusqlite::Connection;

use crate::embed::{FusionConfig, ModelStamp};
use crate::error::Result;
use crate::search::text::TextIndex;
use crate::search::vector::{Nearest, VectorIndex};
use crate::store::vectors;
use crate::types::SearchMode;
pub use plan::{Plan, Ranked};
pub use rank::{is_real_world, rrf_merge};

/// The in-process indexes a recall ranks with (the coordinates and the filter
/// columns it reads are the plan's: [`Plan::points`], [`Plan::columns`]).
pub struct Indexes<'a> {
    pub text: &'a TextIndex,
    pub vector: &'a VectorIndex,
}

/// The query's vector, possibly still being made on another thread while the
/// recall starts (its BM25 list needs no vector): [`PendingVector::get`] waits
/// for it the first time.
pub struct PendingVector<'a> {
    outcome: std::cell::OnceCell<Embedded>,
    wait: std::cell::Cell<Option<Box<dyn FnOnce() -> Embedded + 'a>>>,
    /// Set by the thread making the vector when it is made; `None`: the vector
    /// is not being made elsewhere (it is ready, or made on this thread when asked).
    made: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// What embedding a query gave: `None` when embedding failed, `Some(None)` when
/// the model cannot represent the query.
pub type Embedded = Option<Option<Vec<f32>>>;

impl<'a> PendingVector<'a> {
    /// A vector to come from `f`; `made`, if given, says when the thread making
    /// it has finished (see [`Self::on_its_way`]).
    pub fn later(
        f: impl FnOnce() -> Embedded + 'a,
        made: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    ) -> Self {
        PendingVector { outcome: Default::default(), wait: std::cell::Cell::new(Some(Box::new(f))), made }
    }

    /// Whether the vector is still being made on another thread (asking for it
    /// now would wait).
    pub fn on_its_way(&self) -> bool {
        self.outcome.get().is_none()
            && self.made.as_ref().is_some_and(|m| !m.load(std::sync::atomic::Ordering::Acquire))
    }

    /// What embedding the query gave (waits for it).
    pub fn outcome(&self) -> &Embedded {
        self.outcome.get_or_init(|| self.wait.take().and_then(|f| f()))
    }

    /// The query's vector (waits for it); `None`: no vector.
    pub fn get(&self) -> Option<&[f32]> {
        self.outcome().as_ref()?.as_deref()
    }
}

/// The query's embedding, for hybrid recall.
pub struct QueryEmbedding<'a, 'v> {
    pub vector: &'a PendingVector<'v>,
    /// The model that made it.
    pub model: &'a ModelStamp,
    pub fusion: FusionConfig,
    /// The query text's CJK share ([`crate::text::cjk_share`]).
    pub cjk: f64,
}

/// Runs the plan: hybrid when the query has a vector and the stored vectors are
/// its model's (the vector index is then synced in this read transaction, and the
/// BM25 list made before the query's vector is waited for), else BM25 alone. Results best first (nearest first with spatial_sort), scores
/// normalised to a maximum of 1.0.
pub fn run(
    conn: &Connection,
    indexes: &Indexes,
    plan: &Plan,
    query: Option<QueryEmbedding>,
) -> Result<(Vec<Ranked>, SearchMode)> {
    match query {
        Some(q) if vectors::matches(conn, q.model)? => {
            // What needs no vector first: the query's may still be on its way.
            indexes.vector.sync(conn, q.model)?;
            let words = hybrid::words_list(conn, indexes.text, plan)?;
            // While the vector is on its way, bring what its search reads first into
            // the CPU's caches (docs/BENCHMARKS.md, "Where a hybrid recall's time goes").
            // Also with spatial_sort, which does not read them: skipping it there made
            // spatial recalls slower (p50 1.14 / 1.48 / 1.47 -> 1.69 / 1.60 / 2.25 ms in
            // three alternated runs), the waiting core left to idle.
            if q.vector.on_its_way() {
                indexes.vector.warm(plan.collection, &|| !q.vector.on_its_way());
            }
            let Some(vector) = q.vector.get() else { return lexical::run(conn, indexes.text, plan) };
            let near = Nearest { index: indexes.vector, model: q.model, collection: plan.collection };
            let query = hybrid::Query { vector, near, fusion: q.fusion, query_cjk: q.cjk };
            hybrid::run(conn, indexes.text, plan, &query, words)
        }
        _ => lexical::run(conn, indexes.text, plan),
    }
}
