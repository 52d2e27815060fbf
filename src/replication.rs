//! What robots share through a hub, as the engine stores and merges it
//! (docs/FLEET.md): each memory has a global id (UUIDv7), an origin robot, the
//! robot of its latest version (its writer) and a version counter; triggers log
//! every meaningful local change (learn, update, forget, supersede, session end)
//! to an outbox table in the writing transaction (schema version 5,
//! `store::schema`). [`Change`] is a memory as it travels; `Db::fleet_*` (in
//! `db::fleet`) read the outbox, acknowledge it and merge what the fleet sent.
//!
//! A leaf under `db`: the hub client and the sync agent ([`crate::fleet`]), which
//! drive a `Db`, sit above it and re-export these types.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Longest robot id, in bytes.
const MAX_ROBOT_ID: usize = 64;

/// One memory as it travels between a robot and the hub: its state at `version`,
/// written by `writer` as that robot's change number `seq`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub global_id: String,
    /// The robot that created the memory.
    pub origin: String,
    /// The robot that wrote this version.
    pub writer: String,
    pub version: i64,
    /// The writer's change number: increases with each of its pushes, so a reader
    /// keeps one mark per writer.
    pub seq: i64,
    /// Forgotten (final: no later version brings it back).
    pub deleted: bool,
    /// `active` or `superseded` (a forgotten memory is `deleted`).
    pub status: String,
    /// Global id of the memory that superseded this one.
    pub superseded_by: Option<String>,
    pub collection: String,
    /// `fact` or `perception`.
    pub kind: String,
    pub category: String,
    pub confidence: f64,
    pub content: String,
    /// The stored context (JSON object).
    pub context: String,
    /// Tags given by the user at learn (automatic tags are derived again by each robot).
    pub tags: Vec<String>,
    pub perception_type: Option<String>,
    pub perception_data: Option<Vec<u8>>,
    pub perception_metadata: Option<String>,
    /// Creation time on the origin robot's clock (informative only: no decision
    /// reads a clock).
    pub created_at: String,
    /// When the memory expires (stored-time format; `None`: never). It expires on
    /// every robot at that time, each by its own clock.
    #[serde(default)]
    pub expires_at: Option<String>,
}

impl Change {
    /// Last writer wins: the higher version, and for equal versions the higher
    /// writer id (robot ids are unique in a fleet, so the order is total).
    pub fn newer_than(&self, version: i64, writer: &str) -> bool {
        (self.version, self.writer.as_str()) > (version, writer)
    }
}

/// A session that ended on a robot (for the fleet's record; sessions stay local).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionEnd {
    pub seq: i64,
    pub session_id: String,
    pub collection: String,
    pub ended_at: String,
    pub outcome: Option<f64>,
    pub memories: i64,
}

/// The next changes to push, in change-number order, one per memory (its current
/// state; earlier versions of the same memory in the batch are not sent).
#[derive(Clone, Debug, Default)]
pub struct Outbox {
    /// The last change number the batch covers: acknowledge it once the hub committed.
    pub upto: i64,
    pub changes: Vec<Change>,
    pub sessions: Vec<SessionEnd>,
}

/// Who a database file is in the fleet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub robot_id: String,
    /// Random, set when the file was first claimed: tells a second database that
    /// claims the same robot id from a copy or a restored backup of this one.
    pub instance: String,
    /// Change numbers up to this one are on the hub.
    pub pushed: i64,
    /// The last change number given out.
    pub last_seq: i64,
    /// Changes waiting to be pushed.
    pub pending: i64,
}

/// What merging a batch from the fleet did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// New memories stored.
    pub inserted: u64,
    /// Memories found to be already here (the same fact from another robot, or
    /// from this one): one more source of an existing memory.
    pub merged: u64,
    /// Versions applied to memories held here.
    pub updated: u64,
    pub forgotten: u64,
    /// Versions older than (or equal to) what is here, and anything after a forget.
    pub stale: u64,
    /// Changes this build refuses (too long, malformed), skipped with a count.
    pub rejected: u64,
}

/// How a restored or replaced database was brought back in line with the hub.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Repair {
    /// Changes waiting to be pushed, given new numbers above the hub's.
    pub renumbered: i64,
    /// Local versions raised above the hub's (edits made after a restore win).
    pub bumped: i64,
    /// Own memories queued again (the hub had lost them).
    pub requeued: i64,
}

/// Checks a robot id: 1 to 64 bytes of ASCII letters, digits, `-`, `_`, `.`.
pub fn check_robot_id(id: &str) -> Result<&str> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ROBOT_ID
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(id)
    } else {
        Err(Error::invalid(format!(
            "robot id {id:?} is not valid: use 1 to {MAX_ROBOT_ID} ASCII letters, digits, '-', '_' or '.'"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn robot_ids_are_checked() {
        for ok in ["a", "robot-07", "wh_3.arm", &"x".repeat(64)] {
            assert!(check_robot_id(ok).is_ok(), "{ok}");
        }
        for bad in ["", " ", "a b", "ロボット", "a/b", "a'b", &"x".repeat(65)] {
            assert!(check_robot_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn last_writer_wins_by_version_then_writer() {
        let mut c = Change {
            global_id: String::new(),
            origin: String::new(),
            writer: "b".into(),
            version: 2,
            seq: 1,
            deleted: false,
            status: "active".into(),
            superseded_by: None,
            collection: String::new(),
            kind: "fact".into(),
            category: String::new(),
            confidence: 0.9,
            content: String::new(),
            context: "{}".into(),
            tags: vec![],
            perception_type: None,
            perception_data: None,
            perception_metadata: None,
            created_at: String::new(),
            expires_at: None,
        };
        assert!(c.newer_than(1, "z"));
        assert!(c.newer_than(2, "a"));
        assert!(!c.newer_than(2, "b"));
        assert!(!c.newer_than(2, "c"));
        c.version = 3;
        assert!(c.newer_than(2, "c"));
    }
}
