//! The engine's fleet side (see `fleet`): claiming a file for a robot, reading the
//! outbox, acknowledging what the hub committed, and repairs. Merging what the
//! fleet sends is in `fleet_apply`.

use rusqlite::{params, Connection, OptionalExtension};

use super::Db;
use crate::error::{Error, Result, Status};
use crate::replication::{self, Change, Identity, Outbox, Repair, SessionEnd};
use crate::types::MemoryStatus;

/// Keys of `robotmem_meta`.
pub(super) const META_ROBOT: &str = "sync.robot";
const META_INSTANCE: &str = "sync.instance";
const META_PUSHED: &str = "sync.pushed";

pub(super) fn meta(conn: &Connection, key: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT value FROM robotmem_meta WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()?)
}

fn set_meta(conn: &Connection, key: &str, value: &str) -> Result<()> {
    conn.prepare_cached("INSERT OR REPLACE INTO robotmem_meta (key, value) VALUES (?1, ?2)")?.execute([key, value])?;
    Ok(())
}

/// The robot id this file was claimed by, or an error saying it was not.
pub(super) fn claimed(conn: &Connection) -> Result<String> {
    meta(conn, META_ROBOT)?.ok_or_else(|| {
        Error::new(Status::InvalidState, "this database is not part of a fleet yet (run robotmem sync with --robot-id)")
    })
}

fn identity(conn: &Connection) -> Result<Option<Identity>> {
    let Some(robot_id) = meta(conn, META_ROBOT)? else { return Ok(None) };
    let pushed = meta(conn, META_PUSHED)?.and_then(|v| v.parse().ok()).unwrap_or(0);
    let last_seq = last_seq(conn)?;
    let pending = conn.query_row("SELECT count(*) FROM sync_outbox WHERE seq > ?1", [pushed], |r| r.get(0))?;
    Ok(Some(Identity { robot_id, instance: meta(conn, META_INSTANCE)?.unwrap_or_default(), pushed, last_seq, pending }))
}

/// The last change number given out (AUTOINCREMENT never reuses one, even after
/// the rows were deleted).
fn last_seq(conn: &Connection) -> Result<i64> {
    Ok(conn
        .query_row("SELECT seq FROM sqlite_sequence WHERE name = 'sync_outbox'", [], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

/// Makes the next change number given out `after + 1` or more.
fn skip_seq_past(conn: &Connection, after: i64) -> Result<()> {
    if last_seq(conn)? < after {
        let n = conn.execute("UPDATE sqlite_sequence SET seq = ?1 WHERE name = 'sync_outbox'", [after])?;
        if n == 0 {
            conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('sync_outbox', ?1)", [after])?;
        }
    }
    Ok(())
}

/// Reads memory `id` as a [`Change`] of change number `seq`; `None` when its
/// current version is not this robot's.
fn change_of(conn: &Connection, robot: &str, id: i64, seq: i64) -> Result<Option<Change>> {
    let Some(m) = crate::store::memory::get(conn, id)? else { return Ok(None) };
    let (gid, origin, writer, version, superseded_by): (String, String, String, i64, Option<String>) = conn
        .prepare_cached(
            "SELECT m.global_id, m.origin, m.writer, m.version, s.global_id
             FROM memories m LEFT JOIN memories s ON s.id = m.superseded_by WHERE m.id = ?1",
        )?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?;
    let tags = conn
        .prepare_cached("SELECT tag FROM memory_tags WHERE memory_id = ?1 AND source = 'user' ORDER BY tag")?
        .query_map([id], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    if !writer.is_empty() {
        // A version from the fleet won over this robot's change since it was logged:
        // the memory's current state is another robot's, already on the hub.
        return Ok(None);
    }
    let me = |who: String| if who.is_empty() { robot.to_string() } else { who };
    Ok(Some(Change {
        global_id: gid,
        origin: me(origin),
        writer: me(writer),
        version,
        seq,
        deleted: m.status == MemoryStatus::Invalidated,
        status: if m.status == MemoryStatus::Superseded { "superseded" } else { "active" }.to_string(),
        superseded_by,
        collection: m.collection,
        kind: m.kind.as_str().to_string(),
        category: m.category,
        confidence: m.confidence,
        content: m.content,
        context: m.context,
        tags,
        perception_type: m.perception_type.map(|p| p.as_str().to_string()),
        perception_data: m.perception_data,
        perception_metadata: m.perception_metadata,
        created_at: m.created_at,
        expires_at: m.expires_at,
    }))
}

impl Db {
    /// Makes this file robot `robot_id`'s in the fleet. The first claim gives the
    /// file a random instance id and queues every memory and ended session it already holds; later
    /// claims by the same id return its identity; another id is refused (a file is
    /// one robot's memory).
    pub fn fleet_claim(&self, robot_id: &str) -> Result<Identity> {
        let robot_id = replication::check_robot_id(robot_id)?;
        self.write(|tx| {
            match meta(tx, META_ROBOT)? {
                Some(owner) if owner != robot_id => {
                    return Err(Error::new(
                        Status::InvalidState,
                        format!("this database belongs to robot {owner:?}, not {robot_id:?} (one file is one robot's memory)"),
                    ))
                }
                Some(_) => {}
                None => {
                    set_meta(tx, META_ROBOT, robot_id)?;
                    set_meta(tx, META_INSTANCE, &uuid::Uuid::new_v4().to_string())?;
                    set_meta(tx, META_PUSHED, "0")?;
                    tx.execute("INSERT INTO sync_outbox (memory_id) SELECT id FROM memories WHERE origin = '' ORDER BY id", [])?;
                    tx.execute("INSERT INTO sync_outbox (session_id) SELECT external_id FROM sessions WHERE status = 'ended' ORDER BY id", [])?;
                }
            }
            identity(tx)?.ok_or_else(|| Error::internal("claim left no identity"))
        })
    }

    /// This file's identity in the fleet, if it was claimed.
    pub fn fleet_identity(&self) -> Result<Option<Identity>> {
        self.store.read(identity)
    }

    /// The next changes to push: outbox entries after the acknowledged ones, up to
    /// `limit` entries, as one [`Change`] per memory (its current state) and one
    /// [`SessionEnd`] per ended session.
    pub fn fleet_outbox(&self, limit: usize) -> Result<Outbox> {
        self.store.read(|conn| {
            let robot = claimed(conn)?;
            let pushed = identity(conn)?.map_or(0, |i| i.pushed);
            let rows = conn
                .prepare_cached(
                    "SELECT seq, memory_id, session_id FROM sync_outbox WHERE seq > ?1 ORDER BY seq LIMIT ?2",
                )?
                .query_map(params![pushed, limit as i64], |r| Ok((r.get::<_, i64>(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<rusqlite::Result<Vec<(i64, Option<i64>, Option<String>)>>>()?;
            let mut out = Outbox { upto: rows.last().map_or(pushed, |r| r.0), ..Default::default() };
            // The last entry of each memory carries its current state.
            let mut last: std::collections::HashMap<i64, i64> = Default::default();
            for (seq, memory, _) in &rows {
                if let Some(id) = memory {
                    last.insert(*id, *seq);
                }
            }
            for (seq, memory, session) in rows {
                match (memory, session) {
                    (Some(id), _) if last.get(&id) == Some(&seq) => {
                        out.changes.extend(change_of(conn, &robot, id, seq)?)
                    }
                    (None, Some(sid)) => out.sessions.extend(session_end(conn, &sid, seq)?),
                    _ => {}
                }
            }
            Ok(out)
        })
    }

    /// Records that the hub committed every change up to `upto`: those entries
    /// leave the outbox. Never moves backwards.
    pub fn fleet_ack(&self, upto: i64) -> Result<()> {
        self.write(|tx| {
            claimed(tx)?;
            let pushed: i64 = meta(tx, META_PUSHED)?.and_then(|v| v.parse().ok()).unwrap_or(0);
            if upto > pushed {
                tx.prepare_cached("DELETE FROM sync_outbox WHERE seq <= ?1")?.execute([upto])?;
                set_meta(tx, META_PUSHED, &upto.to_string())?;
            }
            Ok(())
        })
    }

    /// Per writer, the last change number received from the fleet.
    pub fn fleet_marks(&self) -> Result<Vec<(String, i64)>> {
        self.store.read(|conn| {
            Ok(conn
                .prepare_cached("SELECT writer, seq FROM sync_marks ORDER BY writer")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?)
        })
    }

    /// Global ids and versions of the memories waiting in the outbox.
    pub fn fleet_pending_versions(&self) -> Result<Vec<(String, i64)>> {
        self.store.read(|conn| {
            let pushed = identity(conn)?.map_or(0, |i| i.pushed);
            Ok(conn
                .prepare_cached(
                    "SELECT DISTINCT m.global_id, m.version FROM sync_outbox o JOIN memories m ON m.id = o.memory_id
                     WHERE o.seq > ?1",
                )?
                .query_map([pushed], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?)
        })
    }

    /// Brings the outbox in line with the hub, which holds this robot's changes up
    /// to `hub_last` (see docs/FLEET.md, "Repairs"):
    /// - `hub_last` above every number this file gave out: the file was restored
    ///   from an older backup (or copied). Waiting changes get numbers above the
    ///   hub's (readers' marks are there), and a waiting memory whose version the hub
    ///   already has (`hub_versions`, from the lost timeline) is raised above it, so
    ///   the edit made after the restore wins;
    /// - `hub_last` between the acknowledged number and the last one: the hub
    ///   committed a batch whose acknowledgement was lost (a crash): acknowledge it;
    /// - `hub_last` below the acknowledged number: the hub lost changes (restored
    ///   from its own backup): every own memory is queued again.
    pub fn fleet_repair(&self, hub_last: i64, hub_versions: &[(String, i64)]) -> Result<Repair> {
        self.write(|tx| {
            claimed(tx)?;
            let pushed: i64 = meta(tx, META_PUSHED)?.and_then(|v| v.parse().ok()).unwrap_or(0);
            let last = last_seq(tx)?;
            let mut repair = Repair::default();
            if hub_last > last {
                let mut bump = tx.prepare_cached(
                    "UPDATE memories SET version = ?2 + 1 WHERE global_id = ?1 AND version <= ?2 AND writer = ''",
                )?;
                for (gid, v) in hub_versions {
                    repair.bumped += bump.execute(params![gid, v])? as i64;
                }
                skip_seq_past(tx, hub_last)?;
                repair.renumbered = tx.execute(
                    "INSERT INTO sync_outbox (memory_id, session_id) SELECT memory_id, session_id FROM sync_outbox
                     WHERE seq > ?1 AND seq <= ?2 ORDER BY seq",
                    [pushed, last],
                )? as i64;
                tx.execute("DELETE FROM sync_outbox WHERE seq <= ?1", [last])?;
                set_meta(tx, META_PUSHED, &hub_last.to_string())?;
            } else if hub_last > pushed {
                tx.execute("DELETE FROM sync_outbox WHERE seq <= ?1", [hub_last])?;
                set_meta(tx, META_PUSHED, &hub_last.to_string())?;
            } else if hub_last < pushed {
                skip_seq_past(tx, pushed)?;
                repair.requeued = tx.execute(
                    "INSERT INTO sync_outbox (memory_id) SELECT id FROM memories WHERE origin = '' OR writer = '' ORDER BY id",
                    [],
                )? as i64;
                tx.execute("DELETE FROM sync_outbox WHERE seq <= ?1", [last])?;
                set_meta(tx, META_PUSHED, &hub_last.to_string())?;
            }
            Ok(repair)
        })
    }
}

fn session_end(conn: &Connection, sid: &str, seq: i64) -> Result<Option<SessionEnd>> {
    Ok(conn
        .prepare_cached(
            "SELECT collection, coalesce(ended_at, ''),
                    (SELECT score FROM session_outcomes WHERE session_id = s.external_id ORDER BY id DESC LIMIT 1),
                    (SELECT count(*) FROM memories WHERE session_id = s.external_id)
             FROM sessions s WHERE external_id = ?1",
        )?
        .query_row([sid], |r| {
            Ok(SessionEnd {
                seq,
                session_id: sid.to_string(),
                collection: r.get(0)?,
                ended_at: r.get(1)?,
                outcome: r.get(2)?,
                memories: r.get(3)?,
            })
        })
        .optional()?)
}
