//! Fleet sync against a real PostgreSQL, continued (see tests/fleet.rs): faults
//! in the middle of a push batch, and what is shared and how it arrives.

#[path = "common/hub.rs"]
mod hub;
#[path = "common/fleet_view.rs"]
mod view;

use std::path::PathBuf;
use std::time::Duration;

use hub::{wait_for, Hub, Server, Sync};
use robotmem::LearnRequest;
use view::*;

/// Waits until robot `login`'s backend waits on a lock (its push is mid-batch).
fn wait_push_blocked(hub: &Hub, login: &str, sync: &Sync) {
    let mut c = hub.admin();
    let log = sync.log.clone();
    wait_for(30, &format!("the push to block mid-batch (sync log {})", log.display()), || {
        let n: i64 = c
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE usename = $1 AND wait_event_type = 'Lock'",
                &[&login],
            )
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
    let last_seq = || -> i64 {
        hub.admin().query_one("SELECT last_seq FROM fleet.robots WHERE robot_id = 'r1'", &[]).unwrap().get(0)
    };
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
    let dup: i64 =
        hub.admin().query_one("SELECT count(*) - count(DISTINCT content) FROM fleet.memories", &[]).unwrap().get(0);
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
    assert!(!err.contains(&r1.password), "{err}");

    let mut c = hub.admin();
    let on_hub: Vec<String> =
        c.query("SELECT content FROM fleet.memories ORDER BY content", &[]).unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(
        on_hub,
        vec![
            "force profile of a slipping grasp on porous cardboard",
            "gotcha: wet floors make the wheels slip on the ramp"
        ]
    );
    let bytes: Vec<u8> =
        c.query_one("SELECT perception_data FROM fleet.memories WHERE kind = 'perception'", &[]).unwrap().get(0);
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
    let n: i64 = c
        .query_one("SELECT count(*) FROM fleet.memories WHERE content = 'aisle 6 is fourteen meters long'", &[])
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
    let n: i64 =
        c.query_one("SELECT count(*) FROM fleet.memories WHERE content LIKE 'the operator%'", &[]).unwrap().get(0);
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

    // A robot that pulls only perceptions of the warehouse gets only those.
    let r3 = hub.add_robot("r3");
    let f3 = dir.path().join("r3.db");
    let pull = ["--once", "--pull", &db1.get(p.memory_id).unwrap().category, "--pull-collection", "warehouse"];
    synced(hub::sync_command(&f3, "r3", &r3.url, &pull).output().unwrap());
    let (_, active) = robot_view(&f3);
    assert_eq!(active, vec!["force profile of a slipping grasp on porous cardboard".to_string()]);

    // `robotmem stats` says where the file stands in the fleet.
    let stats = |json: bool| {
        let mut c = std::process::Command::new(hub::BIN);
        c.arg("--db").arg(&f3).args(["--no-embeddings"]);
        if json {
            c.arg("--json");
        }
        let o = c.arg("stats").output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let v: serde_json::Value = serde_json::from_str(&stats(true)).unwrap();
    assert_eq!(v["fleet"]["robot_id"], "r3");
    assert_eq!(v["fleet"]["pending"], 0);
    assert!(v["fleet"]["received_up_to"]["r1"].as_i64().unwrap() > 0, "{v}");
    let text = stats(false);
    assert!(text.contains("fleet: robot r3") && text.contains("from r1 up to #"), "{text}");
}

/// A change the hub refuses as data (PostgreSQL's jsonb cannot hold `\u0000`,
/// which a context may) is skipped with a warning; the rest of its batch goes.
#[test]
fn a_change_the_hub_refuses_does_not_hold_back_the_rest() {
    let Some(server) = Server::get("a_change_the_hub_refuses_does_not_hold_back_the_rest") else { return };
    let hub = server.hub("fleet_poison");
    let r = hub.add_robot("r1");
    let dir = temp();
    let f = dir.path().join("r1.db");
    {
        let db = open(&f);
        db.learn(&LearnRequest { insight: &fact("r1", 1), ..Default::default() }).unwrap();
        let ctx = r#"{"note": "a\u0000b"}"#;
        db.learn(&LearnRequest {
            insight: "the arm stalls at joint 3 above 40 degrees",
            context: Some(ctx),
            ..Default::default()
        })
        .unwrap();
        db.learn(&LearnRequest { insight: &fact("r1", 2), ..Default::default() }).unwrap();
    }
    let err = synced(hub::sync_command(&f, "r1", &r.url, &["--once", "--share", "all"]).output().unwrap());
    assert!(err.contains("the hub refused memory") && err.contains("skipped"), "{err}");
    let texts: Vec<Option<String>> = hub_view(&hub).into_values().map(|v| v.1).collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert_eq!(pending(&f), 0);
}
