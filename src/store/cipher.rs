//! Encryption at rest (cargo feature `encryption`, CMake `-DROBOTMEM_ENCRYPTION=ON`):
//! the build links SQLCipher instead of SQLite, and a handle opened with a key
//! ([`crate::key::Key`], 256 raw bits in SQLCipher's `x'…'` form: no key
//! derivation per connection) gives it to every connection it opens before
//! anything is read.

use std::path::Path;

use rusqlite::Connection;

use super::Store;
use crate::error::{Error, Result, Status};
use crate::key::Key;

/// Whether this build can open encrypted files.
pub const AVAILABLE: bool = cfg!(feature = "encryption");

/// Gives `key` to a connection just opened (nothing read yet). A key in a build
/// without encryption is refused.
pub(crate) fn apply(conn: &Connection, key: Option<&Key>) -> Result<()> {
    let Some(key) = key else { return Ok(()) };
    if !AVAILABLE {
        return Err(unavailable());
    }
    pragma(conn, "key", key)
}

/// Changes the key of the open database (`conn` its writer, no transaction open).
fn rekey(conn: &Connection, key: &Key) -> Result<()> {
    if !AVAILABLE {
        return Err(unavailable());
    }
    pragma(conn, "rekey", key)
}

fn pragma(conn: &Connection, name: &str, key: &Key) -> Result<()> {
    // Not a bound parameter: PRAGMA takes none. The literal is hex digits only.
    let mut sql = format!("PRAGMA {name} = {};", key.literal());
    let done = conn.execute_batch(&sql);
    // SAFETY: overwriting ASCII bytes with zeros keeps the string valid UTF-8.
    unsafe { sql.as_bytes_mut().iter_mut().for_each(|b| std::ptr::write_volatile(b, 0)) };
    done.map_err(|e| Error::new(Status::Io, format!("cannot set the encryption key: {e}")))
}

fn unavailable() -> Error {
    Error::invalid(
        "this robotmem was built without encryption: a key cannot be used (build with the cargo feature \
         `encryption`, or CMake -DROBOTMEM_ENCRYPTION=ON)",
    )
}

/// The error for a file that does not open with the key given (or without one):
/// [`Status::Key`], saying which case it is from the file's first bytes.
pub(crate) fn refused(path: &Path, keyed: bool, plain_header: bool) -> Error {
    let shown = path.display();
    let why = match (keyed, plain_header) {
        (true, true) => {
            format!("{shown} is not encrypted: open it without a key (or encrypt a copy: robotmem encrypt)")
        }
        (true, false) => {
            format!("{shown} does not open with this key: the key is wrong, or the file is not a database")
        }
        (false, _) => format!("{shown} is encrypted (or not a database): open it with its key"),
    };
    Error::new(Status::Key, format!("{why} (the file was not modified)"))
}

impl Store {
    /// Re-encrypts the file with `key` (it was opened with a key). The file must
    /// be this handle's alone: SQLCipher rewrites every page in one transaction
    /// outside WAL mode, which SQLite allows only when no other connection has the
    /// file open ([`Status::Busy`] otherwise, and nothing changes).
    pub fn rekey(&self, key: &Key) -> Result<()> {
        self.writable()?;
        let mut current = self.key.write(); // no read in flight from here on
        if current.is_none() {
            return Err(Error::invalid(
                "the file is not encrypted: rekey changes the key of a file opened with one (to encrypt a plain \
                 file, export it into a new file opened with a key)",
            ));
        }
        if let Some(pool) = &self.readers {
            pool.lock().clear();
        }
        let conn = self.writer.lock();
        let mode = |m: &str| -> Result<String> {
            Ok(conn.query_row(&format!("PRAGMA journal_mode = {m}"), [], |r| r.get::<_, String>(0))?)
        };
        match mode("DELETE") {
            Ok(m) if m.eq_ignore_ascii_case("delete") => {}
            Err(e) if e.status != Status::Busy => return Err(e),
            _ => {
                return Err(Error::new(
                    Status::Busy,
                    "another connection has the file open: a rekey needs it alone (close the other handles and \
                     processes using it)",
                ))
            }
        }
        let done = rekey(&conn, key);
        let wal = mode("WAL");
        done?;
        if !wal?.eq_ignore_ascii_case("wal") {
            return Err(Error::new(Status::Io, "rekeyed, but cannot switch the journal back to WAL"));
        }
        *current = Some(key.clone());
        Ok(())
    }
}

/// `e`, or [`Status::Key`] when it says the file is not a database and a key was
/// given (SQLCipher reads a wrong key's pages as garbage).
pub(super) fn wrong_key(path: &Path, key: &Option<Key>, e: Error) -> Error {
    if key.is_some() && e.status == Status::Corrupt {
        refused(path, true, false)
    } else {
        e
    }
}
