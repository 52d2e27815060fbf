//! Encryption at rest. In a build with the `encryption` feature: a file opened
//! with a key is encrypted (no plaintext on disk), opens again only with that
//! key, and a missing or wrong key — or a key for a plain file — is `Status::Key`
//! with the file, its `-wal` and `-shm` byte for byte as they were; rekey needs
//! the file alone and keeps every memory; export / import move memories between
//! plain and encrypted files. In a build without it, a key is refused clearly.

#[path = "common/scratch.rs"]
mod scratch;
use std::path::{Path, PathBuf};

use robotmem::*;

const KEY: [u8; 32] = [7; 32];
#[cfg_attr(not(feature = "encryption"), allow(dead_code))]
const OTHER: [u8; 32] = [9; 32];

fn options(p: &Path, key: Option<&[u8; 32]>) -> OpenOptions {
    let mut o = OpenOptions::path(p);
    o.embeddings = false;
    o.durability = Durability::Normal;
    o.key = key.map(|k| Key::from_bytes(k).unwrap());
    o
}

#[cfg(not(feature = "encryption"))]
#[test]
fn a_build_without_encryption_refuses_a_key() {
    let d = scratch::Scratch::new("nocipher");
    let e = Db::open(options(&d.db(), Some(&KEY))).err().expect("refused");
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("built without encryption"), "{}", e.message);
    assert!(!d.db().exists(), "nothing was created");
    const { assert!(!ENCRYPTION) };
    let mut o = options(&d.db(), None);
    o.key_file = Some(d.join("none"));
    assert_eq!(Db::open(o).err().expect("refused").status, Status::InvalidArgument);
}

/// The bytes of the file and of its `-wal` / `-shm` (absent: empty).
#[cfg_attr(not(feature = "encryption"), allow(dead_code))]
fn files(p: &Path) -> Vec<Vec<u8>> {
    ["", "-wal", "-shm"]
        .iter()
        .map(|s| std::fs::read(PathBuf::from(format!("{}{s}", p.display()))).unwrap_or_default())
        .collect()
}

#[cfg_attr(not(feature = "encryption"), allow(dead_code))]
fn learn(db: &Db, text: &str) -> i64 {
    db.learn(&LearnRequest { insight: text, ..Default::default() }).unwrap().memory_id
}

#[cfg_attr(not(feature = "encryption"), allow(dead_code))]
fn recall(db: &Db, q: &str) -> Vec<i64> {
    let r = db.recall(&RecallRequest { query: q, n: 10, min_confidence: 0.0, ..Default::default() }).unwrap();
    r.hits.iter().map(|h| h.memory.id).collect()
}

#[cfg(feature = "encryption")]
mod encrypted {
    use super::*;

    fn refused(o: OpenOptions, says: &str) {
        let p = match &o.location {
            Location::Path(p) => p.clone(),
            _ => unreachable!(),
        };
        let before = files(&p);
        let e = Db::open(o).err().expect("refused");
        assert_eq!(e.status, Status::Key, "{}", e.message);
        assert!(e.message.contains(says), "{}", e.message);
        assert!(!e.message.contains(&format!("{:02x}", KEY[0]).repeat(4)), "no key in a message");
        assert_eq!(files(&p), before, "the file, its -wal and -shm are untouched");
    }

    #[test]
    fn an_encrypted_file_opens_only_with_its_key_and_is_never_changed_otherwise() {
        const { assert!(ENCRYPTION) };
        let d = scratch::Scratch::new("cipher");
        let p = d.db();
        let db = Db::open(options(&p, Some(&KEY))).unwrap();
        let id = learn(&db, "the gripper slips on the wet aluminium bracket");
        db.close().unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert!(!bytes.starts_with(b"SQLite format 3"), "the header is encrypted too");
        let needle = b"aluminium";
        assert!(!bytes.windows(needle.len()).any(|w| w == needle), "no plaintext on disk");
        // With the key: everything is there.
        let db = Db::open(options(&p, Some(&KEY))).unwrap();
        assert_eq!(recall(&db, "gripper bracket"), vec![id]);
        drop(db);
        // Without it, with another, read-only, verified: Status::Key, nothing changed.
        refused(options(&p, None), "open it with its key");
        refused(options(&p, Some(&OTHER)), "the key is wrong");
        let mut o = options(&p, Some(&OTHER));
        o.verify = true;
        refused(o, "the key is wrong");
        let mut o = options(&p, Some(&OTHER));
        o.read_only = true;
        refused(o, "the key is wrong");
        let mut o = options(&p, Some(&KEY));
        o.read_only = true;
        o.verify = true;
        let db = Db::open(o).unwrap();
        assert_eq!(recall(&db, "wet bracket"), vec![id], "read-only and verified with the key");
        // A plain file given a key.
        let plain = d.join("plain.db");
        let db = Db::open(options(&plain, None)).unwrap();
        learn(&db, "plain text memory");
        db.close().unwrap();
        refused(options(&plain, Some(&KEY)), "is not encrypted");
    }

    #[test]
    fn key_files_and_hostile_keys() {
        use std::os::unix::fs::PermissionsExt;
        let d = scratch::Scratch::new("cipher-file");
        let p = d.db();
        let kf = d.join("key");
        std::fs::write(&kf, KEY.iter().map(|b| format!("{b:02x}")).collect::<String>() + "\n").unwrap();
        std::fs::set_permissions(&kf, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut o = options(&p, None);
        o.key_file = Some(kf.clone());
        let e = Db::open(o.clone()).err().expect("a key others may read");
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("chmod 600"), "{}", e.message);
        assert!(!p.exists(), "nothing was created");
        std::fs::set_permissions(&kf, std::fs::Permissions::from_mode(0o600)).unwrap();
        let db = Db::open(o.clone()).unwrap();
        let id = learn(&db, "dock 3 charger trips its breaker");
        drop(db);
        // The same key given as bytes opens the file the key file made.
        assert_eq!(recall(&Db::open(options(&p, Some(&KEY))).unwrap(), "breaker"), vec![id]);
        let mut both = o.clone();
        both.key = Some(Key::from_bytes(&KEY).unwrap());
        assert_eq!(Db::open(both).err().unwrap().status, Status::InvalidArgument);
        let mut memory = OpenOptions::in_memory();
        memory.key = Some(Key::from_bytes(&KEY).unwrap());
        assert_eq!(Db::open(memory).err().unwrap().status, Status::InvalidArgument);
        assert!(Key::from_bytes(&[1; 31]).is_err() && Key::from_bytes(&[1; 33]).is_err());
    }

    #[test]
    fn rekey_needs_the_file_alone_and_keeps_every_memory() {
        let d = scratch::Scratch::new("cipher-rekey");
        let p = d.db();
        let db = std::sync::Arc::new(Db::open(options(&p, Some(&KEY))).unwrap());
        let ids: Vec<i64> = (0..200).map(|i| learn(&db, &format!("shelf {i} holds part {}", i * 7))).collect();
        // Another handle on the file: Busy, and both keep working with the old key.
        let other = Db::open(options(&p, Some(&KEY))).unwrap();
        let e = db.rekey(&Key::from_bytes(&OTHER).unwrap()).expect_err("busy");
        assert_eq!(e.status, Status::Busy, "{}", e.message);
        assert_eq!(recall(&other, "shelf 17"), recall(&db, "shelf 17"));
        drop(other);
        // Alone: readers on other threads wait, then read with the new key.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|t| {
                let (db, stop) = (db.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut n = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) || n == 0 {
                        assert!(!recall(&db, &format!("shelf {}", t * 10 + 1)).is_empty());
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        db.rekey(&Key::from_bytes(&OTHER).unwrap()).unwrap();
        learn(&db, "written after the rekey");
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for r in readers {
            assert!(r.join().unwrap() > 0);
        }
        std::sync::Arc::into_inner(db).unwrap().close().unwrap();
        let e = Db::open(options(&p, Some(&KEY))).err().expect("the old key no longer opens it");
        assert_eq!(e.status, Status::Key);
        let db = Db::open(options(&p, Some(&OTHER))).unwrap();
        for (i, id) in ids.iter().enumerate().step_by(37) {
            assert!(recall(&db, &format!("shelf {i} part {}", i * 7)).contains(id), "memory {id}");
        }
        assert!(!recall(&db, "written after the rekey").is_empty());
        // A plain file cannot be rekeyed.
        let plain = Db::open(options(&d.join("plain.db"), None)).unwrap();
        assert_eq!(plain.rekey(&Key::from_bytes(&KEY).unwrap()).err().unwrap().status, Status::InvalidArgument);
    }

    #[test]
    fn export_and_import_move_memories_between_plain_and_encrypted_files() {
        let d = scratch::Scratch::new("cipher-move");
        let plain = Db::open(options(&d.join("plain.db"), None)).unwrap();
        let secret = Db::open(options(&d.join("secret.db"), Some(&KEY))).unwrap();
        learn(&plain, "the lidar fogs up in the cold store");
        learn(&secret, "the arm must not enter zone B while the door is open");
        for (from, to) in [(&plain, &secret), (&secret, &plain)] {
            let mut lines = String::new();
            from.export_each(&transfer::ExportOptions::default(), |l| {
                lines.push_str(l.json);
                lines.push('\n');
                Ok(())
            })
            .unwrap();
            to.import_lines(lines.as_bytes(), |_, _| {}).unwrap();
        }
        for db in [&plain, &secret] {
            assert_eq!(recall(db, "lidar cold store").len(), 1);
            assert_eq!(recall(db, "zone B door").len(), 1);
        }
    }
}
