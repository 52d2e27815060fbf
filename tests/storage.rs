//! Opening files: precise failures that never modify the file, permissions,
//! several handles on one file, one handle shared by threads.

#[path = "common/scratch.rs"]
mod scratch;
use std::path::Path;
use std::sync::Arc;

use robotmem::*;

fn temp_dir(name: &str) -> scratch::Scratch {
    scratch::Scratch::new(&format!("storage-{name}"))
}

fn open_err(path: &Path) -> Error {
    match Db::open(OpenOptions::path(path)) {
        Ok(_) => panic!("{} should not open", path.display()),
        Err(e) => e,
    }
}

#[test]
fn non_sqlite_file_is_refused_and_untouched() {
    let d = temp_dir("garbage");
    let p = d.join("notes.txt");
    let content = b"these are not the bytes of a database\n".repeat(200);
    std::fs::write(&p, &content).unwrap();
    let e = open_err(&p);
    assert_eq!(e.status, Status::Corrupt, "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), content);
    assert!(!d.join("notes.txt-wal").exists());
}

#[test]
fn foreign_sqlite_database_is_refused_and_untouched() {
    let d = temp_dir("foreign");
    let p = d.join("other.db");
    {
        let c = rusqlite::Connection::open(&p).unwrap();
        c.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY); INSERT INTO orders VALUES (1);").unwrap();
    }
    let before = std::fs::read(&p).unwrap();
    let e = open_err(&p);
    assert_eq!(e.status, Status::Corrupt);
    assert!(e.message.contains("another application"), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

#[test]
fn newer_schema_is_refused_and_untouched() {
    let d = temp_dir("newer");
    let p = d.join("m.db");
    drop(Db::open(OpenOptions::path(&p)).unwrap());
    {
        let c = rusqlite::Connection::open(&p).unwrap();
        c.execute_batch("PRAGMA user_version = 99;").unwrap();
    }
    let before = std::fs::read(&p).unwrap();
    let e = open_err(&p);
    assert_eq!(e.status, Status::SchemaTooNew, "{e}");
    assert!(e.message.contains("99"));
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

#[test]
fn missing_directory_is_an_io_error() {
    let e = open_err(Path::new("/nonexistent-dir-robotmem/x.db"));
    assert_eq!(e.status, Status::Io, "{e}");
    // A directory where the file should be cannot be opened: RM_IO, as the header says.
    let e = open_err(&std::env::temp_dir());
    assert_eq!(e.status, Status::Io, "{e}");
}

#[test]
fn default_location_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let home = temp_dir("home");
    // Only this test uses the default location, so changing HOME is safe here.
    std::env::set_var("HOME", home.as_os_str());
    let db = Db::open(OpenOptions::default()).unwrap();
    db.learn(&LearnRequest { insight: "default location works", ..Default::default() }).unwrap();
    let dir = home.join(".robotmem");
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    let file = dir.join("memory.db");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    drop(db);
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
}

#[test]
fn schema_has_the_spec_tables_and_version() {
    let d = temp_dir("schema");
    let p = d.join("m.db");
    drop(Db::open(OpenOptions::path(&p)).unwrap());
    let c = rusqlite::Connection::open(&p).unwrap();
    let v: i32 = c.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(v, robotmem::internals::store::schema::SCHEMA_VERSION);
    let mode: String = c.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    for t in ["memories", "sessions", "session_outcomes", "memory_tags", "tag_meta"] {
        let n: i64 = c.query_row("SELECT count(*) FROM sqlite_schema WHERE name = ?1", [t], |r| r.get(0)).unwrap();
        assert_eq!(n, 1, "table {t}");
    }
    // Schema 3: no FTS5 table (nothing read it) and no index a learn need not touch.
    let gone: i64 = c
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name IN ('memories_fts', 'idx_mem_status', 'idx_mem_type',
               'idx_mem_collection', 'idx_memory_tags_tag')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(gone, 0);
    let tags: i64 = c.query_row("SELECT count(*) FROM tag_meta WHERE parent IS NULL", [], |r| r.get(0)).unwrap();
    assert_eq!(tags, 9, "the 9 root dimensions of the tag tree are synced into tag_meta");
    let plan: String = c
        .query_row(
            "EXPLAIN QUERY PLAN SELECT id FROM memories WHERE content_hash = 'x' AND collection = 'c' AND status = 'active'",
            [],
            |r| r.get(3),
        )
        .unwrap();
    assert!(plan.contains("idx_mem_hash"), "exact-duplicate check must use the hash index: {plan}");
}

#[test]
fn two_handles_on_one_file_see_each_other() {
    let d = temp_dir("two");
    let p = d.join("m.db");
    let a = Db::open(OpenOptions::path(&p)).unwrap();
    let b = Db::open(OpenOptions::path(&p)).unwrap();
    let x = a.learn(&LearnRequest { insight: "handle a learned the dock is at bay 3", ..Default::default() }).unwrap();
    let r = b.recall(&RecallRequest { query: "dock bay", ..Default::default() }).unwrap();
    assert_eq!(r.hits[0].memory.id, x.memory_id);
    let y = b.learn(&LearnRequest { insight: "handle a learned the dock is at bay 3", ..Default::default() }).unwrap();
    assert_eq!(y.duplicate.map(|d| d.existing_id), Some(x.memory_id));
}

#[test]
fn one_handle_shared_by_threads() {
    let d = temp_dir("threads");
    let db = Arc::new(Db::open(OpenOptions::path(d.join("m.db"))).unwrap());
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                for i in 0..40 {
                    let text = format!("thread {t} stored waypoint {i} at x={}.5", t * 100 + i);
                    let o = db.learn(&LearnRequest { insight: &text, ..Default::default() }).unwrap();
                    assert!(o.duplicate.is_none(), "{text}");
                    ids.push(o.memory_id);
                    db.recall(&RecallRequest { query: "waypoint stored", ..Default::default() }).unwrap();
                }
                ids
            })
        })
        .collect();
    let ids: Vec<i64> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    assert_eq!(ids.len(), 320);
    for id in ids {
        db.get(id).unwrap();
    }
    let r = db.recall(&RecallRequest { query: "*", n: 100, ..Default::default() }).unwrap();
    assert_eq!(r.mode, SearchMode::Scan);
    assert_eq!(r.hits.len(), 100);
}

#[test]
fn concurrent_first_opens_of_a_new_file_all_succeed() {
    for round in 0..5 {
        let d = temp_dir(&format!("race{round}"));
        let p = d.join("m.db");
        let barrier = Arc::new(std::sync::Barrier::new(6));
        let handles: Vec<_> = (0..6)
            .map(|_| {
                let (p, b) = (p.clone(), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    b.wait();
                    Db::open(OpenOptions::path(&p)).map(drop)
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap().unwrap();
        }
    }
}

#[test]
fn open_options_are_validated() {
    let e = Db::open(OpenOptions::path(" \t\n ")).err().unwrap();
    assert_eq!(e.status, Status::InvalidArgument);
    for bad in ["c".repeat(129), "line\nbreak".to_string(), "  ".to_string()] {
        let o = OpenOptions { default_collection: bad.clone(), ..OpenOptions::in_memory() };
        let e = Db::open(o).err().unwrap_or_else(|| panic!("{bad:?} accepted"));
        assert!(e.message.contains("default_collection"), "{e}");
    }
}

#[test]
fn search_index_follows_writes_of_other_handles() {
    let d = temp_dir("index-sync");
    let p = d.join("m.db");
    let a = Db::open(OpenOptions::path(&p)).unwrap();
    let b = Db::open(OpenOptions { preload: true, ..OpenOptions::path(&p) }).unwrap();
    let recall_b = |q: &str| -> Vec<i64> {
        b.recall(&RecallRequest { query: q, ..Default::default() }).unwrap().hits.iter().map(|h| h.memory.id).collect()
    };
    assert!(recall_b("forklift").is_empty()); // b's index is built, and empty
    let x =
        a.learn(&LearnRequest { insight: "forklift blocks aisle 4 at night", ..Default::default() }).unwrap().memory_id;
    assert_eq!(recall_b("forklift"), vec![x], "b sees a's insert");
    a.update(x, "pallet jack blocks aisle 4 at night", None).unwrap();
    assert!(recall_b("forklift").is_empty(), "b sees a's update (old words gone)");
    assert_eq!(recall_b("pallet"), vec![x]);
    a.forget(x, "moved").unwrap();
    assert!(recall_b("pallet").is_empty(), "b sees a's forget");
}

/// Writes 1,500 memories to a new file and closes it (the last close checkpoints
/// the WAL into the file).
fn fill(p: &Path, word: &str) {
    let db = Db::open(OpenOptions::path(p)).unwrap();
    for i in 0..1500 {
        let text = format!("{word} probe {i} at {i}.5 m with payload {}", "x".repeat(i % 50));
        db.learn(&LearnRequest { insight: &text, ..Default::default() }).unwrap();
    }
}

#[test]
fn truncated_file_is_refused_and_untouched() {
    let d = temp_dir("truncated");
    let p = d.join("m.db");
    fill(&p, "truncation");
    assert!(!d.join("m.db-wal").exists() || std::fs::metadata(d.join("m.db-wal")).unwrap().len() == 0);
    let full = std::fs::read(&p).unwrap();
    std::fs::write(&p, &full[..full.len() * 6 / 10]).unwrap();
    let before = std::fs::read(&p).unwrap();
    let e = open_err(&p);
    assert_eq!(e.status, Status::Corrupt, "{e}");
    assert!(e.message.contains("truncated"), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

#[test]
fn damaged_pages_are_refused_by_verify_and_reported_by_reads() {
    let d = temp_dir("bitflip");
    let p = d.join("m.db");
    fill(&p, "bitflip");
    let mut bytes = std::fs::read(&p).unwrap();
    let page = 4096;
    // Scribble over the b-tree header of every page in the middle third.
    for pg in (bytes.len() / page / 3)..(bytes.len() / page * 2 / 3) {
        bytes[pg * page..pg * page + 12].copy_from_slice(&[0xA5; 12]);
    }
    std::fs::write(&p, &bytes).unwrap();
    let e = Db::open(OpenOptions { verify: true, ..OpenOptions::path(&p) }).err().expect("verify refuses it");
    assert_eq!(e.status, Status::Corrupt, "{e}");
    assert!(e.message.contains("damaged"), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), bytes, "the file was not modified");
    // Without verify the damage surfaces as RM_CORRUPT from a call that reads it.
    let db = Db::open(OpenOptions::path(&p)).unwrap();
    let mut seen = None;
    for id in 1..=1500 {
        if let Err(e) = db.get(id) {
            seen = Some(e);
            break;
        }
    }
    let scan = db.recall(&RecallRequest { query: "bitflip probe", n: 100, ..Default::default() });
    let err = seen.or(scan.err()).expect("reading damaged pages fails");
    assert_eq!(err.status, Status::Corrupt, "{err}");
}
