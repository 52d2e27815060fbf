//! Retention: the memory budget (eviction inside the write that passes it) and
//! purge (hard deletion of what left recall long enough ago). The SQL and the
//! order are in `store::retention`.

use rusqlite::Connection;

use super::Db;
use crate::error::{Error, Result, Status};
use crate::limits;
use crate::store::{history, retention};
use crate::types::PurgeOutcome;

/// Free pages one purge transaction gives back to the file system (1 MiB of
/// 4 KiB pages: a few ms).
const VACUUM_PAGES: u32 = 256;

impl Db {
    /// Inside the write transaction of a new memory of `collection`, before its
    /// insert: evicts what the collection's budget, then the database's, needs to
    /// hold one more memory. Returns the evicted ids in eviction order; fails
    /// with [`Status::OverBudget`] (the transaction's writes roll back) when only
    /// protected memories could make room.
    pub(super) fn make_room(&self, tx: &Connection, collection: &str) -> Result<Vec<i64>> {
        let mut evicted = Vec::new();
        let scopes = [
            (Some(collection), self.opts.budget_for(collection)),
            (None, Some(self.opts.max_memories).filter(|&m| m > 0)),
        ];
        for (scope, max) in scopes {
            let Some(max) = max else { continue };
            let held = retention::count(tx, scope)?;
            if held < max {
                continue;
            }
            let need = held + 1 - max;
            let victims = retention::victims(tx, scope, need, self.opts.evict_protected)?;
            if (victims.len() as u64) < need {
                let (what, field) = match scope {
                    Some(c) => (format!("collection {c:?}"), "collection_max_memories"),
                    None => ("the database".to_string(), "max_memories"),
                };
                return Err(Error::new(
                    Status::OverBudget,
                    format!(
                        "{what} holds {held} memories and its budget ({field}) is {max}: storing this one needs \
                         {need} evicted, but only {} are not protected (constraint, gotcha, postmortem are kept \
                         unless evict_protected is set); nothing was written",
                        victims.len()
                    ),
                ));
            }
            retention::remove(tx, &victims, None)?;
            evicted.extend(victims);
        }
        Ok(evicted)
    }

    /// Hard-deletes the memories forgotten or superseded at least
    /// `older_than_seconds` ago, and those expired at least that long ago (any
    /// category: they already left recall), in transactions of at most 100
    /// memories each (the in-process indexes follow them one by one; recall is
    /// never blocked), then gives the freed pages back to the file system, 1 MiB
    /// per transaction, when the file was made with `auto_vacuum = INCREMENTAL`
    /// (every file robotmem 0.6 creates; an older file keeps them for reuse). When
    /// every memory of the file is to go, the newest stays for a later purge
    /// (see `store::retention::keeper`). Versions of the memories that stay
    /// (`history`) replaced before the cutoff go too. It also drops the records of removals
    /// that every stored index copy reflects (`store::retention::prune_removals`).
    pub fn purge(&self, older_than_seconds: f64) -> Result<PurgeOutcome> {
        if !(older_than_seconds.is_finite() && (0.0..=limits::MAX_TTL_SECONDS).contains(&older_than_seconds)) {
            return Err(Error::invalid(format!(
                "older_than_seconds must be a number of seconds from 0 to 100 years (got {})",
                limits::show_f64(older_than_seconds)
            )));
        }
        self.store.writable()?;
        let mut out = PurgeOutcome::default();
        let cutoff = retention::cutoff(older_than_seconds, self.opts.clock.now());
        loop {
            let n = self.write(|tx| {
                let mut ids = retention::purgeable(tx, &cutoff, retention::PURGE_BATCH)?;
                let found = ids.len();
                let keeper = retention::keeper(tx, &mut ids)?;
                retention::remove(tx, &ids, keeper)?;
                Ok((ids.len(), found))
            })?;
            let (n, found) = n;
            if n > 0 {
                out.purged += n as u64;
                out.batches += 1;
            }
            if found < retention::PURGE_BATCH {
                break;
            }
        }
        // The history of what stays: versions replaced before the cutoff.
        while self.write(|tx| history::purge_before(tx, &cutoff, retention::PURGE_BATCH * 10))? > 0 {}
        self.write(retention::prune_removals)?;
        let page_size: u64 =
            self.store.read(|c| Ok(c.query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))?))? as u64;
        while self.store.read(retention::incremental)? {
            let freed = self.write(|tx| retention::vacuum_step(tx, VACUUM_PAGES))?;
            out.reclaimed_bytes += freed * page_size;
            if freed < VACUUM_PAGES as u64 {
                break;
            }
        }
        out.live_bytes = self.store.read(retention::live_bytes)?;
        Ok(out)
    }
}
