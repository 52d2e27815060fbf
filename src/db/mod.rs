//! The engine: [`Db`] ties the stages together (validate → classify → fingerprint
//! → dedup → store; recall; sessions). A `Db` is `Send + Sync`: share one between
//! threads. Here: open, the write path (learn, save_perception, update, forget);
//! recall is in `recall`, embedding-related operations (status, re-embed, batch
//! learn) in `embedding`, the fleet's outbox and merge in `fleet` / `fleet_apply`.

mod browse;
mod change;
mod cipher;
mod embedding;
mod expiry;
mod fleet;
mod fleet_apply;
mod group;
mod history;
mod overlap;
mod recall;
mod retention;
mod sessions;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_batch;
mod touches;
pub mod transfer;

use parking_lot::Mutex;
use rusqlite::Connection;

use crate::classify;
use crate::dedup;
use crate::embed::{self, Embedder, Embedding};
use crate::error::{Error, Result};
use crate::fingerprint::{self, Terms};
use crate::limits::{self, MAX_CONTENT_CHARS};
use crate::options::OpenOptions;
use crate::search;
use crate::session;
use crate::store::{memory, vectors, Store};
use crate::text;
use crate::types::*;

/// Perception fields of a draft: type, data, metadata.
type PerceptionParts<'a> = (PerceptionType, Option<&'a [u8]>, Option<&'a str>);

/// The caller-given fields of a new memory besides its text.
struct DraftRequest<'a> {
    tags: &'a [&'a str],
    context: Option<&'a str>,
    collection: Option<&'a str>,
    session_id: Option<&'a str>,
    perception: Option<PerceptionParts<'a>>,
    /// Time to live in seconds, or the expiry time (at most one; neither: the
    /// collection's default, see `OpenOptions::default_ttl`).
    ttl_seconds: Option<f64>,
    expires_at: Option<&'a str>,
}

/// A new memory, validated, classified and hashed, ready for its write transaction.
struct Draft<'a> {
    collection: &'a str,
    session: Option<&'a str>,
    kind: MemoryKind,
    content: &'a str,
    perception: Option<PerceptionParts<'a>>,
    user_tags: Vec<String>,
    cls: classify::Classification,
    ctx_json: String,
    is_real: bool,
    hash: String,
    terms: Terms,
    /// The text's embedding, when a model is loaded and it worked.
    vector: Option<Embedding>,
    /// When it expires (stored-time format); `None`: never.
    expires_at: Option<String>,
}

impl<'a> Draft<'a> {
    /// The row of this draft, with its category, confidence and decay rate (the
    /// classifier's for a learn, the file's for an import) and creation time.
    fn row(&'a self, category: &'a str, confidence: f64, decay_rate: f64, now: &'a str) -> memory::NewMemory<'a> {
        let (ptype, data, meta) = self.perception.map_or((None, None, None), |(t, a, m)| (Some(t), a, m));
        memory::NewMemory {
            session_id: self.session,
            collection: self.collection,
            kind: self.kind,
            content: self.content,
            context: &self.ctx_json,
            perception_type: ptype,
            perception_data: data,
            perception_metadata: meta,
            category,
            confidence,
            decay_rate,
            content_hash: &self.hash,
            scope: &self.cls.scope,
            is_real: self.is_real,
            terms: &self.terms,
            now,
            expires_at: self.expires_at.as_deref(),
            stored_at: None,
            remote: None,
        }
    }
}

/// What `store_draft` did.
struct Stored {
    id: i64,
    duplicate: Option<Duplicate>,
    embedded: bool,
    /// Memories evicted to make room for it (see `retention`).
    evicted: Vec<i64>,
}

/// An open robotmem database.
pub struct Db {
    store: Store,
    index: search::text::TextIndex,
    vindex: search::vector::VectorIndex,
    /// Coordinates for spatial_sort (search/spatial).
    points: search::spatial::PointIndex,
    /// Values for context_filter (search/columns).
    columns: search::columns::ColumnIndex,
    opts: OpenOptions,
    /// Recall bookkeeping not yet written (`touches`).
    touches: Mutex<touches::Pending>,
    embedder: Option<std::sync::Arc<dyn Embedder>>,
    /// Why there is no embedder (empty when there is one).
    embed_note: String,
    /// See [`Db::committed_rev`]; set when a write transaction begins.
    base_rev: std::sync::atomic::AtomicI64,
    /// The index snapshots were saved (or tried) by `close` or drop.
    saved: std::sync::atomic::AtomicBool,
    /// Set on a view of the database as of a past time ([`Db::as_of`]).
    view: Option<history::View>,
    /// Threads kept for recalls' query embeddings (`overlap`).
    overlap: overlap::Pool,
    /// Vectors of recent query texts.
    queries: std::sync::Arc<embed::cache::QueryCache>,
}

/// Rows changed since an index's stored snapshot that make closing a handle
/// store a new one: fewer cost the next handle less than writing it (a few µs per
/// row against ~1 µs per memory).
const SNAPSHOT_MIN_CHANGES: i64 = 256;

impl crate::store::TxHooks for Db {
    fn begin(&self, conn: &Connection) -> Result<()> {
        let head = conn.prepare_cached("SELECT coalesce(max(rev), 0) FROM memories")?.query_row([], |r| r.get(0))?;
        self.base_rev.store(head, std::sync::atomic::Ordering::Relaxed);
        self.vindex.finish(false); // a retried attempt starts with nothing staged
        Ok(())
    }

    fn end(&self, committed: bool) {
        self.vindex.finish(committed);
    }
}

impl Db {
    /// The handle's current time as stored (UTC, milliseconds:
    /// `2026-03-09T10:30:00.123Z`), read from its clock ([`crate::Clock`]).
    pub fn now(&self) -> String {
        self.opts.clock.stamp()
    }

    /// Opens (creating if needed) the database described by `opts`.
    pub fn open(mut opts: OpenOptions) -> Result<Db> {
        opts.default_collection = opts.default_collection.trim().to_string();
        opts.validate()?;
        if opts.preload {
            text::preload_segmenter();
        }
        let store = Store::open(&opts)?;
        let (index, vindex) = (search::text::TextIndex::default(), search::vector::VectorIndex::default());
        let (embedder, embed_note) = match opts.embeddings {
            false => (None, "embeddings are turned off in the open options; BM25 only".to_string()),
            true => match Self::load_model_meanwhile(&opts, &store, &index, &vindex) {
                Ok(e) => (Some(std::sync::Arc::from(e)), String::new()),
                Err(e) => (None, e.message),
            },
        };
        Self::assemble(opts, store, (index, vindex), embedder, embed_note)
    }

    /// A handle over an open store and its (possibly preloaded) indexes.
    fn assemble(
        opts: OpenOptions,
        store: Store,
        (index, vindex): (search::text::TextIndex, search::vector::VectorIndex),
        embedder: Option<std::sync::Arc<dyn Embedder>>,
        embed_note: String,
    ) -> Result<Db> {
        if let Some(e) = embedder.as_ref().filter(|_| !store.read_only()) {
            if store.read(vectors::stamp)?.is_none() {
                store.write(&crate::store::NoHooks, |tx| vectors::adopt(tx, e.stamp()))?;
            }
        }
        let db = Db {
            store,
            touches: Mutex::new(touches::Pending::default()),
            index,
            vindex,
            points: Default::default(),
            columns: Default::default(),
            embedder,
            embed_note,
            base_rev: Default::default(),
            saved: Default::default(),
            view: None,
            overlap: Default::default(),
            queries: std::sync::Arc::new(embed::cache::QueryCache::new(opts.query_cache)),
            opts,
        };
        if db.opts.preload {
            db.store.read(|c| {
                db.index.sync(c)?;
                db.sync_vectors(c).map(|_| ())
            })?;
        }
        Ok(db)
    }

    /// Loads the embedding model (ONNX Runtime session, tokenizer, stamp hash:
    /// 100–300 ms) on a thread of its own and meanwhile loads, on this one, what
    /// the first recall would: the text index and the vector index of the model the
    /// file's vectors are stamped with (from their snapshots). Best effort: a
    /// failure here leaves the index to the first call that needs it, which reports
    /// it; a model other than the stamped one reloads the vector index there.
    fn load_model_meanwhile(
        opts: &OpenOptions,
        store: &Store,
        index: &search::text::TextIndex,
        vindex: &search::vector::VectorIndex,
    ) -> Result<Box<dyn embed::Embedder>> {
        let settings = opts.embed_settings();
        std::thread::scope(|s| {
            let model = std::thread::Builder::new()
                .name("robotmem-model".into())
                .spawn_scoped(s, || embed::load(&settings))
                .map_err(|e| Error::internal(format!("cannot start a thread to load the model: {e}")))?;
            let _ = store.read(|c| {
                index.sync(c)?;
                if let Some(stamp) = vectors::stamp(c)?.as_deref().and_then(embed::ModelStamp::decode) {
                    vindex.sync(c, &stamp)?;
                }
                Ok(())
            });
            model.join().unwrap_or_else(|_| Err(Error::internal("loading the model failed (a panic)")))
        })
    }

    /// Memories in the in-process text index and vectors in the vector index now,
    /// without syncing either (for tests and diagnostics).
    #[doc(hidden)]
    pub fn loaded_indexes(&self) -> (usize, usize) {
        (self.index.len(), self.vindex.len())
    }

    pub fn options(&self) -> &OpenOptions {
        &self.opts
    }

    /// A write that first applies pending recall touches. It may share its
    /// transaction with other threads' writes (group commit, see `store::group`):
    /// a failed write rolls back alone, including the vectors it staged.
    fn write<T: Send>(&self, f: impl FnMut(&Connection) -> Result<T> + Send) -> Result<T> {
        self.write_as(false, f)
    }

    /// [`Db::write`] with `alone`: in a transaction of its own (see
    /// `Store::write_alone`), for writes of many rows.
    fn write_as<T: Send>(&self, alone: bool, mut f: impl FnMut(&Connection) -> Result<T> + Send) -> Result<T> {
        let pending = self.take_pending();
        let job = |tx: &Connection| {
            let mark = self.vindex.staged_mark();
            let r = pending.apply(tx).and_then(|()| f(tx));
            if r.is_err() {
                self.vindex.truncate_staged(mark);
            }
            r
        };
        let result = if alone { self.store.write_alone(self, job) } else { self.store.write(self, job) };
        if result.is_err() {
            self.requeue(pending);
        }
        result
    }

    /// Writes committed so far on this handle and the transactions that committed
    /// them: fewer transactions than writes when threads' writes were grouped
    /// (diagnostics and benchmarks).
    pub fn commit_counts(&self) -> (u64, u64) {
        self.store.commit_counts()
    }

    /// The `rev` committed before the current write transaction began: in-process
    /// indexes synced inside it stop there, so they never take in writes that might
    /// still roll back (a group's earlier writes are uncommitted).
    fn committed_rev(&self) -> i64 {
        self.base_rev.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Writes recorded recall touches now (also done by every write and on drop).
    pub fn flush(&self) -> Result<()> {
        self.write(|_| Ok(()))
    }

    /// Closes the database and reports what dropping it would not: pending access
    /// counters that could not be written, and a write-ahead log that could not be
    /// copied into the database file (disk full, I/O error). Committed writes are never
    /// lost either way: they stay in the `-wal` file and are applied at the next open.
    pub fn close(self) -> Result<()> {
        self.save_snapshots();
        let flushed = if self.touches.lock().is_empty() { Ok(()) } else { self.flush() };
        let checkpointed = self.store.checkpoint();
        flushed.and(checkpointed)
    }

    /// Saves the in-process indexes (vectors, filter columns, coordinates, text)
    /// in the file where enough changed since the copy stored (see
    /// `search::snapshot`), so the next open does not rebuild them. Once per
    /// handle, as it closes: each index is released once its copy is written, and
    /// they go in the order of their largest row (the vectors' rows hold 1,024
    /// vectors, a column's 6–13 bytes a memory, the coordinates' ~30, the
    /// text index's ~40), so an encoding is made while the indexes before it are gone
    /// (at 1M memories, BM25 only, the close held all of them and the text
    /// index's 41 MB encoding at once).
    /// Best effort: a failure (disk full, `max_db_bytes`) only costs the next
    /// open the rebuild. Each in a transaction of its own: the vectors' ~1 KB a
    /// memory must not cost the others their save.
    fn save_snapshots(&self) {
        let in_memory = self.opts.location == crate::options::Location::InMemory;
        let kept = !in_memory && !self.opts.read_only && self.view.is_none();
        if !kept || self.saved.swap(true, std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let _ = self.write(|tx| self.vindex.save(tx, SNAPSHOT_MIN_CHANGES));
        self.vindex.release();
        let _ = self.write(|tx| self.columns.save(tx, SNAPSHOT_MIN_CHANGES));
        self.columns.release();
        let _ = self.write(|tx| self.points.save(tx, SNAPSHOT_MIN_CHANGES));
        self.points.release();
        let _ = self.write(|tx| self.index.save(tx, SNAPSHOT_MIN_CHANGES));
        self.index.release();
    }

    fn collection<'a>(&'a self, c: Option<&'a str>) -> Result<&'a str> {
        limits::collection(c, &self.opts.default_collection)
    }

    /// Validates, classifies and hashes a new memory outside any lock.
    fn draft<'a>(&'a self, kind: MemoryKind, content: &'a str, req: DraftRequest<'a>) -> Result<Draft<'a>> {
        let collection = self.collection(req.collection)?;
        let session = limits::optional_session(req.session_id)?;
        let ctx_text = limits::context("context", req.context)?;
        let user_tags = limits::user_tags(req.tags)?;
        let expires_at =
            limits::expiry(req.ttl_seconds, req.expires_at, self.opts.ttl_for(collection), self.opts.clock.now())?;
        let (cls, source, hash) = match req.perception {
            None => (classify::classify(content, &ctx_text), classify::LEARN_SOURCE, fingerprint::fact_hash(content)),
            Some((t, data, meta)) => (
                classify::classify_perception(content, &ctx_text),
                classify::PERCEPTION_SOURCE,
                fingerprint::perception_hash(content, t.as_str(), data, meta),
            ),
        };
        let ctx = classify::build_context_json_with_source(&ctx_text, source);
        Ok(Draft {
            collection,
            session,
            kind,
            content,
            perception: req.perception,
            user_tags,
            is_real: search::is_real_world(&ctx),
            ctx_json: serde_json::to_string(&ctx)?,
            cls,
            hash,
            terms: Terms::of(content),
            vector: None,
            expires_at,
        })
    }

    /// Stores a draft inside the caller's write transaction, unless its session is
    /// not active or `find_dup` finds an equivalent memory. `find_dup` is told
    /// whether the stored vectors are comparable with the draft's.
    fn store_draft_in(
        &self,
        tx: &Connection,
        d: &Draft,
        find_dup: &impl Fn(&Connection, &Draft, bool) -> Result<Option<Duplicate>>,
    ) -> Result<Stored> {
        {
            let session = d.session.map(|s| session::require(tx, s).map(|row| (s, row))).transpose()?;
            let vec_ok = d.vector.is_some() && self.vectors_ready(tx)?;
            // A duplicate is reported even when the session has ended: nothing is written.
            if let Some(dup) = find_dup(tx, d, vec_ok)? {
                return Ok(Stored { id: dup.existing_id, duplicate: Some(dup), embedded: false, evicted: Vec::new() });
            }
            if let Some((id, row)) = session {
                row.ensure_active(id)?;
            }
            let evicted = self.make_room(tx, d.collection)?;
            Ok(Stored { evicted, ..self.insert_draft(tx, d, vec_ok, &self.now())? })
        }
    }

    /// Inserts a checked, deduplicated draft as learned (or perceived) at `at`,
    /// with its classification, tags and vector (when `vec_ok`).
    fn insert_draft(&self, tx: &Connection, d: &Draft, vec_ok: bool, at: &str) -> Result<Stored> {
        let new = d.row(d.cls.category, d.cls.confidence, self.opts.decay_rate, at);
        let id = memory::insert(tx, &new)?;
        memory::set_auto_tags(tx, id, &d.cls.tags)?;
        memory::add_user_tags(tx, id, &d.user_tags)?;
        let embedded = vec_ok && self.store_embedding(tx, id, d.collection, d.vector.as_ref())?;
        Ok(Stored { id, duplicate: None, embedded, evicted: Vec::new() })
    }

    /// Stores an experience, unless an equivalent one exists (then reports it).
    pub fn learn(&self, req: &LearnRequest) -> Result<LearnOutcome> {
        let insight = limits::required_text("insight", req.insight, 1, MAX_CONTENT_CHARS)?;
        let fields = DraftRequest {
            tags: req.tags,
            context: req.context,
            collection: req.collection,
            session_id: req.session_id,
            perception: None,
            ttl_seconds: req.ttl_seconds,
            expires_at: req.expires_at,
        };
        let mut d = self.draft(MemoryKind::Fact, insight, fields)?;
        d.vector = self.embed_passages(&[insight]).pop().flatten();
        let stored = self.write(|tx| {
            self.sync_for_dedup(tx, std::slice::from_ref(&d))?;
            self.store_draft_in(tx, &d, &|tx, d, v| self.find_fact_duplicate(tx, d, v, None))
        })?;
        Ok(learn_outcome(d, stored))
    }

    /// Dedup of a new fact (or a fact's new text, other than memory `exclude`):
    /// exact → near-duplicate words → cosine (when `vec_ok`).
    fn find_fact_duplicate(
        &self,
        tx: &Connection,
        d: &Draft,
        vec_ok: bool,
        exclude: Option<i64>,
    ) -> Result<Option<Duplicate>> {
        if let Some(x) = dedup::exact(tx, d.collection, &d.hash, exclude)? {
            return Ok(Some(x));
        }
        if let Some(x) = dedup::near(tx, &self.index, d.collection, &d.terms, exclude)? {
            return Ok(Some(x));
        }
        match (d.vector.as_ref().and_then(Embedding::vector), vec_ok) {
            (Some(v), true) => {
                let model = self.embedder.as_ref().expect("vectors are ready").stamp();
                let near = search::vector::Nearest { index: &self.vindex, model, collection: d.collection };
                dedup::cosine(tx, &near, v, &d.terms, self.opts.cosine_dedup, exclude)
            }
            _ => Ok(None),
        }
    }

    /// Stores perception / trajectory data with its description. Only an identical
    /// perception (description, type, data, metadata) counts as a duplicate.
    pub fn save_perception(&self, req: &PerceptionRequest) -> Result<PerceptionOutcome> {
        let desc =
            limits::required_text("description", req.description, limits::MIN_DESCRIPTION_CHARS, MAX_CONTENT_CHARS)?;
        if let Some(d) = req.data {
            limits::perception_data("data", d)?;
        }
        let metadata = limits::perception_metadata("metadata", req.metadata)?;
        let ptype = req.perception_type;
        let fields = DraftRequest {
            tags: req.tags,
            context: req.context,
            collection: req.collection,
            session_id: req.session_id,
            perception: Some((ptype, req.data, metadata)),
            ttl_seconds: req.ttl_seconds,
            expires_at: req.expires_at,
        };
        let mut d = self.draft(MemoryKind::Perception, desc, fields)?;
        d.vector = self.embed_passages(&[desc]).pop().flatten();
        let stored =
            self.write(|tx| self.store_draft_in(tx, &d, &|tx, d, _| dedup::exact(tx, d.collection, &d.hash, None)))?;
        Ok(PerceptionOutcome {
            memory_id: stored.id,
            duplicate: stored.duplicate,
            perception_type: ptype,
            collection: d.collection.to_string(),
            has_embedding: stored.embedded,
            evicted: stored.evicted,
        })
    }

    /// One memory by id, whatever its status.
    pub fn get(&self, id: i64) -> Result<Memory> {
        let id = limits::memory_id(id)?;
        let m = self.store.read(|c| memory::get(c, id))?;
        let m = m.ok_or_else(|| Error::not_found(format!("memory #{id} does not exist")))?;
        Ok(self.as_of_fixed(m))
    }

    /// Tags of a memory (automatic and user), sorted.
    pub fn tags(&self, id: i64) -> Result<Vec<String>> {
        let id = limits::memory_id(id)?;
        self.store.read(|c| memory::tags(c, id))
    }
}

/// The outcome of learning draft `d`.
fn learn_outcome(d: Draft, stored: Stored) -> LearnOutcome {
    LearnOutcome {
        memory_id: stored.id,
        duplicate: stored.duplicate,
        category: d.cls.category.to_string(),
        confidence: d.cls.confidence,
        tags: d.cls.tags.into_iter().chain(d.user_tags).collect(),
        scope_files: d.cls.scope.files,
        has_embedding: stored.embedded,
        evicted: stored.evicted,
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        self.save_snapshots();
        if !self.touches.lock().is_empty() {
            let _ = self.flush();
        }
    }
}
