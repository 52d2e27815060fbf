//! What the fleet tests look at: a robot's file and the hub, read directly; the
//! facts the robots learn; opening files as the robots' own processes do.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::hub::Hub;
use robotmem::{Db, Durability, OpenOptions};

pub fn open(p: &Path) -> Db {
    let mut o = OpenOptions::path(p);
    o.embeddings = false;
    o.durability = Durability::Normal;
    Db::open(o).unwrap()
}

/// Asserts a `sync --once` succeeded; its stderr.
pub fn synced(o: std::process::Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "sync --once failed: {err}");
    err
}

pub fn temp() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("robotmem-fleet-test").tempdir().unwrap()
}

pub const WORDS: &[&str] = &[
    "gripper", "pallet", "dock", "lidar", "conveyor", "shelf", "forklift", "aisle", "charger", "camera", "bin", "tote",
    "ramp", "door", "elevator", "scanner", "label", "strap", "cart", "wheel",
];

/// A fact no other robot or step repeats (its numbers differ).
pub fn fact(robot: &str, k: usize) -> String {
    let w = |i: usize| WORDS[(k * 7 + i * 3 + robot.len()) % WORDS.len()];
    format!("{robot} step {k}: the {} near the {} needs {} cm clearance", w(0), w(1), 10 + k)
}

pub const SHARED: &str = "the mezzanine elevator door sensor fails when the floor is wet";

/// What a robot holds, per global id it knows: forgotten (`None`) or the text of
/// the active memory holding it; and the texts of its active memories.
pub fn robot_view(p: &Path) -> (BTreeMap<String, Option<String>>, Vec<String>) {
    let c = rusqlite::Connection::open(p).unwrap();
    let mut view = BTreeMap::new();
    let mut st = c.prepare("SELECT global_id, status, content FROM memories WHERE global_id IS NOT NULL").unwrap();
    for r in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))).unwrap()
    {
        let (g, status, content) = r.unwrap();
        view.insert(g, if status == "invalidated" { None } else { Some(content) });
    }
    let mut st = c
        .prepare("SELECT r.global_id, r.deleted, m.status, m.content FROM sync_remote r LEFT JOIN memories m ON m.id = r.memory_id")
        .unwrap();
    for r in st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, bool>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })
        .unwrap()
    {
        let (g, deleted, status, content) = r.unwrap();
        let v = if deleted || status.as_deref() == Some("invalidated") { None } else { content };
        view.insert(g, v);
    }
    let mut st = c.prepare("SELECT content FROM memories WHERE status = 'active' ORDER BY content").unwrap();
    let active = st.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect();
    (view, active)
}

pub fn pending(p: &Path) -> i64 {
    let c = rusqlite::Connection::open(p).unwrap();
    c.query_row("SELECT count(*) FROM sync_outbox", [], |r| r.get(0)).unwrap_or(0)
}

/// The hub's memories: global id → (origin, forgotten ? None : text).
pub fn hub_view(hub: &Hub) -> BTreeMap<String, (String, Option<String>)> {
    let mut c = hub.admin();
    c.query("SELECT global_id::text, origin, deleted, content FROM fleet.memories", &[])
        .unwrap()
        .iter()
        .map(|r| {
            let deleted: bool = r.get(2);
            (r.get(0), (r.get(1), if deleted { None } else { Some(r.get(3)) }))
        })
        .collect()
}

/// Every robot holds every hub memory as the hub has it, nothing waits to be
/// pushed, and no robot holds a fact twice.
pub fn converged(hub: &Hub, files: &[PathBuf]) -> Result<(), String> {
    let h = hub_view(hub);
    for f in files {
        if pending(f) > 0 {
            return Err(format!("{} still has {} changes to push", f.display(), pending(f)));
        }
        let (view, active) = robot_view(f);
        for (g, (_, want)) in &h {
            match view.get(g) {
                Some(have) if have == want => {}
                other => return Err(format!("{}: {g} is {other:?}, the hub has {want:?}", f.display())),
            }
        }
        if let Some(g) = view.keys().find(|g| !h.contains_key(*g)) {
            return Err(format!("{}: {g} is not on the hub", f.display()));
        }
        let unique: BTreeSet<&String> = active.iter().collect();
        if unique.len() != active.len() {
            return Err(format!("{}: a fact is held twice: {active:?}", f.display()));
        }
    }
    Ok(())
}

pub fn wait_converged(hub: &Hub, files: &[PathBuf], secs: u64) {
    let mut last;
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        match converged(hub, files) {
            Ok(()) => return,
            Err(e) => last = e,
        }
        assert!(std::time::Instant::now() < deadline, "no convergence after {secs} s: {last}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

pub fn id_of(db: &Db, p: &Path, text: &str) -> i64 {
    db.flush().unwrap();
    let c = rusqlite::Connection::open(p).unwrap();
    c.query_row("SELECT id FROM memories WHERE content = ?1 AND status = 'active'", [text], |r| r.get(0)).unwrap()
}
