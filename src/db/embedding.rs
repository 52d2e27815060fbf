//! The engine's embedding side: which vectors are usable, embedding texts in
//! batches, the embedding status, re-embedding, and batch learn.

use rusqlite::Connection;

use super::{learn_outcome, Db, DraftRequest};
use crate::embed::cache::QueryCache;
use crate::embed::{Embedder, Embedding, TextKind};
use crate::error::{Error, Result, Status};
use crate::limits::{self, MAX_CONTENT_CHARS};
use crate::search::recall::Embedded;
use crate::store::vectors;
use crate::types::*;

impl Db {
    /// Whether the stored vectors are this handle's model's (checked in the
    /// caller's transaction: another process may have re-embedded meanwhile).
    pub(super) fn vectors_ready(&self, conn: &Connection) -> Result<bool> {
        match &self.embedder {
            Some(e) => vectors::matches(conn, e.stamp()),
            None => Ok(false),
        }
    }

    /// Brings the vector index up to date when the stored vectors are this
    /// handle's model's; returns whether they are. In a write transaction, call it
    /// before the transaction's own writes (the index must hold committed state).
    pub(super) fn sync_vectors(&self, conn: &Connection) -> Result<bool> {
        match &self.embedder {
            Some(e) if vectors::matches(conn, e.stamp())? => {
                self.vindex.sync(conn, e.stamp())?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// In a write transaction: syncs the text index when one of `drafts` is a fact
    /// without numbers (its near-duplicate candidates come from it) and the vector
    /// index when one has a vector its cosine dedup will compare — both only up to
    /// the committed rev, never taking in the transaction's own writes (they are
    /// found by rev, and staged vectors by the vector index itself).
    pub(super) fn sync_for_dedup<'d, 'a: 'd>(
        &self,
        tx: &Connection,
        drafts: impl IntoIterator<Item = &'d super::Draft<'a>>,
    ) -> Result<()> {
        let committed = self.committed_rev();
        let (mut words, mut vectors) = (false, false);
        for d in drafts {
            words |= d.terms.numbers.is_empty() && !d.terms.set.is_empty();
            vectors |= d.vector.as_ref().and_then(Embedding::vector).is_some();
        }
        if words {
            self.index.sync_to(tx, committed)?;
        }
        if vectors {
            match &self.embedder {
                Some(e) if vectors::matches(tx, e.stamp())? => self.vindex.sync_to(tx, e.stamp(), committed)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// Stores a memory's embedding (a vector, or the mark that the model cannot
    /// represent its text); returns whether it got a vector.
    pub(super) fn store_embedding(
        &self,
        tx: &Connection,
        id: i64,
        collection: &str,
        e: Option<&Embedding>,
    ) -> Result<bool> {
        match e {
            Some(Embedding::Vector(v)) => {
                let rev = vectors::put(tx, id, collection, v)?;
                self.vindex.stage(id, rev, collection, v);
                Ok(true)
            }
            Some(Embedding::Unrepresentable) => vectors::mark_unrepresentable(tx, id).map(|_| false),
            None => Ok(false),
        }
    }

    /// Embeddings of stored texts, in batches; `None` for every text when there is
    /// no model or a model run fails (the memories are embedded later by `reembed`).
    pub(super) fn embed_passages(&self, texts: &[&str]) -> Vec<Option<Embedding>> {
        let Some(e) = &self.embedder else { return vec![None; texts.len()] };
        let batch = self.opts.embed_batch.max(1) as usize;
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(batch) {
            match e.embed(chunk, TextKind::Passage) {
                Ok(vs) => out.extend(vs.into_iter().map(Some)),
                Err(_) => out.extend(std::iter::repeat_n(None, chunk.len())),
            }
        }
        out
    }

    /// The query's vector (then recall is hybrid), made by the model and kept for the
    /// next recall of the same text (the caller looked for a kept one first): `None`
    /// when there is no model or it failed, `Some(None)` when it cannot represent
    /// the query.
    pub(super) fn embed_query(&self, query: &str) -> Embedded {
        embed_query(self.embedder.as_deref()?, &self.queries, query)
    }

    /// Whether vector search works on this handle, and why not.
    pub fn embedding_status(&self) -> Result<EmbeddingStatus> {
        let (stored, pending) = self.store.read(|c| Ok((vectors::stamp(c)?, vectors::pending_count(c)?)))?;
        let model = self.embedder.as_ref().map(|e| e.stamp().encode());
        let (state, reason) = match (&model, &stored) {
            (None, _) => (EmbeddingState::Unavailable, self.embed_note.clone()),
            (Some(m), Some(s)) if m != s => (
                EmbeddingState::ModelMismatch,
                format!(
                    "the stored vectors were made by {s}, this handle's model is {m}; call reembed to rebuild them"
                ),
            ),
            _ => (EmbeddingState::Ready, String::new()),
        };
        Ok(EmbeddingStatus {
            state,
            dim: self.embedder.as_ref().map_or(0, |e| e.stamp().dim),
            model,
            stored_model: stored,
            pending,
            kernel: vectors::kernel().1,
            reason,
            index_kernel: crate::search::vector::simd::Kernel::detected().name(),
        })
    }

    fn require_embedder(&self) -> Result<&dyn Embedder> {
        self.embedder.as_deref().ok_or_else(|| Error::new(Status::EmbeddingUnavailable, self.embed_note.clone()))
    }

    /// Embeds active memories that have no vector of this handle's model (those it
    /// cannot represent are marked and not retried until the model changes), at most
    /// `limit` of them (0: all), in batches of `embed_batch`, one short write
    /// transaction per batch. If the stored vectors belong to another model they
    /// are dropped first and every memory is re-embedded. Call repeatedly with a
    /// limit to bound each call's time.
    pub fn reembed(&self, limit: usize) -> Result<ReembedOutcome> {
        let e = self.require_embedder()?;
        let rebuilt = self.write(|tx| {
            if vectors::adopt(tx, e.stamp())? {
                return Ok(false);
            }
            vectors::reset(tx, e.stamp())?;
            Ok(true)
        })?;
        let batch = self.opts.embed_batch.max(1) as usize;
        let mut done = 0i64;
        loop {
            let want = if limit == 0 { batch } else { batch.min(limit - done as usize) };
            if want == 0 {
                break;
            }
            let todo = self.store.read(|c| vectors::pending(c, want))?;
            if todo.is_empty() {
                break;
            }
            let texts: Vec<&str> = todo.iter().map(|(_, t)| t.as_str()).collect();
            let vecs = e.embed(&texts, TextKind::Passage)?;
            done += self.write(|tx| {
                if !self.vectors_ready(tx)? {
                    return Err(Error::new(
                        Status::InvalidState,
                        "another process changed the model while re-embedding",
                    ));
                }
                let mut n = 0;
                for ((id, text), v) in todo.iter().zip(&vecs) {
                    // Skip a memory changed or forgotten since it was read.
                    if let Some(m) = crate::store::memory::get(tx, *id)? {
                        if m.status == MemoryStatus::Active && m.content == *text {
                            self.store_embedding(tx, *id, &m.collection, Some(v))?;
                            n += 1;
                        }
                    }
                }
                Ok(n)
            })?;
        }
        let remaining = self.store.read(vectors::pending_count)?;
        Ok(ReembedOutcome { embedded: done, remaining, rebuilt })
    }

    /// Learns many experiences at once: validated first (one bad item fails the
    /// whole call with a message starting "items[i]: ", and nothing is stored), embedded in batches,
    /// stored in one write transaction of its own (one commit). Each item is deduplicated
    /// against the database and the items before it.
    pub fn learn_batch(&self, reqs: &[LearnRequest]) -> Result<Vec<LearnOutcome>> {
        let mut drafts = Vec::with_capacity(reqs.len());
        for (i, req) in reqs.iter().enumerate() {
            let at = |e: Error| Error::new(e.status, format!("items[{i}]: {}", e.message));
            let insight = limits::required_text("insight", req.insight, 1, MAX_CONTENT_CHARS).map_err(at)?;
            let fields = DraftRequest {
                tags: req.tags,
                context: req.context,
                collection: req.collection,
                session_id: req.session_id,
                perception: None,
                ttl_seconds: req.ttl_seconds,
                expires_at: req.expires_at,
            };
            drafts.push(self.draft(MemoryKind::Fact, insight, fields).map_err(at)?);
        }
        let texts: Vec<&str> = drafts.iter().map(|d| d.content).collect();
        for (d, v) in drafts.iter_mut().zip(self.embed_passages(&texts)) {
            d.vector = v;
        }
        // Alone: in a transaction without a savepoint, whose statement journal
        // would otherwise grow with every page the batch touches (store::group).
        let stored = self.write_as(true, |tx| {
            self.sync_for_dedup(tx, &drafts)?;
            drafts
                .iter()
                .map(|d| self.store_draft_in(tx, d, &|tx, d, v| self.find_fact_duplicate(tx, d, v, None)))
                .collect::<Result<Vec<_>>>()
        })?;
        Ok(drafts.into_iter().zip(stored).map(|(d, s)| learn_outcome(d, s)).collect())
    }
}

/// [`Db::embed_query`] with `embedder`, keeping the vector in `cache` (which the
/// caller found without it).
pub(super) fn embed_query(embedder: &dyn Embedder, cache: &QueryCache, query: &str) -> Embedded {
    let v = match embedder.embed(&[query], TextKind::Query).ok()?.pop()? {
        Embedding::Vector(v) => Some(v),
        Embedding::Unrepresentable => None,
    };
    cache.put(query, &v);
    Some(v)
}
