//! Temporary directories for tests: `rm-<name>-XXXXXX` under `$TMPDIR`, removed when
//! the guard drops — at the end of the test, and also when an assertion fails (the
//! panic unwinds through it). Keep the guard alive as long as the files are used.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub struct Scratch(tempfile::TempDir);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        Scratch(tempfile::Builder::new().prefix(&format!("rm-{name}-")).tempdir().expect("temporary directory"))
    }

    /// The database file most tests use: `<dir>/m.db`.
    pub fn db(&self) -> PathBuf {
        self.0.path().join("m.db")
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

/// The database at `p` opened without the model, at `Durability::Normal` (the
/// tests of the stored indexes).
pub fn open_lexical(p: &Path) -> robotmem::Db {
    let mut o = robotmem::OpenOptions::path(p);
    o.embeddings = false;
    o.durability = robotmem::Durability::Normal;
    robotmem::Db::open(o).unwrap()
}

/// SQL that takes a schema-9 file back to schema 8 (what robotmem 0.6 wrote):
/// no history, and no recall index (no file of 0.8 or older had it; it reads
/// columns that older schemas lack). Tests of older files run it first.
pub const UNDO_SCHEMA_9: &str = "DROP INDEX idx_mem_recall;
    DROP TRIGGER memory_versioned; DROP TRIGGER memory_versions_removed;
    DROP TABLE memory_versions; DROP TABLE memory_change_cause; ALTER TABLE memories DROP COLUMN stored_at;";

/// Everything `db` exports (docs/EXPORT-FORMAT.md), as one text of JSON lines.
pub fn exported(db: &robotmem::Db) -> String {
    let mut file = String::new();
    db.export_each(&robotmem::transfer::ExportOptions::default(), |l| {
        file.push_str(l.json);
        file.push('\n');
        Ok(())
    })
    .unwrap();
    file
}
