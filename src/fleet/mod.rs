//! Fleet stage: what robots share through a hub (docs/FLEET.md).
//!
//! The engine side is always built and links no database client: the data that
//! travels ([`Change`], [`Outbox`], …) is [`crate::replication`]'s, re-exported
//! here, and `Db::fleet_*` (in `db::fleet`) read the outbox, acknowledge it and
//! merge what the fleet sent.
//!
//! With the cargo feature `fleet`, [`hub`] speaks to the PostgreSQL hub and
//! [`agent`] runs the sync loop (`robotmem sync`) over a [`crate::Db`]; the
//! default C library does not have them, nor their dependencies. Layers: this
//! module is above `db`, which never imports it.

#[cfg(feature = "fleet")]
pub mod agent;
#[cfg(feature = "fleet")]
pub mod hub;

pub use crate::replication::{check_robot_id, Applied, Change, Identity, Outbox, Repair, SessionEnd};
