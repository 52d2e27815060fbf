//! The `robotmem` command on files that are not what the user meant: a mistyped
//! `--db` (read commands say it does not exist and create nothing), a file this
//! user may not write (read commands work read-only, writes say why), a file that
//! is not a database, `--read-only`, and a spatial sort that measures nothing
//! (a warning naming the field). BM25 only.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn dir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("robotmem-files-test").tempdir().unwrap()
}

fn command(db: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_robotmem"));
    c.arg("--db").arg(db).args(["--no-embeddings", "--durability", "normal"]).args(args);
    c.env_remove("ROBOTMEM_MODEL_DIR");
    c
}

fn run(db: &Path, args: &[&str]) -> Output {
    command(db, args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok_json(db: &Path, args: &[&str]) -> Value {
    let o = run(db, &[&["--json"], args].concat());
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn names(d: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// A small database at `<dir>/m.db`.
fn filled(d: &Path) -> PathBuf {
    let db = d.join("m.db");
    for (text, ctx) in [
        ("grip force 12 N held the red cup", r#"{"spatial": {"pos": [0.4, 0.1, 0.3]}, "task": {"success": true}}"#),
        ("grip force 4 N dropped the red cup", r#"{"spatial": {"pos": [0.5, 0.1, 0.3]}, "task": {"success": false}}"#),
    ] {
        let o = run(&db, &["learn", text, "--context", ctx]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    db
}

#[test]
fn read_commands_do_not_create_a_mistyped_file() {
    let d = dir();
    let typo = d.path().join("memroy.db");
    for args in [&["stats"][..], &["list"], &["get", "1"], &["doctor"], &["export"], &["status"], &["sessions"]] {
        let o = run(&typo, args);
        assert_eq!(o.status.code(), Some(15), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("no database at") && e.contains("memroy.db") && e.contains("check --db"), "{args:?}: {e}");
    }
    let o = run(&typo, &["--read-only", "recall", "cup"]);
    assert_eq!(o.status.code(), Some(15), "{}", stderr(&o));
    assert!(stderr(&o).contains("--read-only only reads"), "{}", stderr(&o));
    assert!(names(d.path()).is_empty(), "created: {:?}", names(d.path()));
    // A write command creates the file, as the library does.
    assert!(run(&typo, &["learn", "the dock is at the north wall"]).status.success());
    assert!(names(d.path()).contains(&"memroy.db".to_string()));
}

#[test]
fn read_only_recall_changes_nothing() {
    let d = dir();
    let db = filled(d.path());
    let before = std::fs::read(&db).unwrap();
    for _ in 0..3 {
        let r = ok_json(&db, &["--read-only", "recall", "red cup"]);
        assert_eq!(r["memories"].as_array().unwrap().len(), 2);
    }
    let o = run(&db, &["--read-only", "learn", "a new fact"]);
    assert_eq!(o.status.code(), Some(22), "{}", stderr(&o));
    assert!(std::fs::read(&db).unwrap() == before, "the file changed");
    let m = ok_json(&db, &["get", "1"]);
    assert_eq!(m["access_count"], 0, "{m}");
    // Read commands open read-only by themselves: get did not count as an access either.
    assert!(std::fs::read(&db).unwrap() == before, "the file changed");
    // A recall without --read-only records its access, as the library's does.
    ok_json(&db, &["recall", "red cup"]);
    assert_eq!(ok_json(&db, &["get", "1"])["access_count"], 1);
}

/// Runs `robotmem --db DB ARGS...` somehow.
type Runner = Box<dyn Fn(&Path, &[&str]) -> Output>;

/// Runs the command where this user may not write `d`: as an unprivileged user,
/// mode 0555 / 0444; as root (which permissions do not stop), on a read-only
/// bind mount of `d` in a mount namespace of its own. `None` when neither works.
fn unwritable_runner(d: &Path) -> Option<Runner> {
    use std::os::unix::fs::PermissionsExt;
    if unsafe { libc::geteuid() } != 0 {
        for e in std::fs::read_dir(d).unwrap() {
            std::fs::set_permissions(e.unwrap().path(), std::fs::Permissions::from_mode(0o444)).unwrap();
        }
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o555)).unwrap();
        return Some(Box::new(run));
    }
    let probe = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && ! touch "$0/probe" 2>/dev/null"#)
        .arg(d)
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return None;
    }
    let d = d.to_path_buf();
    Some(Box::new(move |db: &Path, args: &[&str]| {
        let inner = command(db, args);
        let mut c = Command::new("unshare");
        c.args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg(r#"mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@""#)
            .arg(&d)
            .arg(inner.get_program())
            .args(inner.get_args());
        c.env_remove("ROBOTMEM_MODEL_DIR");
        c.output().unwrap()
    }))
}

#[test]
fn a_file_this_user_may_not_write_is_read_and_writes_say_why() {
    let d = dir();
    let db = filled(d.path());
    // A clean close leaves no -wal: SQLite then cannot make its index beside it.
    std::fs::remove_file(d.path().join("m.db-lock")).ok();
    assert_eq!(names(d.path()), ["m.db"]);
    let before = std::fs::read(&db).unwrap();
    let Some(run_ro) = unwritable_runner(d.path()) else {
        eprintln!("SKIPPED a_file_this_user_may_not_write: neither an unprivileged user nor a read-only bind mount");
        return;
    };
    let o = run_ro(&db, &["recall", "red cup"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("held the red cup"));
    assert!(stderr(&o).contains("opened read-only") && stderr(&o).contains("records no access"), "{}", stderr(&o));
    for args in [&["stats"][..], &["list"], &["export"], &["doctor"]] {
        let o = run_ro(&db, args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
    let o = run_ro(&db, &["learn", "the floor is wet near the sink"]);
    assert_eq!(o.status.code(), Some(22), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("m.db is read-only") && e.contains("learn cannot write it"), "{e}");
    assert!(!e.contains("disk") && !e.contains("full"), "{e}");
    assert!(std::fs::read(&db).unwrap() == before, "the file changed");
    assert_eq!(names(d.path()), ["m.db"], "nothing created beside it");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_file_that_is_not_a_database_says_so() {
    let d = dir();
    let csv = d.path().join("log.csv");
    std::fs::write(&csv, "time,force\n1,12.5\n").unwrap();
    for args in [&["stats"][..], &["learn", "x"]] {
        let o = run(&csv, args);
        assert_eq!(o.status.code(), Some(16), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("log.csv is not a robotmem database") && e.contains("Is the path right?"), "{e}");
    }
    assert_eq!(std::fs::read(&csv).unwrap(), b"time,force\n1,12.5\n");
    assert_eq!(names(d.path()), ["log.csv"]);
}

#[test]
fn a_spatial_sort_that_measures_nothing_warns() {
    let d = dir();
    let db = filled(d.path());
    let cases = [
        (
            r#"{"field": "spatial.pso", "target": [0.4, 0.1, 0.3]}"#,
            "none of the 2 memories returned has coordinates at `spatial.pso`",
        ),
        (
            r#"{"field": "spatial.pos", "target": [0.4, 0.1]}"#,
            "`spatial.pos` holds 3 numbers in the memories returned, the target has 2",
        ),
    ];
    for (spatial, why) in cases {
        let r = ok_json(&db, &["recall", "red cup", "--spatial", spatial]);
        let w = r["warnings"][0].as_str().unwrap_or_else(|| panic!("no warning: {r}"));
        assert!(w.contains(why) && w.contains("`spatial.pos` (3 numbers)"), "{w}");
        let o = run(&db, &["recall", "red cup", "--spatial", spatial]);
        assert!(o.status.success());
        assert!(stderr(&o).contains("warning: spatial_sort measured no distance"), "{}", stderr(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("dist -"));
    }
    let r = ok_json(&db, &["recall", "red cup", "--spatial", r#"{"field": "spatial.pos", "target": [0.4, 0.1, 0.3]}"#]);
    assert!(r.get("warnings").is_none(), "{r}");
}
