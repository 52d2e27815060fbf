//! Storage stage: the SQLite file, its connections and transactions.
//!
//! One writer connection behind a mutex and a small pool of reader connections.
//! In WAL mode readers never wait for the writer (of this or another process),
//! and write transactions start with `BEGIN IMMEDIATE` so two processes never
//! deadlock on a lock upgrade. `SQLITE_BUSY` past the busy timeout is retried a
//! bounded number of times before [`Status::Busy`] reaches the caller. Writes of
//! several threads at once share one transaction and one commit ([`group`]).

pub mod browse;
mod busy;
pub(crate) mod cipher;
mod group;
pub mod history;
pub mod memory;
mod order;
pub(crate) mod retention;
pub mod schema;
pub(crate) mod scratch;
pub mod transfer;
pub mod vectors;
mod verify;

pub use group::{NoHooks, TxHooks};

use std::path::{Path, PathBuf};
use std::time::Duration;

use parking_lot::Mutex;
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use crate::error::{Error, Result, Status};
use crate::options::{Durability, Location, OpenOptions};

/// Reader connections kept open for reuse.
const MAX_IDLE_READERS: usize = 4;

pub struct Store {
    writer: Mutex<Connection>,
    /// Writes waiting for the next group transaction (see [`group`]).
    queue: group::Queue,
    /// `None` for in-memory databases: every read then uses the writer connection.
    readers: Option<Mutex<Vec<Connection>>>,
    path: Option<PathBuf>,
    config: ConnConfig,
    /// Writers of several processes take turns ([`order`]); `None` in memory.
    turns: Option<order::Turns>,
    /// The file's encryption key, given to every connection opened ([`cipher`]).
    key: parking_lot::RwLock<Option<crate::key::Key>>,
    /// Set on a store that must no longer be written (an as-of view, once
    /// built): why, for the error.
    frozen: std::sync::OnceLock<String>,
    /// The handle's clock, behind `robotmem_now()` on every connection.
    clock: crate::clock::Clock,
}

/// Per-connection settings, applied to every connection the store opens.
#[derive(Clone, Copy)]
struct ConnConfig {
    busy_timeout: Duration,
    durability: Durability,
    /// Largest file size in bytes; writes beyond it fail with `Status::Full`.
    max_bytes: Option<u64>,
    /// Opened read-only (`OpenOptions::read_only`): every connection is, and no
    /// write is attempted.
    read_only: bool,
    /// Read-only in a directory this process may not write, with no `-wal`
    /// beside the file: SQLite cannot make its shared-memory index there, so the
    /// file is read as immutable (no locks; see [`open_connection`]).
    immutable: bool,
}

impl ConnConfig {
    /// Read-write, no limits: for a connection that only checks the file.
    fn plain() -> ConnConfig {
        ConnConfig {
            busy_timeout: Duration::ZERO,
            durability: Durability::Normal,
            max_bytes: None,
            read_only: false,
            immutable: false,
        }
    }
}

impl Store {
    pub fn open(opts: &OpenOptions) -> Result<Store> {
        let mut config = ConnConfig {
            busy_timeout: Duration::from_millis(opts.busy_timeout_ms as u64),
            durability: opts.durability,
            max_bytes: opts.max_db_bytes,
            read_only: opts.read_only,
            immutable: false,
        };
        let path = match &opts.location {
            Location::InMemory => None,
            Location::Default => Some(default_path()?),
            Location::Path(p) => Some(p.clone()),
        };
        let key = opts.resolved_key()?;
        if key.is_some() && !cipher::AVAILABLE {
            cipher::apply(&Connection::open_in_memory()?, key.as_ref())?; // the build's refusal
        }
        if let Some(p) = &path {
            if config.read_only {
                check_exists(p)?;
                config.immutable = !writable(parent_dir(p)) && !Path::new(&format!("{}-wal", p.display())).exists();
            } else {
                prepare_file(p, opts.location == Location::Default)?;
            }
            check_sqlite_header(p, key.is_some())?;
            if key.is_none() {
                check_not_truncated(p)?; // an encrypted file's page size is not in its header
            }
            if opts.verify {
                verify::verify_untouched(p, config.busy_timeout, key.as_ref())
                    .map_err(|e| cipher::wrong_key(p, &key, e))?;
            }
        }
        let writer = match &path {
            Some(p) => open_connection(p, config, key.as_ref())?,
            None => Connection::open_in_memory()?,
        };
        // Until the open has succeeded, closing must not checkpoint a log into the file.
        writer.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
        // Some settings read the file: with a wrong key, that is where it shows.
        configure(&writer, config, &opts.clock).map_err(|e| match &path {
            Some(p) => cipher::wrong_key(p, &key, e),
            None => e,
        })?;
        // Reading the header first: a non-SQLite file fails here, before anything is
        // written; so does an encrypted file whose key is wrong.
        let header = retry_busy(config.busy_timeout, || schema::header(&writer)).map_err(|e| match &path {
            Some(p) => cipher::wrong_key(p, &key, e),
            None => e,
        })?;
        schema::check_openable(&header)?;
        if config.read_only {
            schema::check_readable(&header)?;
        }
        let version = header.user_version;
        if path.is_some() && !config.read_only && header.tables == 0 {
            // A new file returns the pages a purge frees to the file system
            // (`PRAGMA incremental_vacuum`, see `retention`). SQLite takes this only
            // before the first table and the switch to WAL, outside a transaction.
            writer.execute_batch("PRAGMA auto_vacuum = INCREMENTAL")?;
        }
        if path.is_some() && !config.read_only {
            // Switching to WAL (and WAL recovery) can report SQLITE_BUSY at once, without the
            // busy handler, while another process opens the same new file.
            let mode: String = retry_busy(config.busy_timeout, || {
                Ok(writer.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?)
            })?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(Error::new(Status::Io, format!("cannot enable WAL journal (got {mode})")));
            }
        }
        let store = Store {
            writer: Mutex::new(writer),
            queue: Default::default(),
            readers: path.as_ref().map(|_| Mutex::new(Vec::new())),
            turns: path.as_deref().filter(|_| !config.read_only).map(order::Turns::new),
            path,
            config,
            key: parking_lot::RwLock::new(key),
            frozen: Default::default(),
            clock: opts.clock.clone(),
        };
        let prepared = (|| {
            if config.read_only {
                Ok(())
            } else if version < schema::SCHEMA_VERSION {
                store.write(&NoHooks, |tx| {
                    schema::migrate(tx)?;
                    schema::sync_tag_meta(tx)?;
                    schema::ensure_recall_index(tx)
                })
            } else if !store.read(|c| Ok(schema::tag_meta_in_sync(c)? && schema::has_recall_index(c)?))? {
                store.write(&NoHooks, |tx| {
                    if !schema::tag_meta_in_sync(tx)? {
                        schema::sync_tag_meta(tx)?;
                    }
                    schema::ensure_recall_index(tx)
                })
            } else {
                Ok(())
            }
        })();
        if let Err(e) = prepared {
            // The readers close first, so the last connection to close is the
            // writer, which does not checkpoint: a failed open leaves the log alone.
            if let Some(pool) = &store.readers {
                pool.lock().clear();
            }
            return Err(e);
        }
        if !config.read_only {
            store.writer.lock().set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, false)?;
        }
        Ok(store)
    }

    /// Runs `f` in a read transaction (one consistent snapshot).
    pub fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let Some(pool) = &self.readers else {
            let conn = self.writer.lock();
            let tx = conn.unchecked_transaction()?;
            return f(&tx);
        };
        // Held for the whole read: a rekey waits for reads in flight, and the
        // connections they return (opened with the old key) are then dropped.
        // Recursive: a read inside a read must not wait behind a waiting rekey.
        let key = self.key.read_recursive();
        let conn = match pool.lock().pop() {
            Some(c) => c,
            None => {
                let path = self.path.as_deref().expect("file store has a path");
                let c = open_connection(path, self.config, key.as_ref())?;
                configure(&c, self.config, &self.clock)?;
                c
            }
        };
        let result = (|| {
            let tx = conn.unchecked_transaction()?;
            let out = f(&tx)?;
            tx.finish()?;
            Ok(out)
        })();
        let mut idle = pool.lock();
        // A connection somehow left inside a transaction is dropped, not reused.
        if idle.len() < MAX_IDLE_READERS && conn.is_autocommit() {
            idle.push(conn);
        }
        result
    }

    /// Runs `f` with the writer connection only if it is free right now.
    pub fn try_write<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Option<Result<T>> {
        if let Err(e) = self.writable() {
            return Some(Err(e));
        }
        let conn = self.writer.try_lock()?;
        Some((|| {
            let tx = Transaction::new_unchecked(&conn, TransactionBehavior::Immediate)?;
            let out = f(&tx)?;
            tx.commit()?;
            Ok(out)
        })())
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// From now on every write fails with `Status::ReadOnly` and `why`.
    pub(crate) fn freeze(&self, why: String) {
        let _ = self.frozen.set(why);
    }

    /// Whether the store was opened read-only.
    pub fn read_only(&self) -> bool {
        self.config.read_only
    }

    /// `Status::ReadOnly` when the store was opened read-only.
    pub(crate) fn writable(&self) -> Result<()> {
        if let Some(why) = self.frozen.get() {
            return Err(Error::new(Status::ReadOnly, why.clone()));
        }
        if !self.config.read_only {
            return Ok(());
        }
        let path = self.path.as_deref().map(|p| p.display().to_string()).unwrap_or_default();
        Err(Error::new(
            Status::ReadOnly,
            format!("{path} was opened read-only: nothing is written through this handle"),
        ))
    }

    /// Copies the write-ahead log into the database file now (what SQLite also tries
    /// when the last connection closes, without telling anyone if it fails). Another
    /// connection reading is not an error (it, or the next writer, copies the rest).
    pub fn checkpoint(&self) -> Result<()> {
        let Some(path) = &self.path else { return Ok(()) };
        if self.config.read_only {
            return Ok(());
        }
        let conn = self.writer.lock();
        let result: Result<(i64, i64)> =
            conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get(1)?, r.get(2)?))).map_err(Error::from);
        result.map(drop).map_err(|e| {
            Error::new(
                e.status,
                format!(
                    "the write-ahead log could not be copied into {} ({}); no write is lost: the committed \
                     writes stay in {}-wal and are applied when the database is next opened with space to grow",
                    path.display(),
                    e.message,
                    path.display()
                ),
            )
        })
    }

    /// The writer connection, for tests that instrument it.
    #[cfg(test)]
    pub fn writer_for_test(&self) -> parking_lot::MutexGuard<'_, Connection> {
        self.writer.lock()
    }
}

/// Runs `f` again while it fails with `Status::Busy`, for at most `timeout`.
fn retry_busy<T>(timeout: Duration, mut f: impl FnMut() -> Result<T>) -> Result<T> {
    let start = std::time::Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        match f() {
            Err(e) if e.status == Status::Busy && start.elapsed() < timeout => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

fn default_path() -> Result<PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or_else(|| Error::invalid("HOME is not set: cannot use the default ~/.robotmem/memory.db; pass a path"))?;
    Ok(PathBuf::from(home).join(".robotmem").join("memory.db"))
}

/// The directory holding `path` (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Refuses a blank path and a directory.
fn check_path(path: &Path) -> Result<()> {
    if path.to_str().is_some_and(|p| p.trim().is_empty()) || path.as_os_str().is_empty() {
        return Err(Error::invalid("path is empty or blank"));
    }
    if path.is_dir() {
        return Err(Error::new(Status::Io, format!("{} is a directory, not a database file", path.display())));
    }
    Ok(())
}

/// For a read-only open: the file must be there (nothing is created).
fn check_exists(path: &Path) -> Result<()> {
    check_path(path)?;
    match std::fs::metadata(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::new(
            Status::Io,
            format!("no database file at {} (a read-only open does not create one)", path.display()),
        )),
        Err(e) => Err(io_error("cannot read", path, e)),
    }
}

/// Refuses a file that is not empty and does not start with SQLite's header,
/// before SQLite reads it ("file is not a database" does not say which file, or
/// what to do).
fn check_sqlite_header(path: &Path, keyed: bool) -> Result<()> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| io_error("cannot read", path, e))?;
    let mut head = Vec::with_capacity(16);
    f.by_ref().take(16).read_to_end(&mut head).map_err(|e| io_error("cannot read", path, e))?;
    let plain = head == b"SQLite format 3\0";
    if head.is_empty() || plain != keyed {
        return Ok(()); // new, plain without a key, or to be decrypted with one
    }
    if keyed || cipher::AVAILABLE {
        return Err(cipher::refused(path, keyed, plain));
    }
    Err(Error::new(
        Status::Corrupt,
        format!(
            "{} is not a robotmem database: it is not an SQLite file (it does not start with SQLite's header). \
             Is the path right? (the file was not modified)",
            path.display()
        ),
    ))
}

/// Creates the default directory (0700) and a missing database file (0600).
fn prepare_file(path: &Path, create_dir: bool) -> Result<()> {
    use std::fs;
    #[cfg(unix)]
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};

    check_path(path)?;
    let dir = parent_dir(path);
    if create_dir {
        let mut b = fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        b.mode(0o700);
        b.create(dir).map_err(|e| io_error("cannot create directory", dir, e))?;
        // robotmem's own directory holds private memories: an existing one made
        // readable by others (0755 by an old umask, by hand) is closed again.
        #[cfg(unix)]
        tighten(dir, 0o700)?;
    }
    let mut o = fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    o.mode(0o600);
    match o.open(path) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            let what = format!("cannot create database file {} in directory", path.display());
            return Err(io_error(&what, dir, e));
        }
    }
    #[cfg(unix)]
    if create_dir {
        tighten(path, 0o600)?;
    }
    // SQLite keeps the WAL and the shared-memory index beside the file.
    if !writable(dir) && !Path::new(&format!("{}-wal", path.display())).exists() {
        return Err(Error::new(
            Status::Io,
            format!(
                "directory {} is not writable: robotmem needs to create {}-wal and {}-shm beside the database",
                dir.display(),
                path.display(),
                path.display()
            ),
        ));
    }
    Ok(())
}

/// Removes the group and other permission bits of `path` beyond `mode`.
#[cfg(unix)]
fn tighten(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|e| io_error("cannot read", path, e))?;
    let current = meta.permissions().mode() & 0o777;
    if current & !mode != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(current & mode))
            .map_err(|e| io_error("cannot make private (chmod)", path, e))?;
    }
    Ok(())
}

/// Whether this process may create files in `dir`.
#[cfg(unix)]
fn writable(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else { return false };
    // SAFETY: a NUL-terminated path; access() only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// Refuses a database file shorter than its own header says, read before SQLite
/// touches it. Only checked while the WAL holds no frames: then the main file alone
/// is the database, and a checkpoint (which grows the file) cannot be running.
fn check_not_truncated(path: &Path) -> Result<()> {
    use std::io::Read;
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 32) {
        return Ok(());
    }
    let mut header = [0u8; 100];
    let mut f = std::fs::File::open(path).map_err(|e| io_error("cannot read", path, e))?;
    let len = f.metadata().map_err(|e| io_error("cannot read", path, e))?.len();
    if len < 100 || f.read_exact(&mut header).is_err() || &header[..16] != b"SQLite format 3\0" {
        return Ok(()); // empty, new, or not SQLite at all: SQLite's own checks decide
    }
    let be32 = |o: usize| u32::from_be_bytes([header[o], header[o + 1], header[o + 2], header[o + 3]]) as u64;
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65536,
        n => n as u64,
    };
    let (change_counter, pages, valid_for) = (be32(24), be32(28), be32(92));
    if pages > 0 && change_counter == valid_for && len < pages * page_size {
        return Err(Error::new(
            Status::Corrupt,
            format!(
                "{} is truncated: its header describes {} bytes ({pages} pages of {page_size}) but the file has {len} \
                 (the file was not modified)",
                path.display(),
                pages * page_size
            ),
        ));
    }
    Ok(())
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    let status = match e.kind() {
        std::io::ErrorKind::NotFound => Status::Io,
        std::io::ErrorKind::PermissionDenied => Status::Io,
        _ if e.raw_os_error() == Some(28) => Status::Full, // ENOSPC
        _ => Status::Io,
    };
    Error::new(status, format!("{what} {}: {e}", path.display()))
}

/// Opens a connection to the file at `path`. A path is a path: SQLite is built with
/// URI filenames on, so a relative path starting with `file:` would be read as a URI
/// (`file:robot.db?mode=ro` opening read-only, `?mode=memory` a memory database);
/// prefixing `./` keeps it the file of that name, which the checks before opening
/// (creation, truncation) looked at too.
///
/// Read-only, where SQLite could not make the `-shm` index a WAL file needs (a
/// directory this process may not write, no `-wal` there), the file is opened as
/// an `immutable=1` URI built from the path (every byte that is not unreserved
/// percent-encoded): read without locks, which holds because no writer can be
/// logging into it (a writer would need that `-wal`).
fn open_connection(path: &Path, c: ConnConfig, key: Option<&crate::key::Key>) -> Result<Connection> {
    let access = if c.read_only { OpenFlags::SQLITE_OPEN_READ_ONLY } else { OpenFlags::SQLITE_OPEN_READ_WRITE };
    let flags = access | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let literal = if path.is_relative() { Path::new(".").join(path) } else { path.to_path_buf() };
    let opened = if c.immutable {
        Connection::open_with_flags(immutable_uri(&literal), flags | OpenFlags::SQLITE_OPEN_URI)
    } else {
        Connection::open_with_flags(&literal, flags)
    };
    let conn = opened.map_err(|e| {
        let mut err = Error::from(e);
        if err.status == Status::Internal {
            err.status = Status::Io;
        }
        err.message = format!("cannot open {}: {}", path.display(), err.message);
        err
    })?;
    cipher::apply(&conn, key)?;
    Ok(conn)
}

/// `file:` URI of `path` with `immutable=1`.
fn immutable_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri + "?immutable=1"
}

fn configure(conn: &Connection, c: ConnConfig, clock: &crate::clock::Clock) -> Result<()> {
    busy::install(conn, c.busy_timeout)?;
    vectors::register(conn)?;
    crate::clock::register(conn, clock)?;
    conn.set_prepared_statement_cache_capacity(64);
    let sync = match c.durability {
        Durability::Normal => "NORMAL",
        Durability::Full => "FULL",
    };
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {sync}; PRAGMA temp_store = MEMORY; PRAGMA foreign_keys = OFF;"
    ))?;
    if let Some(max) = c.max_bytes {
        let page: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        conn.execute_batch(&format!("PRAGMA max_page_count = {};", (max / page.max(512) as u64).max(1)))?;
    }
    Ok(())
}
