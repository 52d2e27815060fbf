//! `verify` at open: SQLite's `quick_check` over the database as it stands (the
//! main file with the frames of its `-wal`), run so that a refused file is left
//! byte for byte as it was — main file, `-wal` and `-shm` (issue 26, F7).
//!
//! An ordinary connection would change them: it rebuilds the WAL index in the
//! `-shm` (creating it if missing), records its read marks there, and the last
//! connection to close checkpoints the log into the main file and deletes it.
//! The check runs on a connection of its own, before the store's connections
//! exist, that does none of this:
//! - with a `-wal`: exclusive locking mode set before the first read, so the WAL
//!   index lives in heap memory and the `-shm` is never opened, and no checkpoint
//!   at close (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`), so the log stays as it was;
//! - without one: the main file is the whole database and is opened `immutable`
//!   (read-only, no lock, no `-wal`/`-shm` created).
//!
//! While another process has the file open the exclusive lock is not available;
//! the file is in use then (its log and index are that process's live state) and
//! the check runs on an ordinary connection, still without a checkpoint at close.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use super::schema;
use crate::error::{Error, Result, Status};

/// Runs the checks of a `verify` open on the file at `path` (nothing to check
/// when it does not exist yet or is empty).
pub(super) fn verify_untouched(path: &Path, busy_timeout: Duration, key: Option<&crate::key::Key>) -> Result<()> {
    if std::fs::metadata(path).map_or(true, |m| m.len() == 0) {
        return Ok(());
    }
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    if std::fs::symlink_metadata(&wal).is_err() {
        return check(&open_immutable(path, key)?);
    }
    let exclusive = open_quiet(path, key)?;
    exclusive.execute_batch("PRAGMA locking_mode = EXCLUSIVE;")?;
    match check(&exclusive) {
        Err(e) if e.status == Status::Busy => {}
        other => return other,
    }
    drop(exclusive);
    let shared = open_quiet(path, key)?;
    shared.busy_timeout(busy_timeout)?;
    check(&shared)
}

/// A read-write connection (exclusive locks need one) that writes nothing: no
/// checkpoint at close, queries only, no busy wait.
fn open_quiet(path: &Path, key: Option<&crate::key::Key>) -> Result<Connection> {
    let conn = super::open_connection(path, super::ConnConfig::plain(), key)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    conn.busy_timeout(Duration::ZERO)?;
    conn.execute_batch("PRAGMA query_only = 1;")?;
    Ok(conn)
}

/// The main file alone, read as a file that cannot change: SQLite takes no
/// lock and opens no `-wal` or `-shm`.
fn open_immutable(path: &Path, key: Option<&crate::key::Key>) -> Result<Connection> {
    use std::os::unix::ffi::OsStrExt;
    let literal = if path.is_relative() { Path::new(".").join(path) } else { path.to_path_buf() };
    let mut uri = String::from("file:");
    for &b in literal.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/._-~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&uri, flags).map_err(|e| {
        let mut err = Error::from(e);
        err.message = format!("cannot open {}: {}", path.display(), err.message);
        err
    })?;
    super::cipher::apply(&conn, key)?;
    Ok(conn)
}

/// The file must be openable (a robotmem database of this or an older schema)
/// and pass `quick_check`.
fn check(conn: &Connection) -> Result<()> {
    let header = schema::header(conn).map_err(damaged)?;
    schema::check_openable(&header)?;
    quick_check(conn).map_err(damaged)
}

/// SQLite's corruption errors while checking name the file as damaged.
fn damaged(e: Error) -> Error {
    if e.status != Status::Corrupt || e.message.contains("damaged") {
        return e;
    }
    Error::new(Status::Corrupt, format!("database is damaged ({}); the file was not modified", e.message))
}

/// `PRAGMA quick_check`: read-only; any finding refuses the file.
pub(super) fn quick_check(conn: &Connection) -> Result<()> {
    let findings: Vec<String> =
        conn.prepare("PRAGMA quick_check(5)")?.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    if findings.len() == 1 && findings[0] == "ok" {
        return Ok(());
    }
    Err(Error::new(
        Status::Corrupt,
        format!("database is damaged (quick_check: {}); the file was not modified", findings.join("; ")),
    ))
}
