//! recall: the most relevant memories for a query (`robotmem recall`,
//! `GET /api/search`, the MCP tool `recall`).

use robotmem::{limits, render, Db, Error, RecallRequest, RecallResult, Result};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{default_min_confidence, default_n, given, Reply};

#[derive(clap::Args, Deserialize, JsonSchema, Debug, Clone)]
#[schemars(deny_unknown_fields)]
pub struct Recall {
    /// Search query in natural language; "*" lists the newest memories that pass the filters.
    #[serde(alias = "q")]
    #[schemars(length(min = 1, max = limits::MAX_QUERY_CHARS))]
    pub query: String,
    /// Number of results, 1-100.
    #[arg(short = 'n', long, default_value_t = limits::DEFAULT_RESULTS)]
    #[serde(default = "default_n")]
    #[schemars(range(min = 1, max = limits::MAX_RESULTS))]
    pub n: i64,
    /// Minimum confidence, 0.0-1.0.
    #[arg(long, default_value_t = limits::DEFAULT_MIN_CONFIDENCE)]
    #[serde(default = "default_min_confidence")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_confidence: f64,
    /// Only memories of this session (episode replay).
    #[arg(long = "session", value_name = "ID")]
    #[serde(default, alias = "session")]
    pub session_id: Option<String>,
    /// JSON object of dot-path conditions (AND, at most 10), e.g. {"task.success": true, "params.force.value": {"$lt": 15.0}}; operators $lt $lte $gt $gte $ne $eq.
    #[arg(long = "filter", value_name = "JSON")]
    #[serde(default, alias = "filter")]
    pub context_filter: Option<String>,
    /// JSON spatial sort, e.g. {"field": "spatial.object_position", "target": [1.3, 0.7, 0.42], "max_distance": 0.1}.
    #[arg(long = "spatial", value_name = "JSON")]
    #[serde(default, alias = "spatial")]
    pub spatial_sort: Option<String>,
    /// Fold results that say the same thing (word sets alike, same outcome; numbers may differ) into the best-ranked of them, which lists the others' ids in _similar: n results are then n different facts. Default false.
    #[arg(long)]
    #[serde(default)]
    pub group_similar: bool,
    /// Collection to search in (default: the database's default collection).
    #[arg(long)]
    #[serde(default)]
    pub collection: Option<String>,
    /// Recall as the database was at this time (RFC 3339, e.g. 2026-11-20T14:03:00Z; not in the future): the
    /// memories it had then, with their text, context and state of then.
    #[arg(long, value_name = "TIME")]
    #[serde(default)]
    pub as_of: Option<String>,
}

/// Recalls; `n` outside 1–[`limits::MAX_RESULTS`] is refused on every surface.
/// A spatial sort that measured no distance adds `warnings` (why, and which
/// fields of the memories returned hold coordinates).
pub fn recall(db: &Db, r: &Recall) -> Result<Reply<RecallResult>> {
    recall_as(db, r, true)
}

/// [`recall`], recorded as an access or not ([`Db::recall_unrecorded`]).
fn recall_as(db: &Db, r: &Recall, record: bool) -> Result<Reply<RecallResult>> {
    if !(1..=limits::MAX_RESULTS).contains(&r.n) {
        return Err(Error::invalid(format!("n: {} is not between 1 and {}", r.n, limits::MAX_RESULTS)));
    }
    let req = RecallRequest {
        query: &r.query,
        collection: given(&r.collection),
        n: r.n,
        min_confidence: r.min_confidence,
        session_id: given(&r.session_id),
        context_filter: given(&r.context_filter),
        spatial_sort: given(&r.spatial_sort),
        group_similar: r.group_similar,
    };
    super::history::at(db, &r.as_of, |db| {
        let data = if record { db.recall(&req)? } else { db.recall_unrecorded(&req)? };
        let mut json = render::recall(&data);
        if let Some(w) = req.spatial_sort.and_then(|s| super::spatial::warning(s, &data.hits)) {
            json["warnings"] = serde_json::json!([w]);
        }
        Ok(Reply { json, data })
    })
}

/// [`recall`] with how many memories match the query (not only its filters):
/// `matches`, and `matches_exact` false when that is a floor. A full result
/// (`n` hits) may hide more, so the same recall is run once more at
/// [`limits::MAX_RESULTS`], ungrouped, to count them; that count stops there.
/// (The library reports no count; this second recall is recorded like any other.)
pub fn recall_counted(db: &Db, r: &Recall) -> Result<Reply<RecallResult>> {
    let mut reply = recall(db, r)?;
    let hits = &reply.data.hits;
    let shown: usize = hits.iter().filter(|h| h.matched).map(|h| 1 + h.similar.len()).sum();
    let full = hits.len() as i64 >= r.n;
    let (matches, exact) = if !full {
        (shown, true)
    } else if r.n >= limits::MAX_RESULTS {
        (shown, false)
    } else {
        // Counting is not an access: the memories it reads keep their counters.
        let all = recall_as(db, &Recall { n: limits::MAX_RESULTS, group_similar: false, ..r.clone() }, false)?.data;
        let counted = all.hits.iter().filter(|h| h.matched).count();
        (counted.max(shown), (all.hits.len() as i64) < limits::MAX_RESULTS)
    };
    reply.json["matches"] = matches.into();
    reply.json["matches_exact"] = exact.into();
    Ok(reply)
}
