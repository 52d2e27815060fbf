//! Issue 26, F4b: every text a read returns is verified or derived from verified
//! text. A flipped bit in a memory's `human_summary` (and in its context,
//! category, collection, session id or creation time) gives `RM_CORRUPT` naming
//! the memory, as a flipped `content` byte does; never `RM_OK` with altered
//! text. Before: `get` returned RM_OK with the flipped summary (and context).
//! Files of schema 5 are migrated and keep reading.

#[path = "common/scratch.rs"]
mod scratch;

use std::path::Path;

use robotmem::internals::text;
use robotmem::*;

fn temp() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("rm-texts-").tempdir().unwrap()
}

fn open(path: &Path) -> Db {
    let mut o = OpenOptions::path(path);
    o.embeddings = false;
    o.durability = Durability::Normal;
    Db::open(o).unwrap()
}

/// Over 80 characters, so the stored summary ("…" cut) differs from the content.
const LONG: &str =
    "calibration of the wrist camera drifted after the long shift on the packing line near dock seventeen";
const CTX: &str = r#"{"robot": {"id": "arm-7", "site": "dock-seventeen-north"}}"#;

/// A file with an unrelated memory and the marked one (closed, so the file holds
/// everything); returns the marked memory's id.
fn make(path: &Path) -> i64 {
    let db = open(path);
    db.learn(&LearnRequest { insight: "an unrelated memory about the conveyor belt", ..Default::default() }).unwrap();
    let s = db.start_session(None, None).unwrap();
    let req = LearnRequest { insight: LONG, context: Some(CTX), session_id: Some(&s.session_id), ..Default::default() };
    db.learn(&req).unwrap().memory_id
}

/// Flips `flip` into the byte `offset` bytes into the first occurrence of `needle` in the file.
fn flip_in_file(path: &Path, needle: &str, offset: usize, flip: u8) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = bytes.windows(needle.len()).position(|w| w == needle.as_bytes()).expect("text in the file") + offset;
    bytes[at] ^= flip;
    std::fs::write(path, bytes).unwrap();
}

fn assert_corrupt(db: &Db, id: i64, what: &str) {
    let e = db.get(id).err().unwrap_or_else(|| panic!("{what}: a damaged memory must not be returned"));
    assert_eq!(e.status, Status::Corrupt, "{what}: {e}");
    assert!(e.message.contains(&format!("#{id}")), "{what}: the message names the memory: {e}");
    let r = db.recall(&RecallRequest { query: "wrist camera calibration", ..Default::default() });
    assert_eq!(r.err().map(|e| e.status), Some(Status::Corrupt), "{what}: recall");
    let others = db.recall(&RecallRequest { query: "conveyor belt", ..Default::default() }).unwrap();
    assert_eq!(others.hits.len(), 1, "{what}: undamaged memories stay readable");
    assert_eq!(db.forget(id, "damaged on disk").unwrap().content, "", "{what}: it can be forgotten");
}

#[test]
fn a_flipped_bit_in_the_summary_or_context_is_corrupt_never_returned() {
    let summary = text::summarize(LONG);
    assert!(summary.ends_with("...") && summary != LONG, "premise: the summary is stored apart from the content");
    for flip in [0x01u8, 0xFF] {
        for (what, needle) in [("summary", summary.as_str()), ("context", "dock-seventeen-north")] {
            let d = temp();
            let p = d.path().join("m.db");
            let id = make(&p);
            assert_eq!(open(&p).get(id).unwrap().human_summary, summary, "premise");
            flip_in_file(&p, needle, 10, flip);
            assert_corrupt(&open(&p), id, &format!("{what} flip {flip:#x}"));
        }
    }
}

#[test]
fn a_changed_category_collection_session_or_creation_time_is_corrupt() {
    for (what, sql) in [
        ("category", "UPDATE memories SET category = 'preference' WHERE id = ?1"),
        ("collection", "UPDATE memories SET collection = 'defaulu' WHERE id = ?1"),
        ("session", "UPDATE memories SET session_id = session_id || 'x' WHERE id = ?1"),
        ("created_at", "UPDATE memories SET created_at = replace(created_at, '20', '21') WHERE id = ?1"),
        ("summary", "UPDATE memories SET human_summary = 'grhpper slipped' WHERE id = ?1"),
    ] {
        let d = temp();
        let p = d.path().join("m.db");
        let id = make(&p);
        let changed = rusqlite::Connection::open(&p).unwrap().execute(sql, [id]).unwrap();
        assert_eq!(changed, 1, "{what}: premise");
        let db = open(&p);
        let e = db.get(id).err().unwrap_or_else(|| panic!("{what}: a damaged memory must not be returned"));
        assert_eq!(e.status, Status::Corrupt, "{what}: {e}");
    }
}

#[test]
fn an_old_file_is_migrated_and_its_texts_verified_from_then_on() {
    let d = temp();
    let p = d.path().join("m.db");
    let id = make(&p);
    // Back to schema 5: no checksum of the other texts.
    rusqlite::Connection::open(&p)
        .unwrap()
        .execute_batch(&format!("{} ALTER TABLE memories DROP COLUMN meta_hash; DROP TRIGGER sync_changed; DROP INDEX idx_mem_expiry; ALTER TABLE memories DROP COLUMN expires_at; DROP TABLE memory_removals; DROP INDEX idx_mem_inactive; PRAGMA user_version = 5;", scratch::UNDO_SCHEMA_9))
        .unwrap();
    let m = open(&p).get(id).unwrap();
    assert_eq!(m.content, LONG, "readable after the migration");
    assert!(m.context.contains("dock-seventeen-north"), "{}", m.context);
    let c = rusqlite::Connection::open(&p).unwrap();
    let missing: i64 = c.query_row("SELECT count(*) FROM memories WHERE meta_hash IS NULL", [], |r| r.get(0)).unwrap();
    assert_eq!(missing, 0, "every memory got its checksum");
    c.execute("UPDATE memories SET context = replace(context, 'north', 'south') WHERE id = ?1", [id]).unwrap();
    drop(c);
    assert_eq!(open(&p).get(id).err().map(|e| e.status), Some(Status::Corrupt));
}

#[test]
fn update_keeps_the_checksums_in_step() {
    let d = temp();
    let p = d.path().join("m.db");
    let id = make(&p);
    let text = "the wrist camera was recalibrated and holds its focus through the whole long packing shift now";
    open(&p).update(id, text, Some(r#"{"site": "b"}"#)).unwrap();
    let m = open(&p).get(id).expect("an updated memory reads back");
    assert_eq!((m.content.as_str(), m.human_summary.as_str()), (text, text::summarize(text).as_str()));
    assert!(m.context.contains("\"b\""), "{}", m.context);
}
