//! Retention on the command line: the memory budget options every command that
//! opens the file takes (`--max-memories`, `--max-memories-json`,
//! `--evict-protected`: `rm_open_options`' fields) and `robotmem purge`.

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

#[derive(Args, Debug)]
pub struct PurgeArgs {
    /// Remove what was forgotten, superseded or expired at least this long ago:
    /// 0, 90s, 30m, 12h, 7d, 2w (a plain number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = parse_age)]
    older_than: f64,
}

/// An age in seconds from `7d`, `12h`, `30m`, `90s`, `2w` or plain seconds.
fn parse_age(s: &str) -> std::result::Result<f64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("{s:?} is not an age such as 0, 90s, 30m, 12h, 7d, 2w"))?;
    let unit_s = match unit {
        "" | "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        "w" => 7.0 * 86_400.0,
        _ => return Err(format!("{s:?}: the unit must be s, m, h, d or w")),
    };
    let secs = n * unit_s;
    if !(secs.is_finite() && (0.0..=robotmem::limits::MAX_TTL_SECONDS).contains(&secs)) {
        return Err(format!("{s:?} must be between 0 and 100 years"));
    }
    Ok(secs)
}

/// `robotmem purge`: its JSON rendering and its text.
pub fn purge(db: &Db, a: &PurgeArgs) -> Result<(Value, String)> {
    let r = db.purge(a.older_than)?;
    let text = format!(
        "purged {} memories in {} transactions; {} bytes given back to the file system, {} bytes live\n",
        r.purged, r.batches, r.reclaimed_bytes, r.live_bytes
    );
    Ok((robotmem::render::purge(&r), text))
}

#[cfg(test)]
mod tests {
    use super::parse_age;

    #[test]
    fn ages_parse_and_hostile_ones_are_refused() {
        assert_eq!(parse_age("0"), Ok(0.0));
        assert_eq!(parse_age("90s"), Ok(90.0));
        assert_eq!(parse_age("7d"), Ok(604_800.0));
        assert_eq!(parse_age("2w"), Ok(1_209_600.0));
        for bad in ["-1d", "d", "1y", "1e9d", "NaN", "", "1.2.3h", "999999999999999999999w"] {
            assert!(parse_age(bad).is_err(), "{bad}");
        }
    }
}
