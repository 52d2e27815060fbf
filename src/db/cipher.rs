//! Encryption at rest on an open handle (docs/ENCRYPTION.md; the key itself is
//! given at open, `OpenOptions::key`).

use super::Db;
use crate::error::Result;

impl Db {
    /// Re-encrypts the file with `key` (builds with the `encryption` feature; the
    /// handle was opened with a key). The handle must be the file's only user:
    /// [`crate::Status::Busy`] while another handle or process has it open, and nothing
    /// changes. Calls on other threads wait while it runs (it rewrites every page).
    pub fn rekey(&self, key: &crate::Key) -> Result<()> {
        self.flush()?;
        self.store.rekey(key)
    }
}
