//! Retention on the command line: the memory budget options every command that
//! opens the file takes (`--max-memories`, `--max-memories-json`,
//! `--evict-protected`: `rm_open_options`' fields) and `robotmem purge`'s text.

use clap::Args;
use robotmem::{options, Db, OpenOptions, Result};
use serde_json::Value;

/// The memory budget of the handle (see README "Retention").
#[derive(Args, Debug, Default)]
pub struct BudgetArgs {
    /// Most memories the file holds (any status); a write past it evicts others
    /// (expired, forgotten, then least valuable; never constraint, gotcha,
    /// postmortem) and says which. 0: no limit.
    #[arg(long, global = true, value_name = "N", default_value_t = 0)]
    max_memories: u64,
    /// The same per collection: a JSON object such as '{"obstacles": 200, "*": 1000}'.
    #[arg(long, global = true, value_name = "JSON")]
    max_memories_json: Option<String>,
    /// Let eviction remove constraints, gotchas and postmortems too.
    #[arg(long, global = true)]
    evict_protected: bool,
}

impl BudgetArgs {
    /// Sets the budget fields of `o`; a malformed JSON is refused by name.
    pub fn apply(&self, o: &mut OpenOptions) -> Result<()> {
        o.max_memories = self.max_memories;
        if let Some(j) = &self.max_memories_json {
            o.collection_max_memories = options::parse_collection_budgets("--max-memories-json", j)?;
        }
        o.evict_protected = self.evict_protected;
        Ok(())
    }
}

/// `robotmem purge`: its JSON rendering and its text.
pub fn purge(db: &Db, a: &crate::request::Purge) -> Result<(Value, String)> {
    let o = crate::request::purge(db, a)?;
    let r = &o.data;
    let text = format!(
        "purged {} memories in {} transactions; {} bytes given back to the file system, {} bytes live\n",
        r.purged, r.batches, r.reclaimed_bytes, r.live_bytes
    );
    Ok((o.json, text))
}
