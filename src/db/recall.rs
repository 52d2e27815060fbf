//! Recall on a [`Db`]: the request validated into a [`Plan`], the query
//! embedded when vector search is ready, [`recall::run`] (which chooses hybrid or
//! BM25-only recall) in one read transaction, the memory rows loaded, and with
//! group_similar the results folded ([`super::group`]).

use std::sync::Arc;

use rusqlite::Connection;

use super::{embedding, group, Db};
use crate::error::{Error, Result};
use crate::limits;
use crate::search::recall::{self, PendingVector, Plan};
use crate::search::{ContextFilter, SpatialSort};
use crate::store::memory;
use crate::text;
use crate::types::*;

impl Db {
    /// Ranks memories for a query (spec 002 pipeline). Every memory returned counts
    /// as accessed (`access_count`, `last_accessed`, written later) and the recall
    /// enters the recall statistics.
    pub fn recall(&self, req: &RecallRequest) -> Result<RecallResult> {
        self.recall_as(req, true)
    }

    /// [`Db::recall`] that is not an access: no access counter, last-access time or
    /// recall statistic changes (counting matches, previews, tools that only look).
    pub fn recall_unrecorded(&self, req: &RecallRequest) -> Result<RecallResult> {
        self.recall_as(req, false)
    }

    fn recall_as(&self, req: &RecallRequest, record: bool) -> Result<RecallResult> {
        let started = std::time::Instant::now();
        if req.query.chars().count() > limits::MAX_QUERY_CHARS {
            return Err(Error::invalid(format!("query is longer than {} characters", limits::MAX_QUERY_CHARS)));
        }
        if req.query.trim().is_empty() {
            return Err(Error::invalid("query must not be empty or blank"));
        }
        let mut plan = Plan {
            collection: self.collection(req.collection)?,
            words: text::query_words(req.query),
            n: limits::clamp_n(req.n),
            min_confidence: limits::unit_range("min_confidence", req.min_confidence, 0.0, 1.0)?,
            session_id: limits::optional_session(req.session_id)?,
            exclude_session: None,
            // Zero conditions constrain nothing: the same recall as without a filter.
            filter: req.context_filter.map(ContextFilter::parse).transpose()?.filter(|f| !f.is_empty()),
            spatial: req.spatial_sort.map(SpatialSort::parse).transpose()?,
            rrf_k: self.opts.rrf_k,
            points: Some(&self.points),
            columns: Some(&self.columns),
            checker: Default::default(),
        };
        // A query of symbols only ("*") lists memories newest first: no vector
        // search; nor while the stored vectors are another model's (no point
        // embedding the query). An index that holds this model's vectors says
        // they were ready at the last sync, which saves a read on every recall.
        let wanted = match &self.embedder {
            Some(e) if req.query.chars().any(char::is_alphanumeric) => {
                self.vindex.holds(e.stamp()) || self.store.read(|c| self.vectors_ready(c))?
            }
            _ => false,
        };
        let cjk = text::cjk_share(req.query);
        // A query asked recently has its vector kept (`embed::cache`); another is
        // embedded on another thread (one the handle keeps: `overlap`) while this
        // one starts the recall (the read transaction, the indexes' syncs, the
        // BM25 list), or on this one when none is free.
        let kept = if wanted { self.queries.get(req.query) } else { None };
        let embedding = match &self.embedder {
            Some(e) if wanted && kept.is_none() => {
                let (e, cache, text) = (Arc::clone(e), Arc::clone(&self.queries), req.query.to_string());
                self.overlap.run(move || embedding::embed_query(e.as_ref(), &cache, &text))
            }
            _ => None,
        };
        let (found, vector) = {
            let made = embedding.as_ref().map(|p| p.done());
            let query = PendingVector::later(
                move || match (kept, embedding) {
                    (Some(v), _) => Some(v),
                    (None, Some(p)) => p.join().flatten(),
                    (None, None) if wanted => self.embed_query(req.query),
                    (None, None) => None,
                },
                made,
            );
            let found = self.store.read(|conn| {
                let query = wanted.then_some(&query);
                if req.group_similar {
                    self.grouped_hits(conn, &mut plan, query, cjk)
                } else {
                    self.hits(conn, &plan, query, cjk)
                }
            });
            let vector = match query.outcome() {
                _ if !wanted => QueryVector::None,
                None => QueryVector::None,
                Some(None) => QueryVector::Unrepresentable,
                Some(Some(_)) => QueryVector::Embedded,
            };
            (found, vector)
        };
        let (hits, mode) = found?;
        // A view (`Db::as_of`) is read-only: its recalls are not accesses.
        if record && self.view.is_none() {
            self.record_recall(&hits, mode);
        }
        Ok(RecallResult { hits, mode, query_vector: vector, query_ms: started.elapsed().as_secs_f64() * 1e3 })
    }

    /// The hits of `plan`; with `query` (its vector) hybrid, `query_cjk` its
    /// text's CJK share ([`text::cjk_share`]).
    pub(super) fn hits(
        &self,
        conn: &Connection,
        plan: &Plan,
        query: Option<&PendingVector>,
        query_cjk: f64,
    ) -> Result<(Vec<Hit>, SearchMode)> {
        let query = match (query, &self.embedder) {
            (Some(vector), Some(e)) => Some(recall::QueryEmbedding {
                vector,
                model: e.stamp(),
                fusion: self.opts.fusion.unwrap_or_else(|| e.fusion()),
                cjk: query_cjk,
            }),
            _ => None,
        };
        let indexes = recall::Indexes { text: &self.index, vector: &self.vindex };
        let (ranked, mode) = recall::run(conn, &indexes, plan, query)?;
        let mut hits = Vec::with_capacity(ranked.len());
        for r in ranked {
            let memory = memory::get(conn, r.id)?.ok_or_else(|| Error::internal("ranked memory vanished"))?;
            let memory = self.as_of_fixed(memory);
            let (score, distance, matched, lexical, cosine) = (r.score, r.distance, r.matched, r.lexical, r.cosine);
            hits.push(Hit { memory, score, distance, matched, lexical, cosine, similar: Vec::new() });
        }
        Ok((hits, mode))
    }

    /// [`Db::hits`] with results that say the same thing folded together
    /// ([`group`]): ranks deeper until `plan.n` groups are found or the ranking
    /// runs dry. Scores stay normalised to the best hit.
    fn grouped_hits(
        &self,
        conn: &Connection,
        plan: &mut Plan,
        query: Option<&PendingVector>,
        query_cjk: f64,
    ) -> Result<(Vec<Hit>, SearchMode)> {
        let n = plan.n;
        let mut depth = (n * group::DEPTH).min(group::MAX_DEPTH).max(n);
        loop {
            plan.n = depth;
            let (ranked, mode) = self.hits(conn, plan, query, query_cjk)?;
            let dry = ranked.len() < depth;
            let (groups, full) = group::group(ranked, n);
            match group::deeper(depth) {
                Some(next) if !full && !dry => depth = next,
                _ => return Ok((groups, mode)),
            }
        }
    }
}
