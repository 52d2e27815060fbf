//! Expiry of a memory after it was stored: set, move or clear it.

use super::Db;
use crate::error::Result;
use crate::limits;
use crate::store::memory;
use crate::types::Memory;

impl Db {
    /// Sets when active memory `id` expires: `ttl_seconds` from now, or at
    /// `expires_at` (RFC 3339; a past time expires it at once); neither clears it
    /// (it never expires). An expired memory may be given a later expiry (it is
    /// found again) or none. Returns the memory as stored.
    pub fn set_expiry(&self, id: i64, ttl_seconds: Option<f64>, expires_at: Option<&str>) -> Result<Memory> {
        let id = limits::memory_id(id)?;
        let at = limits::expiry(ttl_seconds, expires_at, None, self.opts.clock.now())?;
        self.write(|tx| {
            Self::active(tx, id, "set the expiry of")?;
            memory::set_expiry(tx, id, at.as_deref())?;
            Self::active(tx, id, "set the expiry of")
        })
    }
}
