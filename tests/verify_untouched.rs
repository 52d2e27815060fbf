//! Issue 26, F7: `verify` refuses a damaged database without changing it. Each
//! case copies a live database together with its `-wal` (writes pending, not yet
//! checkpointed) and `-shm`, damages the copy, opens it with `verify = true` and
//! requires `RM_CORRUPT` and every file of the directory byte for byte as before
//! (same names, same SHA-256). Before: the refusal left the connection to
//! checkpoint the log at close, so the main file grew and the `-wal` was gone.

use std::collections::BTreeMap;
use std::path::Path;

use robotmem::*;
use sha2::{Digest, Sha256};

const PAGE: usize = 4096;

fn temp() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("rm-verify-").tempdir().unwrap()
}

/// Every file of `dir` with the SHA-256 of its bytes.
fn hashes(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let bytes = std::fs::read(e.path()).unwrap();
            let hex: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
            (e.file_name().to_string_lossy().into_owned(), format!("{} bytes {hex}", bytes.len()))
        })
        .collect()
}

fn open(path: &Path, verify: bool) -> Result<Db> {
    let mut o = OpenOptions::path(path);
    o.embeddings = false;
    o.verify = verify;
    Db::open(o)
}

/// A database of `n` memories plus 50 learned after the last checkpoint, copied
/// (main file, `-wal`, `-shm`) into `dir` as `m.db*` while the writer still holds
/// it open, so the copy's log has frames the main file lacks.
fn live_copy(n: usize, dir: &Path) {
    let src = temp();
    let p = src.path().join("m.db");
    let db = open(&p, false).unwrap();
    let learn = |i: usize| {
        let text = format!("verify probe {i}: gripper force {} N on cup {}", i % 17, i * 7);
        db.learn(&LearnRequest { insight: &text, ..Default::default() }).unwrap();
    };
    (0..n).for_each(learn);
    db.flush().unwrap();
    rusqlite::Connection::open(&p).unwrap().execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").unwrap();
    (n..n + 50).for_each(learn);
    for suffix in ["", "-wal", "-shm"] {
        let from = src.path().join(format!("m.db{suffix}"));
        std::fs::copy(&from, dir.join(format!("m.db{suffix}"))).unwrap();
    }
    drop(db);
}

fn assert_refused_untouched(dir: &Path, what: &str) {
    let before = hashes(dir);
    assert!(before.contains_key("m.db-wal"), "{what}: premise, a log is pending: {before:?}");
    let e = open(&dir.join("m.db"), true).err().unwrap_or_else(|| panic!("{what}: verify refuses it"));
    assert_eq!(e.status, Status::Corrupt, "{what}: {e}");
    assert_eq!(hashes(dir), before, "{what}: the files were changed by a refused open ({e})");
}

#[test]
fn a_healthy_copy_with_a_pending_log_passes_verify() {
    let d = temp();
    live_copy(600, d.path());
    let db = open(&d.path().join("m.db"), true).expect("a healthy copy opens with verify");
    let r = db.recall(&RecallRequest { query: "*", n: 100, ..Default::default() }).unwrap();
    assert_eq!(r.hits.len(), 100);
    assert!(db.get(650).is_ok(), "the pending writes are there");
}

#[test]
fn a_truncated_file_with_a_pending_log_is_refused_and_untouched() {
    let d = temp();
    live_copy(1500, d.path());
    let p = d.path().join("m.db");
    let len = std::fs::metadata(&p).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(len / 2 / PAGE as u64 * PAGE as u64).unwrap();
    assert_refused_untouched(d.path(), "main file cut to half");
}

#[test]
fn flipped_pages_with_a_pending_log_are_refused_and_untouched() {
    let d = temp();
    live_copy(1500, d.path());
    let p = d.path().join("m.db");
    let mut bytes = std::fs::read(&p).unwrap();
    let pages = bytes.len() / PAGE;
    for pg in pages / 3..pages * 2 / 3 {
        bytes[pg * PAGE..pg * PAGE + 12].copy_from_slice(&[0xA5; 12]);
    }
    std::fs::write(&p, &bytes).unwrap();
    assert_refused_untouched(d.path(), "b-tree headers overwritten");
}

#[test]
fn a_foreign_file_with_a_pending_log_is_refused_and_untouched() {
    // Not SQLite at all, next to a real log.
    let d = temp();
    live_copy(300, d.path());
    std::fs::write(d.path().join("m.db"), vec![0x5A; 64 * PAGE]).unwrap();
    assert_refused_untouched(d.path(), "not an SQLite file");
    // Another application's SQLite database in WAL mode, its writes pending.
    let d = temp();
    let src = temp();
    let p = src.path().join("m.db");
    let c = rusqlite::Connection::open(&p).unwrap();
    c.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE orders (id INTEGER PRIMARY KEY, v TEXT);").unwrap();
    c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").unwrap();
    for i in 0..200 {
        c.execute("INSERT INTO orders (v) VALUES (?1)", [format!("order {i}")]).unwrap();
    }
    for suffix in ["", "-wal", "-shm"] {
        std::fs::copy(src.path().join(format!("m.db{suffix}")), d.path().join(format!("m.db{suffix}"))).unwrap();
    }
    drop(c);
    assert_refused_untouched(d.path(), "another application's database");
}

#[test]
fn a_damaged_copy_without_its_shm_is_refused_and_no_file_appears() {
    let d = temp();
    live_copy(1500, d.path());
    std::fs::remove_file(d.path().join("m.db-shm")).unwrap();
    let p = d.path().join("m.db");
    let len = std::fs::metadata(&p).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(len / 2 / PAGE as u64 * PAGE as u64).unwrap();
    assert_refused_untouched(d.path(), "cut to half, no -shm");
}

#[test]
fn without_verify_a_refused_file_is_not_checkpointed_into() {
    let d = temp();
    live_copy(300, d.path());
    std::fs::write(d.path().join("m.db"), vec![0x5A; 64 * PAGE]).unwrap();
    let mut before = hashes(d.path());
    let e = open(&d.path().join("m.db"), false).err().expect("refused");
    assert_eq!(e.status, Status::Corrupt, "{e}");
    let mut after = hashes(d.path());
    // An ordinary open may rebuild the -shm index; the main file and the log stay.
    before.remove("m.db-shm");
    after.remove("m.db-shm");
    assert_eq!(after, before, "main file and -wal unchanged ({e})");
}
