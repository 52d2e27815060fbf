//! Merging what the fleet sent (see `fleet` and docs/FLEET.md, "Pull").
//!
//! Each global id the robot received is held by exactly one local memory: its
//! own row (the memory's `global_id`), or another memory with the same fact (the
//! same gotcha from three robots is one memory with three sources; `sync_remote`
//! maps every received id to its holder). Per global id, the last writer wins
//! (version, then writer id) and a forget is final. A version that changes the
//! text of a memory held together with others moves out of it and is stored (and
//! deduplicated) on its own; a forget of one of several sources leaves the memory
//! to the others. So the result does not depend on the order batches arrive in,
//! nor on a batch arriving twice (tests/fleet_merge.rs).

use rusqlite::{params, Connection, OptionalExtension};

use super::fleet::claimed;
use super::{Db, DraftRequest};
use crate::classify;
use crate::dedup;
use crate::embed::Embedding;
use crate::error::Result;
use crate::replication::{Applied, Change};
use crate::store::history;
use crate::store::memory::{self, Replica};
use crate::types::{MemoryKind, PerceptionType};

/// Reason recorded on a memory forgotten by the fleet.
const FORGOTTEN_BY_FLEET: &str = "forgotten by robot";

/// The local state of a global id.
struct Held {
    /// The memory holding it, if any.
    holder: Option<i64>,
    /// Whether it is that memory's own id (`memories.global_id`).
    primary: bool,
    version: i64,
    /// Robot id of the version held (this robot's id for `''`).
    writer: String,
    /// Forgotten (here or by the fleet): final.
    deleted: bool,
}

impl Held {
    /// Whether what is held here makes change `c` stale: a forget wins over any
    /// version (it is final); otherwise the last writer wins.
    fn outdates(&self, c: &Change) -> bool {
        self.deleted || (!c.deleted && !c.newer_than(self.version, &self.writer))
    }
}

fn held(conn: &Connection, me: &str, gid: &str) -> Result<Option<Held>> {
    let row: Option<(i64, i64, String, String)> = conn
        .prepare_cached("SELECT id, version, writer, status FROM memories WHERE global_id = ?1")?
        .query_row([gid], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .optional()?;
    let remote: Option<(Option<i64>, i64, String, bool)> = conn
        .prepare_cached("SELECT memory_id, version, writer, deleted FROM sync_remote WHERE global_id = ?1")?
        .query_row([gid], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .optional()?;
    let who = |w: String| if w.is_empty() { me.to_string() } else { w };
    Ok(match (remote, row) {
        // The row of which it is the id says its version (local edits included).
        (remote, Some((id, version, writer, status))) if remote.as_ref().is_none_or(|r| r.0 == Some(id)) => {
            Some(Held {
                holder: Some(id),
                primary: true,
                version,
                writer: who(writer),
                deleted: status == "invalidated" || remote.is_some_and(|r| r.3),
            })
        }
        (Some((holder, version, writer, deleted)), _) => {
            Some(Held { holder, primary: false, version, writer: who(writer), deleted })
        }
        (None, _) => None,
    })
}

/// Other received ids held by memory `holder` (not `gid`), not forgotten.
fn co_sources(conn: &Connection, holder: i64, gid: &str) -> Result<Vec<(String, String, String, i64)>> {
    Ok(conn
        .prepare_cached(
            "SELECT global_id, origin, writer, version FROM sync_remote
             WHERE memory_id = ?1 AND global_id != ?2 AND deleted = 0 ORDER BY global_id",
        )?
        .query_map(params![holder, gid], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?)
}

/// Records the version of a received id and where it is held.
fn remember(conn: &Connection, rep: &Replica, holder: Option<i64>, deleted: bool) -> Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO sync_remote (global_id, memory_id, origin, writer, version, deleted)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![rep.global_id, holder, rep.origin, rep.writer, rep.version, deleted])?;
    Ok(())
}

/// Memory `holder` is the primary of `gid`, which leaves it: another source it
/// holds becomes its id, or, with none, it is forgotten with `gid` (`forget`) or
/// left as it is (the id moves to a memory of its own).
fn hand_over(conn: &Connection, holder: i64, gid: &str, forget: Option<(&Replica, &str)>) -> Result<()> {
    match co_sources(conn, holder, gid)?.into_iter().next() {
        Some((other, origin, writer, version)) => {
            conn.prepare_cached(
                "UPDATE memories SET global_id = ?2, origin = ?3, writer = ?4, version = ?5 WHERE id = ?1",
            )?
            .execute(params![holder, other, origin, writer, version])?;
        }
        None if forget.is_none() => {
            // It held only this id, which moves to another memory: a shell that
            // stands for nothing in the fleet (superseded by that memory, later).
            conn.prepare_cached("UPDATE memories SET global_id = NULL WHERE id = ?1")?.execute([holder])?;
        }
        None => {
            if let Some((rep, now)) = forget {
                memory::invalidate(conn, holder, FORGOTTEN_BY_FLEET, now, Some(rep))?;
            }
        }
    }
    Ok(())
}

impl Db {
    /// Merges a batch of changes from the fleet in one transaction, and moves each
    /// writer's mark to the highest change number of the batch. Changes of this
    /// robot's own id are taken as its own (a repair after a restore brings them).
    pub fn fleet_apply(&self, batch: &[Change]) -> Result<Applied> {
        // Embedded first (outside the write lock), but only what will be applied: a
        // batch received again after a restart costs no model time.
        let stale = self.store.read(|conn| {
            let me = claimed(conn)?;
            batch
                .iter()
                .map(|c| Ok(held(conn, &me, &c.global_id)?.is_some_and(|h| h.outdates(c))))
                .collect::<Result<Vec<bool>>>()
        })?;
        let texts: Vec<&str> =
            batch.iter().zip(&stale).map(|(c, &old)| if c.deleted || old { "" } else { c.content.as_str() }).collect();
        let wanted: Vec<&str> = texts.iter().copied().filter(|t| !t.is_empty()).collect();
        let mut vectors = self.embed_passages(&wanted).into_iter();
        let vectors: Vec<Option<Embedding>> =
            texts.iter().map(|t| if t.is_empty() { None } else { vectors.next().flatten() }).collect();
        self.write(|tx| {
            let me = claimed(tx)?;
            let mut applied = Applied::default();
            // What follows is the fleet's, not a local change: the triggers log nothing.
            tx.prepare_cached("INSERT INTO sync_applying (one) VALUES (1)")?.execute([])?;
            history::on_clock(tx, || {
                for (c, v) in batch.iter().zip(&vectors) {
                    self.apply_one(tx, &me, c, v.as_ref(), &mut applied)?;
                    tx.prepare_cached(
                        "INSERT INTO sync_marks (writer, seq) VALUES (?1, ?2)
                         ON CONFLICT (writer) DO UPDATE SET seq = max(seq, excluded.seq)",
                    )?
                    .execute(params![c.writer, c.seq])?;
                }
                Ok(())
            })?;
            tx.prepare_cached("DELETE FROM sync_applying")?.execute([])?;
            Ok(applied)
        })
    }

    fn apply_one(
        &self,
        tx: &Connection,
        me: &str,
        c: &Change,
        vector: Option<&Embedding>,
        out: &mut Applied,
    ) -> Result<()> {
        let local = |who: &str| if who == me { String::new() } else { who.to_string() };
        let rep = Replica {
            global_id: c.global_id.clone(),
            origin: local(&c.origin),
            writer: local(&c.writer),
            version: c.version,
        };
        let state = held(tx, me, &c.global_id)?;
        if state.as_ref().is_some_and(|h| h.outdates(c)) {
            out.stale += 1;
            return Ok(());
        }
        let (holder, primary) = state.as_ref().map_or((None, false), |h| (h.holder, h.primary));
        if c.deleted {
            if let (Some(id), true) = (holder, primary) {
                hand_over(tx, id, &c.global_id, Some((&rep, &self.now())))?;
            }
            remember(tx, &rep, None, true)?;
            out.forgotten += 1;
            return Ok(());
        }
        let tags: Vec<&str> = c.tags.iter().map(String::as_str).collect();
        let ctx = classify::user_context(&c.context);
        let Some(mut d) = self.incoming(c, &tags, &ctx) else {
            out.rejected += 1;
            return Ok(());
        };
        d.vector = vector.cloned();
        self.sync_for_dedup(tx, std::slice::from_ref(&d))?;
        let vec_ok = d.vector.is_some() && self.vectors_ready(tx)?;
        if let (Some(id), true) = (holder, primary) {
            if co_sources(tx, id, &c.global_id)?.is_empty() {
                // A damaged memory here (its text fails its checksum) is rewritten: the
                // fleet's version repairs it.
                let old = match memory::get(tx, id) {
                    Err(e) if e.status == crate::error::Status::Corrupt => None,
                    other => other?,
                };
                if old.is_some_and(|o| o.content == c.content && o.context == c.context && o.category == c.category) {
                    tx.prepare_cached("UPDATE memories SET writer = ?2, version = ?3 WHERE id = ?1")?
                        .execute(params![id, rep.writer, rep.version])?;
                    memory::set_expiry(tx, id, d.expires_at.as_deref())?;
                    self.apply_status(tx, id, c, &rep, &d, vec_ok)?;
                } else if let Some(dup) = self.duplicate(tx, &d, vec_ok, Some(id))? {
                    // Its new text is a memory held here already: it joins that one and
                    // this memory, holding nothing else, retires in its favour.
                    hand_over(tx, id, &c.global_id, None)?;
                    tx.prepare_cached(&format!(
                        "UPDATE memories SET status = 'superseded', superseded_by = ?2, rev = {}, writer = ?3, version = ?4
                         WHERE id = ?1",
                        memory::NEXT_REV
                    ))?
                    .execute(params![id, dup, rep.writer, rep.version])?;
                    memory::unindex(tx, id)?;
                    remember(tx, &rep, Some(dup), false)?;
                    out.merged += 1;
                    return Ok(());
                } else {
                    self.rewrite_in_place(tx, id, &d, c, &rep, vec_ok)?;
                }
                remember(tx, &rep, Some(id), false)?;
                out.updated += 1;
                return Ok(());
            }
            // Held with others: this id leaves, the memory stays theirs.
            hand_over(tx, id, &c.global_id, None)?;
        }
        let (id, merged) = match self.duplicate(tx, &d, vec_ok, None)? {
            Some(dup) => (dup, true),
            None => (self.insert_incoming(tx, &d, c, &rep, vec_ok)?, false),
        };
        remember(tx, &rep, Some(id), false)?;
        if merged {
            out.merged += 1;
        } else if state.is_some() {
            out.updated += 1;
        } else {
            out.inserted += 1;
        }
        Ok(())
    }

    /// A received memory as a draft (validated and classified as at learn, with
    /// the category and context it came with). `None`: this build refuses it.
    fn incoming<'c>(&'c self, c: &'c Change, tags: &'c [&'c str], ctx: &'c str) -> Option<super::Draft<'c>> {
        let kind = MemoryKind::parse(&c.kind).ok()?;
        let perception = match kind {
            MemoryKind::Fact => None,
            MemoryKind::Perception => {
                let t = PerceptionType::parse(c.perception_type.as_deref().unwrap_or("visual")).ok()?;
                Some((t, c.perception_data.as_deref(), c.perception_metadata.as_deref()))
            }
        };
        crate::limits::required_text("content", &c.content, 1, crate::limits::MAX_CONTENT_CHARS).ok()?;
        let req = DraftRequest {
            tags,
            context: Some(ctx),
            collection: Some(&c.collection),
            session_id: None,
            perception,
            ttl_seconds: None,
            expires_at: None,
        };
        let mut d = self.draft(kind, &c.content, req).ok()?;
        d.ctx_json = c.context.clone();
        // Its expiry as sent (a malformed one is refused with the memory).
        d.expires_at = c.expires_at.as_deref().map(|t| crate::limits::timestamp("expires_at", t)).transpose().ok()?;
        Some(d)
    }

    /// The memory here (other than `exclude`) that already holds the draft's fact.
    fn duplicate(&self, tx: &Connection, d: &super::Draft, vec_ok: bool, exclude: Option<i64>) -> Result<Option<i64>> {
        let dup = match d.kind {
            MemoryKind::Fact => self.find_fact_duplicate(tx, d, vec_ok, exclude)?,
            MemoryKind::Perception => dedup::exact(tx, d.collection, &d.hash, exclude)?,
        };
        Ok(dup.map(|x| x.existing_id))
    }

    fn insert_incoming(
        &self,
        tx: &Connection,
        d: &super::Draft,
        c: &Change,
        rep: &Replica,
        vec_ok: bool,
    ) -> Result<i64> {
        let now = self.now();
        let mut row = d.row(&c.category, c.confidence.clamp(0.0, 1.0), self.opts.decay_rate, &now);
        row.remote = Some(rep);
        let id = memory::insert(tx, &row)?;
        memory::set_auto_tags(tx, id, &d.cls.tags)?;
        memory::add_user_tags(tx, id, &d.user_tags)?;
        if vec_ok {
            self.store_embedding(tx, id, d.collection, d.vector.as_ref())?;
        }
        self.apply_status(tx, id, c, rep, d, vec_ok)?;
        Ok(id)
    }

    /// Applies a received text to the memory holding only its id.
    fn rewrite_in_place(
        &self,
        tx: &Connection,
        id: i64,
        d: &super::Draft,
        c: &Change,
        rep: &Replica,
        vec_ok: bool,
    ) -> Result<()> {
        let now = self.now();
        let ctx: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&c.context).unwrap_or_default();
        memory::rewrite(
            tx,
            id,
            &memory::Rewrite {
                content: &c.content,
                category: &c.category,
                confidence: c.confidence.clamp(0.0, 1.0),
                content_hash: &d.hash,
                context: &d.ctx_json,
                is_real: crate::search::is_real_world(&ctx),
                scope: &d.cls.scope,
                terms: &d.terms,
                now: &now,
                remote: Some(rep),
                expiry: Some(d.expires_at.as_deref()),
            },
        )?;
        memory::unindex(tx, id)?;
        memory::set_auto_tags(tx, id, &d.cls.tags)?;
        if vec_ok {
            self.store_embedding(tx, id, d.collection, d.vector.as_ref())?;
        }
        self.apply_status(tx, id, c, rep, d, vec_ok)
    }

    /// Supersedes memory `id` when the received version is superseded (by the
    /// memory holding the successor's global id here, if any).
    fn apply_status(
        &self,
        tx: &Connection,
        id: i64,
        c: &Change,
        rep: &Replica,
        d: &super::Draft,
        vec_ok: bool,
    ) -> Result<()> {
        if c.status != "superseded" {
            // Active in the version that won: a memory superseded here comes back.
            let back = tx
                .prepare_cached(&format!(
                    "UPDATE memories SET status = 'active', superseded_by = NULL, rev = {}, writer = ?2, version = ?3
                     WHERE id = ?1 AND status = 'superseded'",
                    memory::NEXT_REV
                ))?
                .execute(params![id, rep.writer, rep.version])?;
            if back > 0 && vec_ok {
                self.store_embedding(tx, id, d.collection, d.vector.as_ref())?;
            }
            return Ok(());
        }
        let by: Option<i64> = match &c.superseded_by {
            Some(g) => tx
                .prepare_cached(
                    "SELECT coalesce((SELECT id FROM memories WHERE global_id = ?1),
                                     (SELECT memory_id FROM sync_remote WHERE global_id = ?1))",
                )?
                .query_row([g], |r| r.get(0))?,
            None => None,
        };
        tx.prepare_cached(&format!(
            "UPDATE memories SET status = 'superseded', superseded_by = ?2, rev = {}, writer = ?3, version = ?4
             WHERE id = ?1 AND status = 'active'",
            memory::NEXT_REV
        ))?
        .execute(params![id, by, rep.writer, rep.version])?;
        memory::unindex(tx, id)
    }
}
