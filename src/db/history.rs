//! History on a [`Db`]: a memory's versions ([`Db::history`]) and a read-only
//! view of the database as it was at a past time ([`Db::as_of`]), on which
//! recall, get and listing run unchanged. The versions are kept by a trigger
//! (`store::history`); current reads never look at them.

use std::collections::{HashMap, HashSet};

use rusqlite::types::Value;
use rusqlite::{params, Connection};

use super::Db;
use crate::error::{Error, Result};
use crate::key::Key;
use crate::limits;
use crate::options::{Durability, Location};
use crate::store::scratch::ScratchDir;
use crate::store::{history, vectors, Store};
use crate::types::*;

/// What a view needs to answer as of its time (see [`Db::as_of`]).
pub(super) struct View {
    /// The time it shows (stored-time format).
    pub at: String,
    /// Expiry times still ahead at `at`: the view stores none for these (its
    /// recall compares expiries with the clock); its reads put them back.
    pub expiries: HashMap<i64, String>,
    /// The directory of its file, removed when the view is dropped (after its
    /// store: `view` is the last field of `Db`).
    _dir: ScratchDir,
}

impl Db {
    /// Every version of memory `id`, oldest first, the current one last: what it
    /// said and was, from when to when, and what changed it (update, forget,
    /// consolidation, expiry, the fleet, an import). A memory never changed has
    /// one version.
    pub fn history(&self, id: i64) -> Result<Vec<MemoryVersion>> {
        let id = limits::memory_id(id)?;
        let versions = self.store.read(|c| history::versions(c, id))?;
        if versions.is_empty() {
            return Err(Error::not_found(format!("memory #{id} does not exist")));
        }
        Ok(versions)
    }

    /// A read-only view of this database as it was at `at` (RFC 3339, not in
    /// the future): the memories this file had then, each with its content,
    /// context, category and state of that time (forgotten, superseded or expired
    /// only if it was by then), and the sessions of then. Recall (hybrid and
    /// BM25, filters, spatial sort), get and list work on it as on the database;
    /// any write fails with `Status::ReadOnly`. A view is built when asked for,
    /// in a file of its own in a private temporary directory (`$TMPDIR`, mode
    /// 0700; encrypted with a random key when this database is), removed when
    /// the view is dropped: it copies the rows and vectors of then and embeds
    /// the texts that changed since (164 ms at 10k memories without a model,
    /// 3.6 s at 100k with one), so keep it for several reads. Confidence is the
    /// memory's current one, or for a version replaced since, the one it had when
    /// it was replaced. A view is not itself a view's source.
    pub fn as_of(&self, at: &str) -> Result<Db> {
        if self.view.is_some() {
            return Err(Error::invalid("as_of on a view: take the view from the database itself"));
        }
        let at = limits::timestamp("as_of", at)?;
        if at > self.now() {
            return Err(Error::invalid(format!("as_of {at} is in the future")));
        }
        // The view's own file, in a private temporary directory: a copy of the
        // rows of then must not cost the robot their size in memory. Encrypted
        // with a key of its own when the database is encrypted.
        let dir = ScratchDir::new("robotmem-view")?;
        let mut opts = self.opts.clone();
        opts.location = Location::Path(dir.path().join("view.db"));
        (opts.read_only, opts.verify, opts.preload, opts.embeddings) = (false, false, false, false);
        (opts.durability, opts.max_db_bytes, opts.max_memories) = (Durability::Normal, None, 0);
        opts.collection_max_memories.clear();
        // The view's "now" is its time: what had expired by then reads as expired
        // (and the view needs nothing of the handle's clock, which it may outlive).
        let then = chrono::DateTime::parse_from_rfc3339(&at).map_err(|e| Error::internal(e.to_string()))?;
        opts.clock = crate::clock::Clock::fixed(then.with_timezone(&chrono::Utc));
        let keyed = opts.key.is_some() || opts.key_file.is_some();
        opts.key_file = None;
        opts.key = keyed.then(Key::random);
        let store = Store::open(&opts)?;
        let mut view = Db::assemble(opts, store, Default::default(), self.embedder.clone(), self.embed_note.clone())?;
        // A new store: its writer is free.
        let copied = self.store.read(|src| {
            (view.store.try_write(|dst| self.copy_as_of(src, dst, &at)))
                .unwrap_or_else(|| Err(Error::internal("a new view's connection is busy")))
        })?;
        if view.embedder.is_some() {
            // The texts of then that are not the stored ones: their vectors.
            while view.reembed(512)?.remaining > 0 {}
        }
        view.store.freeze(format!("this is a view of the database as of {at}: read-only"));
        view.view = Some(View { at, expiries: copied.expiries, _dir: dir });
        Ok(view)
    }

    /// Copies into `dst` (an empty database) what `src` held at `at`: the rows,
    /// their tags, the sessions, and the stored vectors of the texts unchanged since.
    fn copy_as_of(&self, src: &Connection, dst: &Connection, at: &str) -> Result<history::Copied> {
        let changed: HashSet<i64> = history::changed_since(src, at)?.into_iter().collect();
        // The view's own history stays empty: it is never changed.
        dst.execute_batch("DROP TRIGGER memory_versioned; DROP TRIGGER memory_versions_removed;")?;
        let copied = history::copy_at(src, dst, at, &changed)?;
        copy_tags_and_sessions(src, dst, at, &copied.known)?;
        if let Some(e) = self.embedder.as_ref().filter(|e| vectors::matches(src, e.stamp()).unwrap_or(false)) {
            let mut failed = None;
            vectors::for_each_stored(src, e.stamp().dim, |id, collection, v| {
                if failed.is_none() && copied.known.contains(&id) && !changed.contains(&id) {
                    failed = vectors::insert(dst, id, collection, v).err();
                }
            })?;
            failed.map_or(Ok(()), Err)?;
        }
        Ok(copied)
    }

    /// On a view: puts back into a memory read from it the expiry it had at the
    /// view's time (see [`View::expiries`]).
    pub(super) fn as_of_fixed(&self, mut m: Memory) -> Memory {
        if let Some(t) = self.view.as_ref().and_then(|v| v.expiries.get(&m.id)) {
            m.expires_at = Some(t.clone());
            m.expired = false;
        }
        m
    }

    /// The time a view shows (`None` for the database itself).
    pub fn view_time(&self) -> Option<&str> {
        self.view.as_ref().map(|v| v.at.as_str())
    }
}

/// The tags of the memories copied, and the sessions and outcomes of then (a
/// session ended after `at` was still going).
fn copy_tags_and_sessions(src: &Connection, dst: &Connection, at: &str, known: &HashSet<i64>) -> Result<()> {
    let mut tags = src.prepare("SELECT memory_id, tag, source FROM memory_tags")?;
    let mut put = dst.prepare("INSERT INTO memory_tags (memory_id, tag, source) VALUES (?1, ?2, ?3)")?;
    let mut rows = tags.query([])?;
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        if known.contains(&id) {
            put.execute(params![id, r.get::<_, String>(1)?, r.get::<_, String>(2)?])?;
        }
    }
    dst.execute_batch("DELETE FROM sessions")?;
    let mut sessions = src.prepare(
        "SELECT id, external_id, collection, context, session_count, client_type, created_at,
                CASE WHEN ended_at IS NOT NULL AND ended_at <= ?1 THEN ended_at END
         FROM sessions WHERE created_at <= ?1",
    )?;
    let mut put = dst.prepare(
        "INSERT INTO sessions (id, external_id, collection, context, session_count, status, client_type, created_at,
                               ended_at)
         VALUES (?1, ?2, ?3, ?4, ?5, CASE WHEN ?8 IS NULL THEN 'active' ELSE 'ended' END, ?6, ?7, ?8)",
    )?;
    let mut rows = sessions.query([at])?;
    while let Some(r) = rows.next()? {
        let row = (0..8).map(|i| r.get::<_, Value>(i)).collect::<rusqlite::Result<Vec<_>>>()?;
        put.execute(rusqlite::params_from_iter(row))?;
    }
    let mut outcomes =
        src.prepare("SELECT session_id, score, created_at FROM session_outcomes WHERE created_at <= ?1")?;
    let mut put = dst.prepare("INSERT INTO session_outcomes (session_id, score, created_at) VALUES (?1, ?2, ?3)")?;
    let mut rows = outcomes.query([at])?;
    while let Some(r) = rows.next()? {
        put.execute(params![r.get::<_, String>(0)?, r.get::<_, Option<f64>>(1)?, r.get::<_, String>(2)?])?;
    }
    Ok(())
}
