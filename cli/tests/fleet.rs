//! Fleet memory through a real PostgreSQL (started by scripts/fleet-test.sh; without
//! it these tests print SKIPPED). Three robots converge while the hub is down at
//! start, crashes mid-batch, has its connections killed, and a sync process is
//! killed; row-level security, a duplicate robot id, a restored backup, clock skew,
//! sslmode and credentials in messages.

#[path = "common/hub.rs"]
mod hub;
#[path = "common/fleet_view.rs"]
mod view;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use hub::{sync_once, wait_for, Robot, Server, Sync};
use robotmem::{Db, LearnRequest, RecallRequest};
use view::*;

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
    let mut syncs: Vec<Option<Sync>> =
        (0..3).map(|i| Some(Sync::start(&files[i], &robots[i], &args_of(i), log(i, 0)))).collect();
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
    std::thread::scope(|s| {
        for (i, db) in dbs.iter().enumerate() {
            let id = robots[i].id.clone();
            s.spawn(move || {
                for k in 20..140 {
                    db.learn(&LearnRequest { insight: &fact(&id, k), ..Default::default() }).unwrap();
                    std::thread::sleep(Duration::from_millis(8));
                }
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
        .query_one(
            "SELECT count(*) FROM fleet.memories WHERE search @@ plainto_tsquery('simple', 'mezzanine elevator')",
            &[],
        )
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
    // (writer, origin, seq)
    let insert = "INSERT INTO fleet.changes (writer, seq, global_id, version, origin, deleted, status, collection, kind,
                  category, confidence, content, context, tags, created_at)
                  VALUES ($1, $3, gen_random_uuid(), 1, $2, false, 'active', 'default', 'fact', 'gotcha', 0.9, 'x', '{}', '{}', '')";
    let e = c.execute(insert, &[&"rb", &"rb", &1000i64]).unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("42501"), "{e:?}");
    assert!(e.as_db_error().unwrap().message().contains("row-level security"), "{e:?}");
    if let Err(e) = c.execute(insert, &[&"ra", &"ra", &1000i64]) {
        panic!("its own rows it may write: {e:?}");
    }
    // Nor may it create a memory in another robot's name.
    let e = c.execute(insert, &[&"ra", &"rb", &1001i64]).unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("23514"), "{e:?}");
    for sql in [
        "UPDATE fleet.changes SET content = 'y'",
        "DELETE FROM fleet.changes",
        "UPDATE fleet.memories SET content = 'y'",
        "DELETE FROM fleet.memories",
        "UPDATE fleet.robots SET last_seq = 0",
        "INSERT INTO fleet.robots (robot_id) VALUES ('rz')",
    ] {
        let e = c.execute(sql, &[]).unwrap_err();
        assert_eq!(e.code().map(|c| c.code()), Some("42501"), "{sql}: {e:?}");
    }
    for sql in ["SELECT fleet.claim('rb', gen_random_uuid())", "SELECT fleet.begin_push('rb')"] {
        let e = c.query(sql, &[]).unwrap_err();
        assert!(e.as_db_error().unwrap().message().contains("may not"), "{sql}: {e:?}");
    }
    // The command refuses too, and says why.
    let o = sync_once(
        &dir.path().join("b.db"),
        &Robot { id: b.id.clone(), url: a.url.clone(), login: a.login.clone(), password: a.password.clone() },
        &[],
    );
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
        db.learn(&LearnRequest { insight: "r1 after the restore: ramp 2 is closed for 3 days", ..Default::default() })
            .unwrap();
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
        c.query_row("SELECT writer, version, updated_at FROM memories", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
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
    open(&f)
        .learn(&LearnRequest { insight: "the cold room door must be shut within 30 s", ..Default::default() })
        .unwrap();
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

#[test]
fn a_hub_restored_from_an_old_backup_gets_the_memories_again() {
    let Some(server) = Server::get("a_hub_restored_from_an_old_backup_gets_the_memories_again") else { return };
    let hub = server.hub("fleet_hubrestore");
    let (r1, r2) = (hub.add_robot("r1"), hub.add_robot("r2"));
    let dir = temp();
    let (f1, f2) = (dir.path().join("r1.db"), dir.path().join("r2.db"));
    {
        let db = open(&f1);
        for k in 0..8 {
            db.learn(&LearnRequest { insight: &fact("r1", k), ..Default::default() }).unwrap();
        }
    }
    synced(sync_once(&f1, &r1, &[]));
    synced(sync_once(&f2, &r2, &[]));
    // The hub comes back from a backup taken before r1's pushes.
    hub.admin()
        .batch_execute(
            "DELETE FROM fleet.memories WHERE origin = 'r1'; DELETE FROM fleet.changes WHERE writer = 'r1';
             UPDATE fleet.robots SET last_seq = 0 WHERE robot_id = 'r1'",
        )
        .unwrap();
    let err = synced(sync_once(&f1, &r1, &[]));
    assert!(err.contains("the hub is behind this file"), "{err}");
    assert_eq!(hub_view(&hub).len(), 8);
    synced(sync_once(&f2, &r2, &[]));
    converged(&hub, &[f1, f2]).unwrap();
}

#[test]
fn an_expired_memory_expires_on_every_robot() {
    let Some(server) = Server::get("an_expired_memory_expires_on_every_robot") else { return };
    let hub = server.hub("fleet_expiry");
    let (r1, r2) = (hub.add_robot("r1"), hub.add_robot("r2"));
    let dir = temp();
    let (f1, f2) = (dir.path().join("r1.db"), dir.path().join("r2.db"));
    let (db1, db2) = (open(&f1), open(&f2));
    let text = "a pallet blocks aisle 4 near the charger";
    db1.learn(&LearnRequest { insight: text, ttl_seconds: Some(3600.0), ..Default::default() }).unwrap();
    synced(sync_once(&f1, &r1, &[]));
    synced(sync_once(&f2, &r2, &[]));
    let recalled = |db: &Db| {
        let r = db.recall(&RecallRequest { query: "pallet aisle 4", min_confidence: 0.0, ..Default::default() });
        r.unwrap().hits.iter().map(|h| h.memory.id).collect::<Vec<_>>()
    };
    let on2 = recalled(&db2);
    assert_eq!(on2.len(), 1, "r2 got the memory");
    let (m1, m2) = (db1.get(id_of(&db1, &f1, text)).unwrap(), db2.get(on2[0]).unwrap());
    assert!(m1.expires_at.is_some() && m2.expires_at == m1.expires_at, "{m1:?} / {m2:?}");
    // r1 learns the pallet was moved: it expires now, on r1 and, after a sync, on r2.
    db1.set_expiry(m1.id, None, Some("2020-01-01T00:00:00Z")).unwrap();
    assert!(recalled(&db1).is_empty());
    synced(sync_once(&f1, &r1, &[]));
    synced(sync_once(&f2, &r2, &[]));
    assert!(recalled(&db2).is_empty(), "expired on r2 too");
    assert!(db2.get(m2.id).unwrap().expired, "readable by id there, expired");
    // The hub's current state holds the expiry.
    let at: Option<String> = hub.admin().query_one("SELECT expires_at FROM fleet.memories", &[]).unwrap().get(0);
    assert_eq!(at.as_deref(), Some("2020-01-01T00:00:00.000Z"));
    // Renewed on r2, renewed on r1.
    db2.set_expiry(m2.id, Some(600.0), None).unwrap();
    synced(sync_once(&f2, &r2, &[]));
    synced(sync_once(&f1, &r1, &[]));
    assert_eq!(recalled(&db1), vec![m1.id]);
    converged(&hub, &[f1, f2]).unwrap();
    // History on each robot: what came from the fleet says so, and from which robot.
    let causes = |db: &Db, id: i64| -> Vec<(String, String)> {
        db.history(id).unwrap().into_iter().map(|v| (v.cause, v.cause_writer)).collect()
    };
    let pair = |c: &str, w: &str| (c.to_string(), w.to_string());
    assert_eq!(causes(&db2, m2.id), [pair("fleet", "r1"), pair("fleet", "r1"), pair("expiry", "")]);
    assert_eq!(causes(&db1, m1.id), [pair("learn", ""), pair("expiry", ""), pair("fleet", "r2")]);
    // As of before r1's expiry reached it, r2 recalled the memory.
    let then = db2.as_of(&db2.history(m2.id).unwrap()[0].valid_from).unwrap();
    assert_eq!(recalled(&then).len(), 1, "r2 as of its receipt");
}

/// Eviction and purge are local: the hub and the other robots keep the memory;
/// a newer version from the fleet brings it back to the robot that evicted it, as
/// a new local memory; a purge after a forget leaves the fleet's forget alone.
#[test]
fn eviction_and_purge_are_local_to_a_robot() {
    let Some(server) = Server::get("eviction_and_purge_are_local_to_a_robot") else { return };
    let hub = server.hub("fleet_retention");
    let (r1, r2) = (hub.add_robot("r1"), hub.add_robot("r2"));
    let dir = temp();
    let (f1, f2) = (dir.path().join("r1.db"), dir.path().join("r2.db"));
    let text = "the charger in bay 3 needs 40 minutes for a full charge";
    let first = open(&f1).learn(&LearnRequest { insight: text, ..Default::default() }).unwrap().memory_id;
    synced(sync_once(&f1, &r1, &[]));
    synced(sync_once(&f2, &r2, &[]));
    let db2 = open(&f2);
    let on2 = id_of(&db2, &f2, text);
    // r1 under a budget of 1 memory: its next learn evicts the charger memory, here only.
    let mut o = robotmem::OpenOptions::path(&f1);
    (o.embeddings, o.max_memories) = (false, 1);
    let db1 = Db::open(o).unwrap();
    let lift = "the lift in bay 5 is out of service until friday";
    assert_eq!(db1.learn(&LearnRequest { insight: lift, ..Default::default() }).unwrap().evicted, vec![first]);
    synced(sync_once(&f1, &r1, &[]));
    synced(sync_once(&f2, &r2, &[]));
    assert_eq!(db2.get(on2).unwrap().status, robotmem::MemoryStatus::Active, "r2 keeps it");
    let held = |content: &str| hub_view(&hub).values().filter(|(_, c)| c.as_deref() == Some(content)).count();
    assert_eq!((held(text), held(lift)), (1, 1), "the hub keeps it and got the new one");
    // r2 changes it: the newer version comes back to r1 as a new memory.
    let newer = "the charger in bay 3 needs 45 minutes for a full charge";
    db2.update(on2, newer, None).unwrap();
    synced(sync_once(&f2, &r2, &[]));
    synced(sync_once(&f1, &r1, &[]));
    let back = id_of(&db1, &f1, newer);
    assert!(back > first, "a new local memory #{back}");
    // A forget is replicated as always; the purge after it is not a change.
    db1.forget(back, "charger replaced").unwrap();
    synced(sync_once(&f1, &r1, &[]));
    assert_eq!(db1.purge(0.0).unwrap().purged, 1);
    synced(sync_once(&f1, &r1, &[]));
    synced(sync_once(&f2, &r2, &[]));
    assert_eq!(db2.get(on2).unwrap().status, robotmem::MemoryStatus::Invalidated, "the forget reached r2");
    assert_eq!(held(newer), 0, "forgotten on the hub");
    assert_eq!(db1.get(back).unwrap_err().status, robotmem::Status::NotFound);
}

#[test]
fn hub_migrations_are_versioned() {
    let Some(server) = Server::get("hub_migrations_are_versioned") else { return };
    let hub = server.hub("fleet_migrations");
    let o = hub.robotmem_admin(&["--json", "hub", "migrate"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["from_version"], v["to_version"], "a second migrate changes nothing: {v}");
    // Last writer wins compares robot ids byte by byte, on the hub as on the robots.
    for table in ["changes", "memories"] {
        let coll: Option<String> = hub
            .admin()
            .query_one(
                "SELECT collation_name::text FROM information_schema.columns
                 WHERE table_schema = 'fleet' AND table_name = $1 AND column_name = 'writer'",
                &[&table],
            )
            .unwrap()
            .get(0);
        assert_eq!(coll.as_deref(), Some("C"), "{table}");
    }
    let r = hub.add_robot("r1");
    let dir = temp();
    let f = dir.path().join("r1.db");
    hub.admin().batch_execute("INSERT INTO fleet.schema_migrations (version) VALUES (99)").unwrap();
    let o = sync_once(&f, &r, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(19), "{err}");
    assert!(err.contains("schema is version 99"), "{err}");
    let o = hub.robotmem_admin(&["hub", "migrate"]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("newer than this robotmem"));
}
