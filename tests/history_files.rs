//! The file of a view as of a past time (`Db::as_of`): a database of its own in
//! a private directory (mode 0700) under the temporary directory, removed when
//! the view is dropped; plain for a plain database, encrypted with a key of its
//! own for an encrypted one (in a build with encryption). One test in this
//! binary: it counts the views' directories.

#[path = "common/scratch.rs"]
mod scratch;

use std::collections::BTreeSet;
use std::path::PathBuf;

use robotmem::*;

fn view_dirs() -> BTreeSet<PathBuf> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("robotmem-view-")))
        .collect()
}

/// Opens `db` as of now, checks its directory and file header, drops it.
fn check_view(db: &Db, encrypted: bool) {
    let before = view_dirs();
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let view = db.as_of(&now).unwrap();
    let new: Vec<PathBuf> = view_dirs().difference(&before).cloned().collect();
    assert_eq!(new.len(), 1, "one directory for the view: {new:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&new[0]).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "private to this user");
    }
    let head = std::fs::read(new[0].join("view.db")).unwrap();
    assert_eq!(head.starts_with(b"SQLite format 3\0"), !encrypted, "plaintext on disk only for a plain database");
    assert_eq!(view.recall(&RecallRequest { query: "dock", ..Default::default() }).unwrap().hits.len(), 1);
    drop(view);
    assert!(!new[0].exists(), "removed with the view");
}

#[test]
fn a_view_lives_in_a_private_directory_removed_with_it() {
    let d = scratch::Scratch::new("history-files");
    let db = scratch::open_lexical(&d.db());
    db.learn(&LearnRequest { insight: "the charging dock is at the north wall", ..Default::default() }).unwrap();
    check_view(&db, false);
    if ENCRYPTION {
        let mut o = OpenOptions::path(d.join("secret.db"));
        (o.embeddings, o.key) = (false, Some(Key::from_bytes(&[3; 32]).unwrap()));
        let db = Db::open(o).unwrap();
        db.learn(&LearnRequest { insight: "the charging dock is at the north wall", ..Default::default() }).unwrap();
        check_view(&db, true);
    }
}
