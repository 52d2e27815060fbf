//! Purge: hard deletion of what left recall (the memory budget is an open
//! option, see `cli::retention`).

use robotmem::types::PurgeOutcome;
use robotmem::{render, Db, Result};
use schemars::JsonSchema;
use serde::Deserialize;

use super::Reply;

#[derive(clap::Args, Deserialize, JsonSchema, Debug, Clone)]
#[schemars(deny_unknown_fields)]
pub struct Purge {
    /// Hard-delete the memories forgotten, superseded or expired at least this long ago, in seconds (0: all of them
    /// now; at most 100 years), with their tags and vectors, and give the space back. On the command line an age:
    /// 0, 90s, 30m, 12h, 7d, 2w.
    #[arg(long = "older-than", value_name = "AGE", value_parser = parse_age)]
    #[schemars(range(min = 0))]
    pub older_than_seconds: f64,
}

/// Hard-deletes what left recall at least `older_than_seconds` ago.
pub fn purge(db: &Db, r: &Purge) -> Result<Reply<PurgeOutcome>> {
    let data = db.purge(r.older_than_seconds)?;
    Ok(Reply { json: render::purge(&data), data })
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
