//! The sync loop (feature `fleet`; `robotmem sync` runs it as a sidecar process
//! beside the robot's own): push the outbox, then pull, every few seconds; on a
//! hub failure, reconnect with backoff. Nothing is lost across failures: the
//! outbox moves only after the hub committed a batch, a writer's mark only in the
//! transaction that applied its rows (docs/FLEET.md, "Guarantees").

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use postgres::Client;

use super::hub::{self, HubUrl, PullFilter};
use super::{Applied, Change, Identity, Repair};
use crate::error::{Error, Result, Status};
use crate::Db;

/// Longest wait between two attempts after failures.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// What robots share: memories whose category and collection are listed (`None`:
/// any). A memory already on the hub is pushed whatever it became.
#[derive(Clone, Debug, Default)]
pub struct Share {
    pub categories: Option<Vec<String>>,
    pub collections: Option<Vec<String>>,
}

impl Share {
    fn admits(&self, c: &Change) -> bool {
        let within = |list: &Option<Vec<String>>, v: &str| list.as_ref().is_none_or(|l| l.iter().any(|x| x == v));
        within(&self.categories, &c.category) && within(&self.collections, &c.collection)
    }
}

#[derive(Clone, Debug)]
pub struct Settings {
    pub hub: HubUrl,
    pub robot_id: String,
    /// Time between two cycles.
    pub every: Duration,
    pub share: Share,
    pub pull: PullFilter,
    /// Outbox entries per push transaction, and memories per pull.
    pub batch: usize,
    /// Keep the hub connection between cycles (`false`: connect for each cycle,
    /// so a hub serving a large fleet holds a connection only per syncing robot).
    pub hold_connection: bool,
}

/// What one cycle did.
#[derive(Clone, Debug, Default)]
pub struct Cycle {
    /// Changes sent, and of those, new on the hub.
    pub sent: u64,
    pub new_on_hub: u64,
    /// Changes not shared (their memory is not shared and not on the hub).
    pub withheld: u64,
    /// Changes the hub refused as data (skipped, each with a warning).
    pub refused: u64,
    pub pulled: Applied,
    pub received: u64,
    /// A repair made at connection (restored file, lost acknowledgement, hub behind).
    pub repair: Option<Repair>,
}

impl Cycle {
    pub fn is_empty(&self) -> bool {
        self.sent == 0 && self.received == 0 && self.repair.is_none()
    }
}

/// Messages of the loop, for the caller to print.
pub trait Log {
    fn info(&self, msg: &str);
    fn warn(&self, msg: &str);
}

pub struct Agent<'a> {
    db: &'a Db,
    s: &'a Settings,
    identity: Identity,
    client: Option<Client>,
    /// With a connection per cycle, "connected" is said once (and again after a failure).
    quiet_connects: bool,
}

/// Errors that trying again will not cure: the loop stops on them.
fn is_fatal(e: &Error) -> bool {
    matches!(e.status, Status::InvalidState | Status::InvalidArgument | Status::SchemaTooNew)
}

impl<'a> Agent<'a> {
    /// Claims the file for the robot (refused if it is another robot's).
    pub fn new(db: &'a Db, s: &'a Settings) -> Result<Agent<'a>> {
        let identity = db.fleet_claim(&s.robot_id)?;
        Ok(Agent { db, s, identity, client: None, quiet_connects: false })
    }

    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    fn connect(&mut self, log: &dyn Log, cycle: &mut Cycle) -> Result<()> {
        if self.client.is_some() {
            return Ok(());
        }
        let mut client = self.s.hub.connect()?;
        let version = hub::hub_version(&mut client)?;
        if version != hub::schema_version() {
            return Err(Error::new(
                Status::InvalidState,
                format!(
                    "the hub's schema is version {version}, this robotmem needs {}: run `robotmem hub migrate` as the hub's owner",
                    hub::schema_version()
                ),
            ));
        }
        if !hub::lock_robot(&mut client, &self.s.robot_id)? {
            return Err(Error::new(
                Status::Busy,
                format!("robot {} is being synced by another connection (a second sync process?)", self.s.robot_id),
            ));
        }
        let hub_last = hub::claim(&mut client, &self.s.robot_id, &self.identity.instance)?;
        self.identity = self.db.fleet_identity()?.ok_or_else(|| Error::internal("claimed file has no identity"))?;
        let before = self.identity.clone();
        if hub_last > before.last_seq {
            let pending: Vec<String> = self.db.fleet_pending_versions()?.into_iter().map(|p| p.0).collect();
            let versions = hub::versions(&mut client, &pending)?;
            let repair = self.db.fleet_repair(hub_last, &versions)?;
            log.warn(&format!(
                "this database is behind the hub: the hub holds robot {}'s changes up to #{hub_last}, this file gave out only #{} \
                 (restored from an older backup?); repairing: {} waiting changes renumbered, {} raised above the hub's version, \
                 pulling back this robot's changes after #{}",
                self.s.robot_id, before.last_seq, repair.renumbered, repair.bumped, before.pushed
            ));
            let mut own_after = before.pushed;
            loop {
                let rows = hub::pull(
                    &mut client,
                    &self.s.robot_id,
                    &self.db.fleet_marks()?,
                    &self.s.pull,
                    self.s.batch as i64,
                    Some(own_after),
                )?;
                if rows.is_empty() {
                    break;
                }
                own_after = rows
                    .iter()
                    .filter(|r| r.writer == self.s.robot_id)
                    .map(|r| r.seq)
                    .max()
                    .unwrap_or(own_after)
                    .max(own_after);
                cycle.received += rows.len() as u64;
                add(&mut cycle.pulled, &self.db.fleet_apply(&rows)?);
                if rows.iter().all(|r| r.writer != self.s.robot_id) && rows.len() < self.s.batch {
                    break;
                }
            }
            cycle.repair = Some(repair);
        } else if hub_last != before.pushed {
            let repair = self.db.fleet_repair(hub_last, &[])?;
            if hub_last < before.pushed {
                log.warn(&format!(
                    "the hub is behind this file (it holds robot {}'s changes up to #{hub_last}, this file pushed up to #{}: \
                     the hub was restored?); {} memories queued again",
                    self.s.robot_id, before.pushed, repair.requeued
                ));
            }
            cycle.repair = Some(repair);
        }
        self.identity = self.db.fleet_identity()?.ok_or_else(|| Error::internal("claimed file has no identity"))?;
        if self.s.hold_connection || !self.quiet_connects {
            log.info(&format!("connected to the hub {} as robot {}", self.s.hub.describe(), self.s.robot_id));
            self.quiet_connects = !self.s.hold_connection;
        }
        self.client = Some(client);
        Ok(())
    }

    /// One push and pull; on error the connection is dropped (the next cycle
    /// reconnects).
    pub fn cycle(&mut self, log: &dyn Log) -> Result<Cycle> {
        let mut cycle = Cycle::default();
        let r = self
            .connect(log, &mut cycle)
            .and_then(|()| self.push(&mut cycle, log))
            .and_then(|()| self.pull(&mut cycle));
        if r.is_err() {
            self.client = None;
            self.quiet_connects = false;
        }
        r.map(|()| cycle)
    }

    fn push(&mut self, cycle: &mut Cycle, log: &dyn Log) -> Result<()> {
        let client = self.client.as_mut().expect("connected");
        loop {
            let ob = self.db.fleet_outbox(self.s.batch)?;
            if ob.changes.is_empty() && ob.sessions.is_empty() && ob.upto <= self.identity.pushed {
                return Ok(());
            }
            let (mut send, held): (Vec<Change>, Vec<Change>) =
                ob.changes.into_iter().partition(|c| self.s.share.admits(c));
            if !held.is_empty() {
                let gids: Vec<String> = held.iter().map(|c| c.global_id.clone()).collect();
                let on_hub: std::collections::HashSet<String> =
                    hub::versions(client, &gids)?.into_iter().map(|v| v.0).collect();
                for c in held {
                    if on_hub.contains(&c.global_id) {
                        send.push(c);
                    } else {
                        cycle.withheld += 1;
                    }
                }
            }
            send.sort_by_key(|c| c.seq);
            match hub::push(client, &self.s.robot_id, &send, &ob.sessions, ob.upto) {
                Ok(n) => cycle.new_on_hub += n,
                // The hub refuses something in the batch as data (a context PostgreSQL's
                // jsonb cannot hold, say): one change at a time, and the refused ones are
                // skipped with a warning, so one change never holds back the rest.
                Err(e) if e.status == Status::InvalidArgument => {
                    for c in &send {
                        match hub::push(client, &self.s.robot_id, std::slice::from_ref(c), &[], 0) {
                            Ok(n) => cycle.new_on_hub += n,
                            Err(e) if e.status == Status::InvalidArgument => {
                                cycle.refused += 1;
                                log.warn(&format!(
                                    "the hub refused memory {} (version {}): {}; skipped",
                                    c.global_id, c.version, e.message
                                ));
                            }
                            Err(e) => return Err(e),
                        }
                    }
                    cycle.new_on_hub += hub::push(client, &self.s.robot_id, &[], &ob.sessions, ob.upto)?;
                }
                Err(e) => return Err(e),
            }
            cycle.sent += send.len() as u64;
            self.db.fleet_ack(ob.upto)?;
            self.identity.pushed = ob.upto;
        }
    }

    fn pull(&mut self, cycle: &mut Cycle) -> Result<()> {
        let client = self.client.as_mut().expect("connected");
        loop {
            let marks = self.db.fleet_marks()?;
            let rows = hub::pull(client, &self.s.robot_id, &marks, &self.s.pull, self.s.batch as i64, None)?;
            if rows.is_empty() {
                return Ok(());
            }
            cycle.received += rows.len() as u64;
            add(&mut cycle.pulled, &self.db.fleet_apply(&rows)?);
        }
    }

    /// Runs cycles every `every` until `stop` is set (checked at least every 100 ms
    /// while waiting) or, with `once`, after one successful cycle. Stops with an
    /// error that retrying cannot cure (another database holds the robot id, the
    /// login may not sync it, the hub's schema differs); with `once`, on any error.
    pub fn run(&mut self, stop: &AtomicBool, once: bool, log: &dyn Log) -> Result<()> {
        let mut backoff = Duration::from_secs(1);
        while !stop.load(Ordering::Relaxed) {
            let wait = match self.cycle(log) {
                Ok(c) => {
                    if !c.is_empty() {
                        log.info(&describe(&c));
                    }
                    if once {
                        return Ok(());
                    }
                    if !self.s.hold_connection {
                        self.client = None;
                    }
                    backoff = Duration::from_secs(1);
                    self.s.every
                }
                Err(e) if once || is_fatal(&e) => return Err(e),
                Err(e) => {
                    log.warn(&format!("{}; retrying in {} s", e.message, backoff.as_secs()));
                    let w = backoff;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    w
                }
            };
            let until = Instant::now() + wait;
            while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                std::thread::sleep((until - Instant::now()).min(Duration::from_millis(100)));
            }
        }
        Ok(())
    }
}

fn add(total: &mut Applied, a: &Applied) {
    total.inserted += a.inserted;
    total.merged += a.merged;
    total.updated += a.updated;
    total.forgotten += a.forgotten;
    total.stale += a.stale;
    total.rejected += a.rejected;
}

/// One line about a cycle.
pub fn describe(c: &Cycle) -> String {
    let p = &c.pulled;
    format!(
        "pushed {} changes ({} new on the hub, {} not shared, {} refused by the hub); received {}: {} new, {} merged into memories here, {} updated, {} forgotten, {} stale, {} refused",
        c.sent, c.new_on_hub, c.withheld, c.refused, c.received, p.inserted, p.merged, p.updated, p.forgotten, p.stale, p.rejected
    )
}
