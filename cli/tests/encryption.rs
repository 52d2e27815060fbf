//! `--key-file` (ROBOTMEM_KEY_FILE) and `robotmem rekey`, run as processes. With
//! the `encryption` feature: every command opens the file with the key (the web
//! console, the MCP server and the sync agent open it the same way), a missing
//! or wrong key exits with RM_KEY's code (26) and a message, never a panic, and
//! the file stays as it was. Without it: a key file is refused (code 11).

#[path = "common/web.rs"]
mod web;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(db: &Path, key: Option<&Path>, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_robotmem"));
    c.arg("--db").arg(db).args(["--no-embeddings", "--durability", "normal", "--json"]).args(args);
    c.env_remove("ROBOTMEM_MODEL_DIR").env_remove("ROBOTMEM_KEY_FILE");
    if let Some(k) = key {
        c.env("ROBOTMEM_KEY_FILE", k);
    }
    c.output().unwrap()
}

fn key_file(dir: &Path, name: &str, byte: u8) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, [byte; 32]).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

fn failed(o: &Output, code: i32, says: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{err}");
    assert!(err.contains(says), "{err}");
    assert!(!err.contains("panicked") && !err.contains(".rs:"), "{err}");
}

#[test]
fn key_files_open_encrypted_databases() {
    let dir = tempfile::Builder::new().prefix("robotmem-cli-key").tempdir().unwrap();
    let db = dir.path().join("m.db");
    let key = key_file(dir.path(), "key", 3);
    if !robotmem::ENCRYPTION {
        failed(&run(&db, Some(&key), &["learn", "x"]), 11, "built without encryption");
        assert!(!db.exists(), "nothing created");
        return;
    }
    let o = run(&db, Some(&key), &["learn", "the welding cell door sticks in winter"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&db, Some(&key), &["recall", "welding door"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("welding cell door"), "{o:?}");
    let before = std::fs::read(&db).unwrap();
    failed(&run(&db, None, &["stats"]), 26, "RM_KEY");
    let wrong = key_file(dir.path(), "wrong", 4);
    failed(&run(&db, Some(&wrong), &["recall", "welding"]), 26, "key is wrong");
    assert_eq!(std::fs::read(&db).unwrap(), before, "untouched");
    // rekey: the new key opens it, the old one no longer does.
    let o = run(&db, Some(&key), &["rekey", "--new-key-file", wrong.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    failed(&run(&db, Some(&key), &["stats"]), 26, "RM_KEY");
    let o = run(&db, Some(&wrong), &["export"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("welding cell door"), "{o:?}");
    // The web console opens it with the key the same way.
    let served = tempfile::Builder::new().prefix("robotmem-cli-key-web").tempdir().unwrap();
    let s = web::serve(served, &db, &["--key-file", wrong.to_str().unwrap()], None);
    let r = web::get(&s, "/api/memories?per_page=25");
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(r.body.contains("welding cell door"), "{}", r.body);
    drop(s);
    std::fs::set_permissions(&wrong, std::fs::Permissions::from_mode(0o640)).unwrap();
    failed(&run(&db, Some(&wrong), &["stats"]), 11, "chmod 600");
}
