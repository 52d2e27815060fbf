//! `OpenOptions::read_only`: the file is read, never written — not by recall's
//! access counts, not by the index copies a close stores, not by a schema
//! upgrade — and every write is refused with `Status::ReadOnly`.

#[path = "common/scratch.rs"]
mod scratch;
use std::collections::BTreeMap;
use std::path::Path;

use robotmem::*;

fn read_only(p: &Path) -> OpenOptions {
    let mut o = OpenOptions::path(p);
    o.embeddings = false;
    o.read_only = true;
    o
}

fn open_err(o: OpenOptions) -> Error {
    match Db::open(o) {
        Ok(_) => panic!("should not open"),
        Err(e) => e,
    }
}

/// Every file in `dir` with its bytes and modification time.
fn files(dir: &Path) -> BTreeMap<String, (Vec<u8>, std::time::SystemTime)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            (e.file_name().to_string_lossy().into_owned(), (std::fs::read(e.path()).unwrap(), m.modified().unwrap()))
        })
        .collect()
}

/// A closed database of 300 memories (enough changes for a close to store index
/// copies) with no snapshot yet.
fn filled(d: &scratch::Scratch) -> std::path::PathBuf {
    let p = d.db();
    let db = scratch::open_lexical(&p);
    for i in 0..300 {
        let text = format!("gripper {i} held the cup at {} newtons", i % 17);
        let ctx = format!(r#"{{"task": {{"success": {}}}, "spatial": {{"pos": [{i}, 0.5, 0.2]}}}}"#, i % 2 == 0);
        db.learn(&LearnRequest { insight: &text, context: Some(&ctx), ..Default::default() }).unwrap();
    }
    db.close().unwrap();
    // Close the copies it stored out of the picture: the read-only handle below would
    // have to build every index and is then tempted to store them.
    let c = rusqlite::Connection::open(&p).unwrap();
    c.execute_batch("DELETE FROM index_snapshots;").unwrap();
    drop(c);
    p
}

#[test]
fn reads_work_and_nothing_is_written() {
    let d = scratch::Scratch::new("ro-reads");
    let p = filled(&d);
    let before = files(&d);
    std::thread::sleep(std::time::Duration::from_millis(20)); // a write would change the mtime
    let db = Db::open(read_only(&p)).unwrap();
    let filter = r#"{"task.success": true}"#;
    let spatial = r#"{"field": "spatial.pos", "target": [3, 0.5, 0.2]}"#;
    for _ in 0..3 {
        let r = db.recall(&RecallRequest { query: "gripper cup newtons", n: 5, ..Default::default() }).unwrap();
        assert_eq!(r.hits.len(), 5);
        let r = db
            .recall(&RecallRequest {
                query: "gripper",
                n: 3,
                context_filter: Some(filter),
                spatial_sort: Some(spatial),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(r.hits[0].memory.content, "gripper 4 held the cup at 4 newtons", "{r:?}");
    }
    let m = db.get(1).unwrap();
    assert_eq!(m.access_count, 0, "a read-only recall records no access");
    assert!(m.last_accessed.is_none());
    assert_eq!(db.stats().unwrap().memories, 300);
    assert_eq!(db.list(&ListRequest::default()).unwrap().total, 300);
    db.close().unwrap();
    let after = files(&d);
    // SQLite makes its (empty) log and shared-memory index beside a WAL file that
    // has none, where the directory allows; nothing else may appear.
    let new: Vec<_> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    assert!(new.iter().all(|k| k.ends_with("-shm") || k.ends_with("-wal")), "new files: {new:?}");
    if let Some((wal, _)) = after.get("m.db-wal") {
        assert!(wal.is_empty(), "the read-only handle wrote {} bytes of log", wal.len());
    }
    for (name, (bytes, mtime)) in &before {
        assert!(after[name].0 == *bytes, "{name} changed");
        assert_eq!(after[name].1, *mtime, "{name} was written");
    }
    let c = rusqlite::Connection::open(&p).unwrap();
    let n: i64 = c.query_row("SELECT count(*) FROM index_snapshots", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 0, "a read-only close stores no index copies");
    let stats: i64 =
        c.query_row("SELECT count(*) FROM robotmem_meta WHERE key LIKE '%recall%'", [], |r| r.get(0)).unwrap();
    assert_eq!(stats, 0, "no recall statistics written");
}

#[test]
fn every_write_is_refused_with_read_only() {
    let d = scratch::Scratch::new("ro-writes");
    let p = filled(&d);
    let before = std::fs::read(&p).unwrap();
    let db = Db::open(read_only(&p)).unwrap();
    let refused = |r: Result<()>, what: &str| {
        let e = r.expect_err(what);
        assert_eq!(e.status, Status::ReadOnly, "{what}: {e}");
        assert!(e.message.contains("read-only"), "{what}: {e}");
    };
    refused(db.learn(&LearnRequest { insight: "a new fact about the arm", ..Default::default() }).map(drop), "learn");
    refused(db.forget(1, "stale").map(drop), "forget");
    refused(db.update(1, "gripper held the cup firmly", None).map(drop), "update");
    refused(db.start_session(None, None).map(drop), "start_session");
    refused(db.flush(), "flush");
    let data = [0u8; 8];
    let perception = PerceptionRequest {
        description: "force trace of the grasp",
        perception_type: PerceptionType::Tactile,
        data: Some(&data),
        ..Default::default()
    };
    refused(db.save_perception(&perception).map(drop), "save_perception");
    // The handle stays usable for reads after a refused write.
    assert_eq!(db.get(1).unwrap().status, MemoryStatus::Active);
    db.close().unwrap();
    assert!(std::fs::read(&p).unwrap() == before, "the file changed");
}

#[test]
fn a_read_only_handle_sees_another_handles_writes() {
    let d = scratch::Scratch::new("ro-live");
    let p = filled(&d);
    let reader = Db::open(read_only(&p)).unwrap();
    let writer = scratch::open_lexical(&p);
    let q = RecallRequest { query: "calibration drift", n: 3, ..Default::default() };
    assert!(reader.recall(&q).unwrap().hits.iter().all(|h| !h.memory.content.contains("drift")));
    writer
        .learn(&LearnRequest { insight: "calibration drift after the arm hit the table", ..Default::default() })
        .unwrap();
    let hits = reader.recall(&q).unwrap().hits;
    assert!(hits[0].memory.content.contains("calibration drift"), "{hits:?}");
    writer.close().unwrap();
    reader.close().unwrap();
}

#[test]
fn a_missing_file_is_not_created() {
    let d = scratch::Scratch::new("ro-missing");
    let p = d.join("typo.db");
    let e = open_err(read_only(&p));
    assert_eq!(e.status, Status::Io, "{e}");
    assert!(e.message.contains("no database file at") && e.message.contains("typo.db"), "{e}");
    assert_eq!(std::fs::read_dir(&*d).unwrap().count(), 0, "nothing created");
}

#[test]
fn empty_foreign_and_old_files_are_refused_unchanged() {
    let d = scratch::Scratch::new("ro-refused");
    // An empty file (touch): nothing to read, and a read-only open does not create.
    let empty = d.join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let e = open_err(read_only(&empty));
    assert_eq!(e.status, Status::Corrupt, "{e}");
    assert!(e.message.contains("empty"), "{e}");
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
    // Text: said to be no SQLite file, with the path, read-only or not.
    let text = d.join("notes.txt");
    std::fs::write(&text, b"x,y\n1,2\n").unwrap();
    for ro in [true, false] {
        let mut o = read_only(&text);
        o.read_only = ro;
        let e = open_err(o);
        assert_eq!(e.status, Status::Corrupt, "{e}");
        assert!(e.message.contains("notes.txt") && e.message.contains("not an SQLite file"), "{e}");
    }
    assert_eq!(std::fs::read(&text).unwrap(), b"x,y\n1,2\n");
    // An older schema: a read-only open cannot upgrade it and says how to.
    let old = filled(&d);
    let c = rusqlite::Connection::open(&old).unwrap();
    let version: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    c.execute_batch(&format!("PRAGMA user_version = {};", version - 1)).unwrap();
    drop(c);
    let before = std::fs::read(&old).unwrap();
    let e = open_err(read_only(&old));
    assert_eq!(e.status, Status::ReadOnly, "{e}");
    assert!(e.message.contains("older") && e.message.contains("once read-write"), "{e}");
    assert!(std::fs::read(&old).unwrap() == before);
    // In memory there is nothing to read.
    let mut o = OpenOptions::in_memory();
    o.read_only = true;
    assert_eq!(open_err(o).status, Status::InvalidArgument);
}
