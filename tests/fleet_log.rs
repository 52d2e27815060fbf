//! The fleet replication log in the engine (schema 5, `fleet`, `db::fleet`):
//! global ids, versions, the outbox filled in the writing transaction by every
//! meaningful change and by nothing else, claims, acknowledgements and repairs.

#[path = "common/fleet_change.rs"]
mod fleet_change;
#[path = "common/scratch.rs"]
mod scratch;
use std::path::Path;

use fleet_change::change;
use robotmem::fleet::Change;
use robotmem::*;

fn open(p: &Path) -> Db {
    let mut o = OpenOptions::path(p);
    o.embeddings = false;
    o.durability = Durability::Normal;
    Db::open(o).unwrap()
}

fn learn(db: &Db, text: &str) -> i64 {
    let r = db.learn(&LearnRequest { insight: text, ..Default::default() }).unwrap();
    assert!(r.duplicate.is_none(), "{text}");
    r.memory_id
}

fn outbox(p: &Path) -> Vec<(i64, Option<i64>, Option<String>)> {
    let c = rusqlite::Connection::open(p).unwrap();
    let mut st = c.prepare("SELECT seq, memory_id, session_id FROM sync_outbox ORDER BY seq").unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(|r| r.unwrap()).collect()
}

fn row(p: &Path, id: i64) -> (String, String, String, i64) {
    let c = rusqlite::Connection::open(p).unwrap();
    c.query_row("SELECT global_id, origin, writer, version FROM memories WHERE id = ?1", [id], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })
    .unwrap()
}

#[test]
fn a_file_that_never_syncs_gets_global_ids_and_no_log() {
    let dir = scratch::Scratch::new("fleet-log");
    let db = open(&dir.db());
    let a = learn(&db, "the left gripper slips on wet cardboard");
    let b = learn(&db, "the charging dock at bay 3 needs a slow approach");
    db.update(a, "the left gripper slips on wet or waxed cardboard", None).unwrap();
    db.forget(b, "dock was moved").unwrap();
    assert!(outbox(&dir.db()).is_empty(), "no outbox before a claim");
    let (ga, origin, writer, version) = row(&dir.db(), a);
    let u = uuid::Uuid::parse_str(&ga).unwrap();
    assert_eq!(u.get_version_num(), 7);
    assert_eq!((origin.as_str(), writer.as_str(), version), ("", "", 2), "an update is version 2");
    assert_ne!(ga, row(&dir.db(), b).0);
    assert!(db.fleet_identity().unwrap().is_none());
    // A row inserted outside robotmem gets a global id from the trigger.
    {
        let c = rusqlite::Connection::open(dir.db()).unwrap();
        c.execute(
            "INSERT INTO memories (collection, type, content, human_summary, category, created_at, updated_at)
             VALUES ('default', 'fact', 'made by hand', 'made by hand', 'observation', '2026-01-02T03:04:05.678Z', '2026-01-02T03:04:05.678Z')",
            [],
        )
        .unwrap();
        let g: String =
            c.query_row("SELECT global_id FROM memories WHERE content = 'made by hand'", [], |r| r.get(0)).unwrap();
        let u = uuid::Uuid::parse_str(&g).unwrap();
        assert_eq!(u.get_version_num(), 7);
        assert_eq!(u.get_timestamp().unwrap().to_unix().0, 1_767_323_045, "its creation time");
    }
    assert_eq!(db.fleet_outbox(10).unwrap_err().status, Status::InvalidState, "not claimed");
}

#[test]
fn every_meaningful_change_is_logged_in_its_transaction_and_nothing_else() {
    let dir = scratch::Scratch::new("fleet-log");
    let db = open(&dir.db());
    let before = learn(&db, "conveyor belt 2 stops when the light curtain is crossed");
    let id = db.fleet_claim("robot-a").unwrap();
    assert_eq!((id.robot_id.as_str(), id.pushed, id.pending), ("robot-a", 0, 1), "the memory already there is queued");
    assert_eq!(db.fleet_claim("robot-a").unwrap().instance, id.instance, "claiming again is the same identity");
    let e = db.fleet_claim("robot-b").unwrap_err();
    assert_eq!(e.status, Status::InvalidState);
    assert!(e.message.contains("robot-a"), "{}", e.message);
    assert_eq!(db.fleet_claim("bad id").unwrap_err().status, Status::InvalidArgument);

    let s = db.start_session(None, None).unwrap().session_id;
    let a = db
        .learn(&LearnRequest {
            insight: "gripper force above 40 N crushes paper cups",
            session_id: Some(&s),
            ..Default::default()
        })
        .unwrap()
        .memory_id;
    let n = outbox(&dir.db()).len();
    // Recall bookkeeping, decay and a duplicate learn are not changes of the fleet.
    for _ in 0..3 {
        db.recall(&RecallRequest { query: "gripper force cups", ..Default::default() }).unwrap();
    }
    db.flush().unwrap();
    let dup = db
        .learn(&LearnRequest { insight: "gripper force above 40 N crushes paper cups", ..Default::default() })
        .unwrap();
    assert!(dup.duplicate.is_some());
    {
        let c = rusqlite::Connection::open(dir.db()).unwrap();
        c.execute("UPDATE memories SET confidence = confidence * 0.9, access_count = access_count + 1", []).unwrap();
    }
    assert_eq!(outbox(&dir.db()).len(), n, "touches, decay, duplicates log nothing");
    db.update(a, "gripper force above 35 N crushes paper cups", None).unwrap();
    db.forget(before, "belt replaced").unwrap();
    db.end_session(&s, Some(0.8)).unwrap();
    let log = outbox(&dir.db());
    let tail: Vec<_> = log.iter().skip(n).map(|(_, m, s)| (*m, s.clone())).collect();
    assert_eq!(tail, vec![(Some(a), None), (Some(before), None), (None, Some(s.clone()))]);
    assert_eq!(row(&dir.db(), a).3, 2);
    assert_eq!(row(&dir.db(), before).3, 2);

    // The outbox as pushed: one change per memory (its current state), then the session.
    let ob = db.fleet_outbox(100).unwrap();
    assert_eq!(ob.upto, log.last().unwrap().0);
    let by_id: Vec<(&str, i64, bool)> = ob.changes.iter().map(|c| (c.content.as_str(), c.version, c.deleted)).collect();
    assert_eq!(
        by_id,
        vec![
            ("gripper force above 35 N crushes paper cups", 2, false),
            ("conveyor belt 2 stops when the light curtain is crossed", 2, true)
        ]
    );
    assert!(ob.changes.iter().all(|c| c.origin == "robot-a" && c.writer == "robot-a"));
    assert_eq!(ob.sessions.len(), 1);
    assert_eq!((ob.sessions[0].session_id.as_str(), ob.sessions[0].outcome), (s.as_str(), Some(0.8)));
    // A batch smaller than the log covers a prefix.
    let first = db.fleet_outbox(1).unwrap();
    assert_eq!((first.upto, first.changes.len()), (log[0].0, 1));
    db.fleet_ack(first.upto).unwrap();
    assert_eq!(outbox(&dir.db()).len(), log.len() - 1);
    db.fleet_ack(0).unwrap(); // never backwards
    db.fleet_ack(ob.upto).unwrap();
    assert!(outbox(&dir.db()).is_empty());
    let id = db.fleet_identity().unwrap().unwrap();
    assert_eq!((id.pushed, id.last_seq, id.pending), (ob.upto, ob.upto, 0));
}

#[test]
fn consolidation_at_session_end_logs_the_superseded() {
    let dir = scratch::Scratch::new("fleet-log");
    let db = open(&dir.db());
    db.fleet_claim("r1").unwrap();
    let s = db.start_session(None, None).unwrap().session_id;
    for t in [
        "grasp of the blue box slipped at 8N near the left edge of the conveyor",
        "grasp of the blue box slipped at 8N",
        "battery swap took four minutes at the dock",
    ] {
        db.learn(&LearnRequest { insight: t, session_id: Some(&s), ..Default::default() }).unwrap();
    }
    db.fleet_ack(db.fleet_outbox(100).unwrap().upto).unwrap();
    let ended = db.end_session(&s, None).unwrap();
    assert!(ended.consolidated.superseded_count >= 1, "{:?}", ended.consolidated);
    let ob = db.fleet_outbox(100).unwrap();
    let superseded: Vec<&Change> = ob.changes.iter().filter(|c| c.status == "superseded").collect();
    assert_eq!(superseded.len() as i64, ended.consolidated.superseded_count);
    assert!(superseded.iter().all(|c| c.superseded_by.is_some() && c.version == 2));
    assert_eq!(ob.sessions.len(), 1);
}

#[test]
fn repairs_renumber_after_a_restore_and_requeue_when_the_hub_lost_changes() {
    let dir = scratch::Scratch::new("fleet-log");
    let db = open(&dir.db());
    db.fleet_claim("r1").unwrap();
    let a = learn(&db, "pallet jack handles stick in cold storage");
    let b = learn(&db, "lidar returns ghosts near the glass wall of aisle 9");
    let ob = db.fleet_outbox(100).unwrap();
    db.fleet_ack(ob.upto).unwrap();
    db.update(a, "pallet jack handles stick below minus 10 C", None).unwrap();
    let gid_a = row(&dir.db(), a).0;

    // A lost acknowledgement: the hub has up to the last number; nothing to renumber.
    let last = db.fleet_identity().unwrap().unwrap().last_seq;
    let r = db.fleet_repair(last, &[]).unwrap();
    assert_eq!(r, Default::default());
    assert_eq!(db.fleet_identity().unwrap().unwrap().pending, 0);

    // Restored: the hub holds numbers up to 50 and version 5 of a (a lost timeline).
    db.update(a, "pallet jack handles stick below minus 12 C", None).unwrap();
    let r = db.fleet_repair(50, &[(gid_a.clone(), 5)]).unwrap();
    assert_eq!((r.renumbered, r.bumped), (1, 1));
    let id = db.fleet_identity().unwrap().unwrap();
    assert_eq!((id.pushed, id.pending), (50, 1));
    let ob = db.fleet_outbox(100).unwrap();
    assert!(ob.upto > 50, "new numbers above the hub's");
    assert_eq!(
        (ob.changes[0].global_id.as_str(), ob.changes[0].version),
        (gid_a.as_str(), 6),
        "the edit after the restore wins"
    );
    db.fleet_ack(ob.upto).unwrap();

    // The hub lost changes (restored from its own backup): every own memory again.
    let r = db.fleet_repair(3, &[]).unwrap();
    assert_eq!(r.requeued, 2);
    let ob = db.fleet_outbox(100).unwrap();
    assert_eq!(ob.changes.len(), 2, "both own memories, each once");
    assert!(ob.changes.iter().any(|c| c.global_id == row(&dir.db(), b).0));
    assert!(ob.upto > 50, "numbered above everything given out before");
}

#[test]
fn received_memories_are_not_echoed_and_own_ones_come_back_as_own() {
    let dir = scratch::Scratch::new("fleet-log");
    let db = open(&dir.db());
    db.fleet_claim("me").unwrap();
    db.fleet_ack(db.fleet_outbox(10).unwrap().upto).unwrap();
    let g1 = "01890000-0000-7000-8000-000000000001";
    let g2 = "01890000-0000-7000-8000-000000000002";
    let mut first = change(g1, "other", 4, 1, "forklift horn is required at blind corners");
    first.tags = vec!["fleet".into()];
    let a = db.fleet_apply(&[first]).unwrap();
    assert_eq!(a.inserted, 1);
    // Our own memory, lost by a restore, pulled back by the repair.
    let a = db.fleet_apply(&[change(g2, "me", 7, 3, "floor scrubber leaves the aisle wet for ten minutes")]).unwrap();
    assert_eq!(a.inserted, 1);
    assert!(outbox(&dir.db()).is_empty(), "applied changes are not logged again");
    let c = rusqlite::Connection::open(dir.db()).unwrap();
    let own: (String, String, i64) = c
        .query_row("SELECT origin, writer, version FROM memories WHERE global_id = ?1", [g2], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!(own, ("".into(), "".into(), 3));
    let marks = db.fleet_marks().unwrap();
    assert_eq!(marks, vec![("me".into(), 7), ("other".into(), 4)]);
    // A local edit of a received memory is this robot's version of it.
    let id: i64 = c.query_row("SELECT id FROM memories WHERE global_id = ?1", [g1], |r| r.get(0)).unwrap();
    db.update(id, "forklift horn is required at every blind corner", None).unwrap();
    let ob = db.fleet_outbox(10).unwrap();
    assert_eq!(ob.changes.len(), 1);
    let ch = &ob.changes[0];
    assert_eq!((ch.global_id.as_str(), ch.origin.as_str(), ch.writer.as_str(), ch.version), (g1, "other", "me", 2));
    assert_eq!(ch.tags, vec!["fleet".to_string()]);
}

#[test]
fn a_winning_version_brings_a_superseded_memory_back_and_repairs_a_damaged_one() {
    let dir = scratch::Scratch::new("fleet-log");
    let db = open(&dir.db());
    db.fleet_claim("me").unwrap();
    let g = "01890000-0000-7000-8000-00000000000a";
    let text = "the loading bay shutter opens in 40 s";
    db.fleet_apply(&[change(g, "other", 1, 1, text)]).unwrap();
    let mut sup = change(g, "other", 2, 2, text);
    sup.status = "superseded".into();
    db.fleet_apply(&[sup]).unwrap();
    let found =
        |db: &Db| db.recall(&RecallRequest { query: "loading bay shutter", ..Default::default() }).unwrap().hits.len();
    assert_eq!(found(&db), 0, "superseded: out of search");
    let a = db.fleet_apply(&[change(g, "other", 3, 3, text)]).unwrap();
    assert_eq!(a.updated, 1);
    assert_eq!(found(&db), 1, "active again in the winning version");

    // A damaged text here (changed outside robotmem, checksum no longer matches) is
    // replaced by the next winning version instead of stopping the pull.
    {
        let c = rusqlite::Connection::open(dir.db()).unwrap();
        c.execute("UPDATE memories SET content = 'the loading bay shutter opens in 41 s', writer = 'nobody' WHERE global_id = ?1", [g])
            .unwrap();
    }
    let e = db.recall(&RecallRequest { query: "loading bay shutter", ..Default::default() }).unwrap_err();
    assert_eq!(e.status, Status::Corrupt, "the premise: the text here fails its checksum");
    let a = db.fleet_apply(&[change(g, "other", 4, 4, "the loading bay shutter opens in 45 s")]).unwrap();
    assert_eq!(a.updated, 1, "{a:?}");
    let hits = db.recall(&RecallRequest { query: "loading bay shutter", ..Default::default() }).unwrap().hits;
    assert_eq!(hits[0].memory.content, "the loading bay shutter opens in 45 s");
    // The hand-made edit was a local change (logged), but the fleet's later version
    // won: there is nothing of this robot's to push.
    assert_eq!(outbox(&dir.db()).len(), 1);
    assert!(db.fleet_outbox(10).unwrap().changes.is_empty());
}
