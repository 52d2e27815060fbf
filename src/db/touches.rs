//! Recall bookkeeping written lazily, so a recall never waits on the write lock:
//! each hit memory's access count and last access, and the file's recall
//! counters (recalls, and recalls whose query matched no memory — the zero-hit
//! rate `doctor` reports). Recorded in memory and written by the next write, by
//! `flush`, on close or drop, or by a recall when many are pending and the writer
//! is free.

use std::collections::HashMap;

use rusqlite::{params, Connection};

use super::Db;
use crate::error::Result;
use crate::store::memory;
use crate::types::{Hit, SearchMode};

/// Pending hits at which a recall tries to write them without waiting.
const FLUSH_AT: usize = 256;

/// `robotmem_meta` keys of the recall counters.
pub(super) const RECALLS_KEY: &str = "recalls_total";
pub(super) const ZERO_HIT_KEY: &str = "recalls_zero_hit";

/// What recalls recorded and nothing has written yet.
#[derive(Default)]
pub(super) struct Pending {
    /// Per memory id: (hits, last time).
    hits: HashMap<i64, (i64, String)>,
    recalls: i64,
    zero_hit: i64,
}

impl Pending {
    pub(super) fn is_empty(&self) -> bool {
        self.hits.is_empty() && self.recalls == 0
    }

    /// Recalls and zero-hit recalls recorded and not yet written.
    pub(super) fn counts(&self) -> (i64, i64) {
        (self.recalls, self.zero_hit)
    }

    fn merge(&mut self, other: Pending) {
        for (id, (n, at)) in other.hits {
            let e = self.hits.entry(id).or_insert((0, at.clone()));
            e.0 += n;
            if at > e.1 {
                e.1 = at;
            }
        }
        self.recalls += other.recalls;
        self.zero_hit += other.zero_hit;
    }

    /// Writes it inside the caller's write transaction.
    pub(super) fn apply(&self, tx: &Connection) -> Result<()> {
        for (id, (n, at)) in &self.hits {
            memory::touch(tx, *id, *n, at)?;
        }
        for (key, n) in [(RECALLS_KEY, self.recalls), (ZERO_HIT_KEY, self.zero_hit)] {
            if n > 0 {
                tx.prepare_cached(
                    "INSERT INTO robotmem_meta (key, value) VALUES (?1, ?2)
                     ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + excluded.value",
                )?
                .execute(params![key, n])?;
            }
        }
        Ok(())
    }
}

impl Db {
    pub(super) fn take_pending(&self) -> Pending {
        std::mem::take(&mut *self.touches.lock())
    }

    /// Puts back what a failed write did not write.
    pub(super) fn requeue(&self, pending: Pending) {
        self.touches.lock().merge(pending);
    }

    /// Records one recall and its hits. A listing (mode `Scan`: a query with no
    /// word, such as `"*"`) is not a search and is not counted as a recall.
    pub(super) fn record_recall(&self, hits: &[Hit], mode: SearchMode) {
        if self.opts.read_only {
            return; // nothing is written through a read-only handle, not even access counts
        }
        let at = self.now();
        let pending = {
            let mut t = self.touches.lock();
            if mode != SearchMode::Scan {
                t.recalls += 1;
                t.zero_hit += i64::from(!hits.iter().any(|h| h.matched));
            }
            for h in hits {
                let e = t.hits.entry(h.memory.id).or_insert((0, at.clone()));
                e.0 += 1;
                e.1.clone_from(&at);
            }
            if t.hits.len() < FLUSH_AT {
                return;
            }
            std::mem::take(&mut *t)
        };
        match self.store.try_write(|tx| pending.apply(tx)) {
            Some(Ok(())) => {}
            _ => self.requeue(pending),
        }
    }
}
