//! History: a memory's versions (`robotmem history`, `GET /api/memory/{id}/history`,
//! the MCP tool `memory_history`), and the `as_of` of recall, get and list, which
//! run on a view of the database as it was then ([`Db::as_of`]).

use robotmem::types::MemoryVersion;
use robotmem::{render, Db, Result};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{given, Reply};

#[derive(clap::Args, Deserialize, JsonSchema, Debug, Clone)]
#[schemars(deny_unknown_fields)]
pub struct History {
    /// Id of the memory (> 0).
    #[arg(value_name = "ID")]
    pub memory_id: i64,
}

/// Every version of a memory, oldest first: what it said and was, from when to
/// when, and which change (update, forget, consolidation, expiry, fleet, import)
/// by which robot made it.
pub fn history(db: &Db, r: &History) -> Result<Reply<Vec<MemoryVersion>>> {
    let data = db.history(r.memory_id)?;
    Ok(Reply { json: render::history(r.memory_id, &data), data })
}

/// Runs `f` on `db`, or, with `as_of` (RFC 3339), on a read-only view of it as it
/// was then; the reply's JSON then says `as_of`.
pub fn at<T>(db: &Db, as_of: &Option<String>, f: impl FnOnce(&Db) -> Result<Reply<T>>) -> Result<Reply<T>> {
    let Some(t) = given(as_of) else { return f(db) };
    let view = db.as_of(t)?;
    let mut reply = f(&view)?;
    if let Some(at) = view.view_time() {
        reply.json["as_of"] = at.into();
    }
    Ok(reply)
}
