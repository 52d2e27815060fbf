//! Fleet memory through a real PostgreSQL (started by scripts/fleet-test.sh; without
//! it these tests print SKIPPED). Three robots converge while the hub is down at
//! start, crashes mid-batch, has its connections killed, and a sync process is
//! killed; row-level security, a duplicate robot id, a restored backup, clock skew,
//! sslmode and credentials in messages.

#[path = "common/hub.rs"]
mod hub;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hub::{sync_once, wait_for, Hub, Robot, Server, Sync};
use robotmem::{Db, Durability, LearnRequest, OpenOptions};

fn open(p: &Path) -> Db {
    let mut o = OpenOptions::path(p);
    o.embeddings = false;
    o.durability = Durability::Normal;
    Db::open(o).unwrap()
}

/// Asserts a `sync --once` succeeded; its stderr.
fn synced(o: std::process::Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "sync --once failed: {err}");
    err
}

fn temp() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("robotmem-fleet-test").tempdir().unwrap()
}

const WORDS: &[&str] = &[
    "gripper", "pallet", "dock", "lidar", "conveyor", "shelf", "forklift", "aisle", "charger", "camera", "bin", "tote",
    "ramp", "door", "elevator", "scanner", "label", "strap", "cart", "wheel",
];

/// A fact no other robot or step repeats (its numbers differ).
fn fact(robot: &str, k: usize) -> String {
    let w = |i: usize| WORDS[(k * 7 + i * 3 + robot.len()) % WORDS.len()];
    format!("{robot} step {k}: the {} near the {} needs {} cm clearance", w(0), w(1), 10 + k)
}

const SHARED: &str = "the mezzanine elevator door sensor fails when the floor is wet";

/// What a robot holds, per global id it knows: forgotten (`None`) or the text of
/// the active memory holding it; and the texts of its active memories.
fn robot_view(p: &Path) -> (BTreeMap<String, Option<String>>, Vec<String>) {
    let c = rusqlite::Connection::open(p).unwrap();
    let mut view = BTreeMap::new();
    let mut st = c.prepare("SELECT global_id, status, content FROM memories WHERE global_id IS NOT NULL").unwrap();
    for r in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))).unwrap() {
        let (g, status, content) = r.unwrap();
        view.insert(g, if status == "invalidated" { None } else { Some(content) });
    }
    let mut st = c
        .prepare("SELECT r.global_id, r.deleted, m.status, m.content FROM sync_remote r LEFT JOIN memories m ON m.id = r.memory_id")
        .unwrap();
    for r in st
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, bool>(1)?, r.get::<_, Option<String>>(2)?, r.get::<_, Option<String>>(3)?)))
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

fn pending(p: &Path) -> i64 {
    let c = rusqlite::Connection::open(p).unwrap();
    c.query_row("SELECT count(*) FROM sync_outbox", [], |r| r.get(0)).unwrap_or(0)
}

/// The hub's memories: global id → (origin, forgotten ? None : text).
fn hub_view(hub: &Hub) -> BTreeMap<String, (String, Option<String>)> {
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
fn converged(hub: &Hub, files: &[PathBuf]) -> Result<(), String> {
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

fn wait_converged(hub: &Hub, files: &[PathBuf], secs: u64) {
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

fn id_of(db: &Db, p: &Path, text: &str) -> i64 {
    db.flush().unwrap();
    let c = rusqlite::Connection::open(p).unwrap();
    c.query_row("SELECT id FROM memories WHERE content = ?1 AND status = 'active'", [text], |r| r.get(0)).unwrap()
}

#[test]
fn three_robots_converge_through_a_hub_that_fails() {
    let Some(server) = Server::get("three_robots_converge_through_a_hub_that_fails") else { return };
    let hub = server.hub("fleet_converge");
    let robots: Vec<Robot> = ["r1", "r2", "r3"].iter().map(|id| hub.add_robot(id)).collect();
    let dir = temp();
    let files: Vec<PathBuf> = robots.iter().map(|r| dir.path().join(format!("{}.db", r.id))).collect();
    let dbs: Vec<Db> = files.iter().map(|f| open(f)).collect();
    let args = ["--every", "300ms", "--share", "all", "--batch", "40"];
    let log = |i: usize, n: usize| dir.path().join(format!("sync-{i}-{n}.log"));

    // The hub is down when the robots start: they learn and their sync processes wait.
    server.ctl("stop");
    // Robot 3 connects for each sync; the others hold their connection.
    let args3 = [&args[..], &["--connection", "per-sync"]].concat();
    let args_of = |i: usize| if i == 2 { args3.clone() } else { args.to_vec() };
    let mut syncs: Vec<Option<Sync>> = (0..3).map(|i| Some(Sync::start(&files[i], &robots[i], &args_of(i), log(i, 0)))).collect();
    for (i, db) in dbs.iter().enumerate() {
        for k in 0..20 {
            db.learn(&LearnRequest { insight: &fact(&robots[i].id, k), ..Default::default() }).unwrap();
        }
        db.learn(&LearnRequest { insight: SHARED, ..Default::default() }).unwrap();
    }
    wait_for(20, "the sync processes to report the hub down", || {
        syncs.iter().all(|s| s.as_ref().unwrap().log().contains("retrying in"))
    });
    server.ctl("start");

    // Robots learn while the hub crashes mid-batch, connections are killed and a
    // sync process is killed.
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        for (i, db) in dbs.iter().enumerate() {
            let id = robots[i].id.clone();
            let done = &done;
            s.spawn(move || {
                for k in 20..140 {
                    db.learn(&LearnRequest { insight: &fact(&id, k), ..Default::default() }).unwrap();
                    std::thread::sleep(Duration::from_millis(8));
                }
                let _ = done;
            });
        }
        std::thread::sleep(Duration::from_millis(700));
        server.ctl("kill");
        std::thread::sleep(Duration::from_millis(800));
        server.ctl("start");
        std::thread::sleep(Duration::from_millis(500));
        hub.terminate_robots();
        std::thread::sleep(Duration::from_millis(300));
        syncs[1].take().unwrap().kill();
        syncs[1] = Some(Sync::start(&files[1], &robots[1], &args, log(1, 1)));
        std::thread::sleep(Duration::from_millis(400));
        hub.terminate_robots();
    });
    done.store(true, Ordering::Relaxed);

    // Updates and forgets, by each robot of its own memories.
    for (i, db) in dbs.iter().enumerate() {
        for k in (3..140).step_by(10) {
            let id = id_of(db, &files[i], &fact(&robots[i].id, k));
            db.update(id, &format!("{} (revised: clearance {} cm)", fact(&robots[i].id, k), 50 + k), None).unwrap();
        }
        for k in (7..140).step_by(10) {
            let id = id_of(db, &files[i], &fact(&robots[i].id, k));
            db.forget(id, "wrong").unwrap();
        }
    }
    wait_converged(&hub, &files, 120);

    // Robot 3 corrects a memory robot 1 made; everyone gets the correction.
    let from_r1 = fact("r1", 5);
    let id = id_of(&dbs[2], &files[2], &from_r1);
    dbs[2].update(id, "r1 step 5: the clearance there is 95 cm, measured again", None).unwrap();
    wait_converged(&hub, &files, 60);

    // Every memory is on the hub exactly once (one row per global id; no text twice per robot).
    let h = hub_view(&hub);
    let mut per_origin: BTreeMap<&str, Vec<&Option<String>>> = BTreeMap::new();
    for (origin, text) in h.values() {
        per_origin.entry(origin).or_default().push(text);
    }
    for r in &robots {
        let texts = &per_origin[r.id.as_str()];
        assert_eq!(texts.len(), 141, "{}: 140 facts and the shared one, each once", r.id);
        let live: BTreeSet<&String> = texts.iter().filter_map(|t| t.as_ref()).collect();
        assert_eq!(live.len(), texts.iter().filter(|t| t.is_some()).count(), "{}: no text twice", r.id);
        assert_eq!(texts.iter().filter(|t| t.is_none()).count(), 14, "{}: the forgets", r.id);
    }
    let mut c = hub.admin();
    let corrected: i64 = c
        .query_one("SELECT count(*) FROM fleet.memories WHERE content LIKE 'r1 step 5: the clearance there is 95 cm%' AND writer = 'r3'", &[])
        .unwrap()
        .get(0);
    assert_eq!(corrected, 1);
    // The same gotcha from three robots: three rows on the hub, one memory on each robot.
    for f in &files {
        let (_, active) = robot_view(f);
        assert_eq!(active.iter().filter(|t| *t == SHARED).count(), 1);
        let c = rusqlite::Connection::open(f).unwrap();
        let sources: i64 = c
            .query_row(
                "SELECT count(*) FROM sync_remote r JOIN memories m ON m.id = r.memory_id WHERE m.content = ?1 AND r.deleted = 0",
                [SHARED],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(sources, 2, "{}: the other two robots' copies are sources of the one memory", f.display());
        let (_, active) = robot_view(f);
        assert_eq!(active.len(), 3 * (140 - 14) + 1);
    }
    // Full-text search across the fleet from SQL.
    let n: i64 = c
        .query_one("SELECT count(*) FROM fleet.memories WHERE search @@ plainto_tsquery('simple', 'mezzanine elevator')", &[])
        .unwrap()
        .get(0);
    assert_eq!(n, 3);

    for (i, s) in syncs.into_iter().enumerate() {
        let log = s.unwrap().stop();
        for r in &robots {
            assert!(!log.contains(&r.password), "sync {i} printed a password: {log}");
        }
        assert!(log.contains("connected to the hub"), "{log}");
    }
}

#[test]
fn a_robot_cannot_write_another_robots_rows() {
    let Some(server) = Server::get("a_robot_cannot_write_another_robots_rows") else { return };
    let hub = server.hub("fleet_rls");
    let (a, b) = (hub.add_robot("ra"), hub.add_robot("rb"));
    let dir = temp();
    let fa = dir.path().join("a.db");
    open(&fa).learn(&LearnRequest { insight: "ra saw oil on the floor of aisle 4", ..Default::default() }).unwrap();
    let o = sync_once(&fa, &a, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let mut c = postgres::Client::connect(&a.url, postgres::NoTls).unwrap();
    let insert = "INSERT INTO fleet.changes (writer, seq, global_id, version, origin, deleted, status, collection, kind,
                  category, confidence, content, context, tags, created_at)
                  VALUES ($1, 1000, gen_random_uuid(), 1, $1, false, 'active', 'default', 'fact', 'gotcha', 0.9, 'x', '{}', '{}', '')";
    let e = c.execute(insert, &[&"rb"]).unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("42501"), "{e:?}");
    assert!(e.as_db_error().unwrap().message().contains("row-level security"), "{e:?}");
    if let Err(e) = c.execute(insert, &[&"ra"]) {
        panic!("its own rows it may write: {e:?}");
    }
    for sql in ["UPDATE fleet.changes SET content = 'y'", "DELETE FROM fleet.changes", "UPDATE fleet.memories SET content = 'y'",
        "DELETE FROM fleet.memories", "UPDATE fleet.robots SET last_seq = 0", "INSERT INTO fleet.robots (robot_id) VALUES ('rz')"]
    {
        let e = c.execute(sql, &[]).unwrap_err();
        assert_eq!(e.code().map(|c| c.code()), Some("42501"), "{sql}: {e:?}");
    }
    for sql in ["SELECT fleet.claim('rb', gen_random_uuid())", "SELECT fleet.begin_push('rb')"] {
        let e = c.query(sql, &[]).unwrap_err();
        assert!(e.as_db_error().unwrap().message().contains("may not"), "{sql}: {e:?}");
    }
    // The command refuses too, and says why.
    let o = sync_once(&dir.path().join("b.db"), &Robot { id: b.id.clone(), url: a.url.clone(), login: a.login.clone(), password: a.password.clone() }, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("may not sync robot rb"), "{err}");
    assert!(!err.contains(&a.password), "{err}");
}

#[test]
fn a_second_database_claiming_a_robot_id_is_refused() {
    let Some(server) = Server::get("a_second_database_claiming_a_robot_id_is_refused") else { return };
    let hub = server.hub("fleet_dupid");
    let r = hub.add_robot("r1");
    let dir = temp();
    let (first, second) = (dir.path().join("first.db"), dir.path().join("second.db"));
    open(&first).learn(&LearnRequest { insight: "door 3 closes after 20 s", ..Default::default() }).unwrap();
    open(&second).learn(&LearnRequest { insight: "door 4 closes after 30 s", ..Default::default() }).unwrap();
    synced(sync_once(&first, &r, &[]));
    let o = sync_once(&second, &r, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(19), "{err}");
    assert!(err.contains("already claimed by another database"), "{err}");
    // Nothing of the second file reached the hub.
    let n: i64 = hub.admin().query_one("SELECT count(*) FROM fleet.changes", &[]).unwrap().get(0);
    assert_eq!(n, 1);
    // A long-running second sync stops on it too (retrying cannot help).
    let mut s = Sync::start(&second, &r, &["--every", "200ms"], dir.path().join("s.log"));
    let status = s.child.wait().unwrap();
    assert_eq!(status.code(), Some(19));
}

#[test]
fn a_database_restored_from_an_old_backup_is_repaired() {
    let Some(server) = Server::get("a_database_restored_from_an_old_backup_is_repaired") else { return };
    let hub = server.hub("fleet_restore");
    let (r1, r2) = (hub.add_robot("r1"), hub.add_robot("r2"));
    let dir = temp();
    let (f1, f2, backup) = (dir.path().join("r1.db"), dir.path().join("r2.db"), dir.path().join("r1-backup.db"));
    let early: Vec<String> = (0..5).map(|k| fact("r1", k)).collect();
    {
        let db = open(&f1);
        for t in &early {
            db.learn(&LearnRequest { insight: t, ..Default::default() }).unwrap();
        }
    }
    synced(sync_once(&f1, &r1, &[]));
    std::fs::copy(&f1, &backup).unwrap(); // closed cleanly: no -wal to copy
    {
        let db = open(&f1);
        for k in 5..10 {
            db.learn(&LearnRequest { insight: &fact("r1", k), ..Default::default() }).unwrap();
        }
        let id = id_of(&db, &f1, &early[0]);
        db.update(id, "r1 step 0: revised before the disk failed, 61 cm", None).unwrap();
    }
    synced(sync_once(&f1, &r1, &[]));
    synced(sync_once(&f2, &r2, &[]));

    // The disk fails; the file comes back from the backup; the robot keeps working.
    std::fs::copy(&backup, &f1).unwrap();
    {
        let db = open(&f1);
        db.learn(&LearnRequest { insight: "r1 after the restore: ramp 2 is closed for 3 days", ..Default::default() }).unwrap();
        let id = id_of(&db, &f1, &early[0]);
        db.update(id, "r1 step 0: revised after the restore, 64 cm", None).unwrap();
    }
    let o = sync_once(&f1, &r1, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("restored from an older backup"), "{err}");
    synced(sync_once(&f2, &r2, &[]));
    synced(sync_once(&f1, &r1, &[]));
    converged(&hub, &[f1.clone(), f2.clone()]).unwrap();
    let h = hub_view(&hub);
    let texts: Vec<&str> = h.values().filter_map(|(_, t)| t.as_deref()).collect();
    assert_eq!(texts.len(), 11, "10 facts and the new one, each once: {texts:?}");
    assert!(texts.contains(&"r1 step 0: revised after the restore, 64 cm"), "the edit after the restore wins");
    let (_, active) = robot_view(&f1);
    for k in 5..10 {
        assert!(active.contains(&fact("r1", k)), "the memories the backup lacked came back");
    }
    let (_, active2) = robot_view(&f2);
    assert!(active2.iter().any(|t| t.starts_with("r1 after the restore")), "numbered above what r2 had seen");
}

#[test]
fn a_robot_whose_clock_is_hours_off_still_wins_by_version() {
    let Some(server) = Server::get("a_robot_whose_clock_is_hours_off_still_wins_by_version") else { return };
    let Some(faketime) = server.faketime.clone() else {
        eprintln!("SKIPPED: a_robot_whose_clock_is_hours_off_still_wins_by_version: faketime is not installed");
        return;
    };
    let hub = server.hub("fleet_skew");
    let (r1, r2) = (hub.add_robot("r1"), hub.add_robot("r2"));
    let dir = temp();
    let (f1, f2) = (dir.path().join("r1.db"), dir.path().join("r2.db"));
    // r2's clock is 5 hours behind: everything it does (its learns, its sync) runs under faketime.
    let skewed = |args: &[&str]| {
        let mut c = std::process::Command::new(&faketime);
        c.arg("-f").arg("-5h").arg(hub::BIN).arg("--db").arg(&f2).args(["--no-embeddings"]).args(args);
        c.env("ROBOTMEM_HUB_URL", &r2.url);
        let o = c.output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let db1 = open(&f1);
    db1.learn(&LearnRequest { insight: "charger 7 needs the slow approach mode", ..Default::default() }).unwrap();
    synced(sync_once(&f1, &r1, &[]));
    skewed(&["sync", "--robot-id", "r2", "--once", "--share", "all"]);
    // r1 edits (version 2), then r2 edits after it in real time but with a clock 5 h earlier (version 3).
    let id = id_of(&db1, &f1, "charger 7 needs the slow approach mode");
    db1.update(id, "charger 7 needs the slow approach mode below 20 % battery", None).unwrap();
    synced(sync_once(&f1, &r1, &[]));
    skewed(&["sync", "--robot-id", "r2", "--once", "--share", "all"]);
    let out = skewed(&["--json", "list"]);
    let local_id = serde_json::from_str::<serde_json::Value>(&out).unwrap()["memories"][0]["id"].as_i64().unwrap();
    skewed(&["update", &local_id.to_string(), "charger 7 was fixed: the normal approach works again"]);
    skewed(&["sync", "--robot-id", "r2", "--once", "--share", "all"]);
    synced(sync_once(&f1, &r1, &[]));
    let m = db1.get(id).unwrap();
    assert_eq!(m.content, "charger 7 was fixed: the normal approach works again");
    let (writer, version, updated): (String, i64, String) = {
        let c = rusqlite::Connection::open(&f2).unwrap();
        c.query_row("SELECT writer, version, updated_at FROM memories", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap()
    };
    assert_eq!((writer.as_str(), version), ("", 3));
    assert!(updated < m.created_at, "r2's clock really was behind: {updated} vs {}", m.created_at);
    converged(&hub, &[f1, f2]).unwrap();
}

#[test]
fn sslmode_is_passed_through_and_credentials_never_printed() {
    let Some(server) = Server::get("sslmode_is_passed_through_and_credentials_never_printed") else { return };
    let hub = server.hub("fleet_tls");
    let r = hub.add_robot("r1");
    let dir = temp();
    let f = dir.path().join("r1.db");
    open(&f).learn(&LearnRequest { insight: "the cold room door must be shut within 30 s", ..Default::default() }).unwrap();
    let with = |tls: &str| Robot {
        id: r.id.clone(),
        url: server.url(&hub.db, &r.login, &r.password, tls).replace(&format!("@{}:", server.host), "@localhost:"),
        login: r.login.clone(),
        password: r.password.clone(),
    };
    let ssl_of_a_running_sync = |tls: &str| -> bool {
        let s = Sync::start(&f, &with(tls), &["--every", "200ms"], dir.path().join("tls.log"));
        wait_for(20, "the sync to connect", || s.log().contains("connected to the hub"));
        let mut c = hub.admin();
        let ssl: bool = c
            .query_one(
                "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.usename = $1",
                &[&r.login],
            )
            .unwrap()
            .get(0);
        let log = s.stop();
        assert!(!log.contains(&r.password), "{log}");
        ssl
    };
    let ca = server.ca.display().to_string();
    assert!(ssl_of_a_running_sync(&format!("sslmode=verify-full&sslrootcert={ca}")));
    assert!(ssl_of_a_running_sync("sslmode=require"));
    assert!(!ssl_of_a_running_sync("sslmode=disable"));
    // verify-full against the system's roots: this test CA is not one of them.
    let o = sync_once(&f, &with("sslmode=verify-full"), &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("certificate"), "{err}");
    assert!(!err.contains(&r.password), "{err}");
    // A wrong password: refused, and neither password is printed.
    let mut bad = with("sslmode=disable");
    bad.url = bad.url.replace(&r.password, "not-the-Secret-123");
    let o = sync_once(&f, &bad, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("password authentication failed"), "{err}");
    assert!(!err.contains("not-the-Secret-123") && !err.contains(&r.password), "{err}");
    // The hub down: a clear message naming the hub without its password.
    let down = server.url(&hub.db, &r.login, &r.password, "sslmode=disable").replace(&server.port, "1");
    let o = sync_once(&f, &Robot { url: down, ..with("") }, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("hub unreachable") && err.contains(&format!("{}@", r.login)), "{err}");
    assert!(!err.contains(&r.password), "{err}");
}

/// Waits until robot `login`'s backend waits on a lock (its push is mid-batch).
fn wait_push_blocked(hub: &Hub, login: &str, sync: &Sync) {
    let mut c = hub.admin();
    let log = sync.log.clone();
    wait_for(30, &format!("the push to block mid-batch (sync log {})", log.display()), || {
        let n: i64 = c
            .query_one("SELECT count(*) FROM pg_stat_activity WHERE usename = $1 AND wait_event_type = 'Lock'", &[&login])
            .unwrap()
            .get(0);
        n > 0
    });
}

fn hub_count(hub: &Hub) -> i64 {
    hub.admin().query_one("SELECT count(*) FROM fleet.memories", &[]).unwrap().get(0)
}

/// Each fault hits a push in the middle of its hub transaction (held there by a
/// lock the test takes), or between the hub's commit and the robot's own record
/// of it: nothing is lost, nothing is stored twice.
#[test]
fn faults_in_the_middle_of_a_batch_lose_and_duplicate_nothing() {
    let Some(server) = Server::get("faults_in_the_middle_of_a_batch_lose_and_duplicate_nothing") else { return };
    let hub = server.hub("fleet_midbatch");
    let r = hub.add_robot("r1");
    let tmp = temp();
    let dir = tmp.path();
    let f = dir.join("r1.db");
    let db = open(&f);
    let learn = |from: usize| {
        for k in from..from + 30 {
            db.learn(&LearnRequest { insight: &fact("r1", k), ..Default::default() }).unwrap();
        }
    };
    let args = ["--every", "200ms", "--share", "all", "--batch", "10"];
    let start = |i: usize| Sync::start(&f, &r, &args, dir.join(format!("s{i}.log")));
    let hold = || {
        let mut c = hub.admin();
        c.batch_execute("BEGIN; LOCK TABLE fleet.sessions IN ACCESS EXCLUSIVE MODE").unwrap();
        c
    };

    // 1. The hub crashes while a batch is open.
    learn(0);
    let lock = hold();
    let mut s = start(0);
    wait_push_blocked(&hub, &r.login, &s);
    server.ctl("kill");
    drop(lock);
    server.ctl("start");
    wait_for(60, "30 memories on the hub", || hub_count(&hub) == 30);

    // 2. Its connection is terminated while a batch is open.
    let mut lock = hold();
    learn(30);
    wait_push_blocked(&hub, &r.login, &s);
    assert!(hub.terminate_robots() >= 1);
    lock.batch_execute("ROLLBACK").unwrap();
    wait_for(60, "60 memories on the hub", || hub_count(&hub) == 60);

    // 3. The sync process is killed while a batch is open.
    let mut lock = hold();
    learn(60);
    wait_push_blocked(&hub, &r.login, &s);
    s.kill_now();
    lock.batch_execute("ROLLBACK").unwrap();
    assert_eq!(hub_count(&hub), 60, "nothing of the open batch was committed");
    s = start(1);
    wait_for(60, "90 memories on the hub", || hub_count(&hub) == 90);

    // 4. Killed after the hub committed a batch, before the file recorded it (the
    //    test holds the file's writer lock): the next start learns it from the hub
    //    and sends nothing twice.
    let mut lock = hold();
    learn(90);
    wait_push_blocked(&hub, &r.login, &s);
    let local = rusqlite::Connection::open(&f).unwrap();
    local.execute_batch("BEGIN IMMEDIATE").unwrap();
    learn_blocked_check(&local);
    let last_seq = || -> i64 { hub.admin().query_one("SELECT last_seq FROM fleet.robots WHERE robot_id = 'r1'", &[]).unwrap().get(0) };
    let before = last_seq();
    lock.batch_execute("ROLLBACK").unwrap();
    wait_for(60, "the hub to commit the batch", || last_seq() > before);
    s.kill_now();
    local.execute_batch("ROLLBACK").unwrap();
    assert!(pending(&f) > 0, "the file had not recorded the last push");
    let changes_before: i64 = hub.admin().query_one("SELECT count(*) FROM fleet.changes", &[]).unwrap().get(0);
    s = start(2);
    wait_for(60, "the outbox to empty", || pending(&f) == 0);
    let changes_after: i64 = hub.admin().query_one("SELECT count(*) FROM fleet.changes", &[]).unwrap().get(0);
    assert_eq!(changes_after, 120, "each change once ({changes_before} before the restart)");
    assert_eq!(hub_count(&hub), 120);
    let dup: i64 = hub.admin().query_one("SELECT count(*) - count(DISTINCT content) FROM fleet.memories", &[]).unwrap().get(0);
    assert_eq!(dup, 0);
    let log = s.stop();
    assert!(log.contains("connected to the hub") && !log.contains(&r.password), "{log}");
}

/// A write transaction held on the file really blocks writers (the premise of step 4).
fn learn_blocked_check(local: &rusqlite::Connection) {
    let other = rusqlite::Connection::open(local.path().unwrap()).unwrap();
    other.busy_timeout(Duration::from_millis(100)).unwrap();
    let e = other.execute_batch("BEGIN IMMEDIATE").unwrap_err();
    assert!(e.to_string().contains("locked"), "{e}");
}

/// The model the other command tests use, if provisioned: (model dir, ONNX Runtime).
fn model() -> Option<(PathBuf, PathBuf)> {
    let models = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.cache/models");
    let (dir, ort) = (models.join("use-multilingual-v3-int8"), models.join("onnxruntime/libonnxruntime.so"));
    if dir.join("model.onnx").is_file() && ort.is_file() {
        return Some((dir, ort));
    }
    assert_ne!(std::env::var("ROBOTMEM_REQUIRE_MODEL").as_deref(), Ok("1"), "no model under {}", models.display());
    eprintln!("SKIPPED (the re-embedding part): no model under {} (run scripts/fetch-model.sh)", models.display());
    None
}

/// What is shared (categories, collections; a memory once shared stays shared),
/// perceptions with their data, ended sessions, and received memories embedded
/// with the receiving robot's own model.
#[test]
fn what_is_shared_and_how_it_arrives() {
    let Some(server) = Server::get("what_is_shared_and_how_it_arrives") else { return };
    let hub = server.hub("fleet_share");
    let (r1, r2) = (hub.add_robot("r1"), hub.add_robot("r2"));
    let dir = temp();
    let (f1, f2) = (dir.path().join("r1.db"), dir.path().join("r2.db"));
    let db1 = open(&f1);
    let learn = |text: &str, collection: &str| {
        db1.learn(&LearnRequest { insight: text, collection: Some(collection), ..Default::default() }).unwrap()
    };
    let shared = learn("gotcha: wet floors make the wheels slip on the ramp", "warehouse");
    let private = learn("the operator prefers the quiet mode after 22:00", "private");
    let other_kind = learn("aisle 5 is twelve meters long", "warehouse");
    assert_ne!(shared.category, other_kind.category, "two categories to share one of");
    let data: Vec<u8> = (0..=255u8).chain([0, 0, 255]).collect();
    let p = db1
        .save_perception(&robotmem::PerceptionRequest {
            description: "force profile of a slipping grasp on porous cardboard",
            perception_type: robotmem::PerceptionType::Tactile,
            data: Some(&data),
            metadata: Some(r#"{"rate_hz": 500}"#),
            collection: Some("warehouse"),
            ..Default::default()
        })
        .unwrap();
    let s = db1.start_session(Some("warehouse"), None).unwrap().session_id;
    db1.end_session(&s, Some(0.75)).unwrap();
    let categories = format!("{},{}", shared.category, db1.get(p.memory_id).unwrap().category);
    let share = ["--share", categories.as_str(), "--share-collection", "warehouse"];
    let err = synced(hub::sync_command(&f1, "r1", &r1.url, &[&["--once"][..], &share[..]].concat()).output().unwrap());
    assert!(err.is_empty() || !err.contains(&r1.password));

    let mut c = hub.admin();
    let on_hub: Vec<String> = c.query("SELECT content FROM fleet.memories ORDER BY content", &[]).unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(on_hub, vec!["force profile of a slipping grasp on porous cardboard", "gotcha: wet floors make the wheels slip on the ramp"]);
    let bytes: Vec<u8> = c.query_one("SELECT perception_data FROM fleet.memories WHERE kind = 'perception'", &[]).unwrap().get(0);
    assert_eq!(bytes, data);
    let (sid, outcome): (String, Option<f64>) = {
        let r = c.query_one("SELECT session_id, outcome FROM fleet.sessions WHERE robot_id = 'r1'", &[]).unwrap();
        (r.get(0), r.get(1))
    };
    assert_eq!((sid.as_str(), outcome), (s.as_str(), Some(0.75)));

    // Once shared, a memory stays shared: its update travels though its category changed.
    db1.update(shared.memory_id, "aisle 6 is fourteen meters long", None).unwrap();
    assert_ne!(db1.get(shared.memory_id).unwrap().category, shared.category);
    db1.update(private.memory_id, "the operator prefers the quiet mode after 21:00", None).unwrap();
    synced(hub::sync_command(&f1, "r1", &r1.url, &[&["--once"][..], &share[..]].concat()).output().unwrap());
    let n: i64 = c.query_one("SELECT count(*) FROM fleet.memories WHERE content = 'aisle 6 is fourteen meters long'", &[]).unwrap().get(0);
    assert_eq!(n, 1);
    let n: i64 = c.query_one("SELECT count(*) FROM fleet.memories WHERE content LIKE 'the operator%'", &[]).unwrap().get(0);
    assert_eq!(n, 0, "the private collection stays here");

    // r2 receives both, with the perception's data, embedded by its own model.
    let mut cmd = hub::sync_command(&f2, "r2", &r2.url, &["--once"]);
    let m = model();
    if let Some((dir, ort)) = &m {
        cmd = std::process::Command::new(hub::BIN);
        cmd.arg("--db").arg(&f2).arg("--model-dir").arg(dir).arg("--ort-library").arg(ort);
        cmd.args(["--durability", "normal", "sync", "--robot-id", "r2", "--once"]).env("ROBOTMEM_HUB_URL", &r2.url);
    }
    synced(cmd.output().unwrap());
    let c2 = rusqlite::Connection::open(&f2).unwrap();
    let got: Vec<(String, Option<Vec<u8>>, i64, String)> = c2
        .prepare("SELECT content, perception_data, embedded, origin FROM memories ORDER BY content")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[1].0, "force profile of a slipping grasp on porous cardboard");
    assert_eq!(got[1].1.as_deref(), Some(&data[..]));
    assert!(got.iter().all(|g| g.3 == "r1"));
    if m.is_some() {
        assert!(got.iter().all(|g| g.2 == 1), "embedded here: {got:?}");
    }
}
