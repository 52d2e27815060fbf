//! Looking into a file: the memory list with filters, totals, recent failures,
//! the health check (`robotmem list|stats|doctor`; `GET /api/memories`,
//! `/api/stats`, `/api/recent-failures`, `/api/doctor`; the MCP tool doctor and
//! resources `robotmem://stats`, `robotmem://recent-failures`).

use clap::ValueEnum;
use robotmem::{
    limits, render, Db, DoctorReport, ListRequest, Memory, MemoryKind, MemoryPage, MemoryStatus, Result, Stats,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{default_page, default_per_page, default_recent_failures, given, offset, paged, Reply};

/// Which memories by status; "forgotten" is the library's `invalidated`.
#[derive(ValueEnum, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StatusFilter {
    #[default]
    Active,
    Superseded,
    /// Forgotten memories.
    #[serde(alias = "invalidated")]
    #[value(alias = "invalidated")]
    Forgotten,
    All,
}

impl StatusFilter {
    /// The library's filter (`None`: every status).
    pub fn status(self) -> Option<MemoryStatus> {
        match self {
            StatusFilter::Active => Some(MemoryStatus::Active),
            StatusFilter::Superseded => Some(MemoryStatus::Superseded),
            StatusFilter::Forgotten => Some(MemoryStatus::Invalidated),
            StatusFilter::All => None,
        }
    }
}

#[derive(ValueEnum, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum KindFilter {
    Fact,
    Perception,
}

impl KindFilter {
    fn kind(self) -> MemoryKind {
        match self {
            KindFilter::Fact => MemoryKind::Fact,
            KindFilter::Perception => MemoryKind::Perception,
        }
    }
}

/// Memories, newest first (or oldest), with filters; one page.
#[derive(clap::Args, Deserialize, JsonSchema, Debug, Clone)]
pub struct List {
    #[arg(long)]
    #[serde(default)]
    pub collection: Option<String>,
    /// fact or perception.
    #[arg(long = "type", value_enum)]
    #[serde(default, rename = "type")]
    pub kind: Option<KindFilter>,
    #[arg(long)]
    #[serde(default)]
    pub category: Option<String>,
    #[arg(long, value_enum, default_value_t = StatusFilter::default())]
    #[serde(default)]
    pub status: StatusFilter,
    /// Only memories of this session.
    #[arg(long = "session", value_name = "ID")]
    #[serde(default, alias = "session")]
    pub session_id: Option<String>,
    /// Lowest confidence, 0-1.
    #[arg(long, default_value_t = 0.0)]
    #[serde(default)]
    pub min_confidence: f64,
    /// Only memories learned in the last N days.
    #[arg(long)]
    #[serde(default)]
    pub days: Option<u32>,
    /// Oldest first.
    #[arg(long)]
    #[serde(default)]
    pub oldest_first: bool,
    /// Page number, from 1.
    #[arg(long, default_value_t = default_page())]
    #[serde(default = "default_page")]
    pub page: u64,
    /// Memories per page, 1-500.
    #[arg(long, default_value_t = default_per_page())]
    #[serde(default = "default_per_page")]
    pub per_page: u32,
    /// List as the database was at this time (RFC 3339; not in the future): the memories it had then, with their
    /// text, context and state of then.
    #[arg(long, value_name = "TIME")]
    #[serde(default)]
    pub as_of: Option<String>,
}

pub fn list(db: &Db, r: &List) -> Result<Reply<MemoryPage>> {
    super::history::at(db, &r.as_of, |db| list_now(db, r))
}

fn list_now(db: &Db, r: &List) -> Result<Reply<MemoryPage>> {
    let data = db.list(&ListRequest {
        collection: given(&r.collection),
        kind: r.kind.map(KindFilter::kind),
        category: given(&r.category),
        status: r.status.status(),
        session_id: given(&r.session_id),
        min_confidence: r.min_confidence,
        days: r.days,
        oldest_first: r.oldest_first,
        offset: offset(r.page, r.per_page)?,
        limit: r.per_page,
    })?;
    Ok(Reply { json: paged(render::memory_page(&data), r.page, r.per_page), data })
}

/// The file's part in a fleet (docs/FLEET.md): who it is, what waits, what it received.
pub struct Fleet {
    pub identity: robotmem::fleet::Identity,
    pub marks: Vec<(String, i64)>,
}

/// Totals, with the fleet section when the file belongs to one.
pub fn stats(db: &Db) -> Result<Reply<(Stats, Option<Fleet>)>> {
    let s = db.stats()?;
    let mut json = render::stats(&s);
    let fleet = match db.fleet_identity()? {
        Some(identity) => Some(Fleet { identity, marks: db.fleet_marks()? }),
        None => None,
    };
    if let Some(f) = &fleet {
        let id = &f.identity;
        let marks: serde_json::Map<String, Value> = f.marks.iter().map(|(w, n)| (w.clone(), Value::from(*n))).collect();
        json["fleet"] = json!({"robot_id": id.robot_id, "instance": id.instance, "pending": id.pending,
                               "pushed": id.pushed, "last_seq": id.last_seq, "received_up_to": marks});
    }
    Ok(Reply { json, data: (s, fleet) })
}

/// How many recent failures to show.
#[derive(Deserialize, JsonSchema, Debug, Clone)]
pub struct RecentFailures {
    /// Failures to show (the newest first).
    #[serde(default = "default_recent_failures")]
    pub n: u32,
}

/// The newest memories of failures among the newest [`limits::RECENT_FAILURES_WINDOW`] (see `Db::recent_failures`).
pub fn recent_failures(db: &Db, r: &RecentFailures) -> Result<Reply<Vec<Memory>>> {
    let data = db.recent_failures(r.n, limits::RECENT_FAILURES_WINDOW)?;
    let json = json!({"memories": data.iter().map(render::memory).collect::<Vec<_>>(), "total": data.len()});
    Ok(Reply { json, data })
}

pub fn doctor(db: &Db, full: bool) -> Result<Reply<DoctorReport>> {
    let data = db.doctor(full)?;
    Ok(Reply { json: render::doctor(&data), data })
}

/// Memories read for the dashboard's outcomes per task and per robot (the newest).
const OUTCOME_WINDOW: u64 = 2_000;
/// At most this many bins on the learned-over-time axis (each is one count).
const LEARNED_BINS: i64 = 60;

/// The console's dashboard: [`stats`] with `learned` (memories learned over the
/// whole range of the file, in bins of 1 day or whole weeks, ending now) and
/// `outcomes` (successes and failures per task and per robot among the newest
/// memories, from their contexts' `task.success`, `task.name`/`task`,
/// `robot.id`/`robot`). Built from the library's public list only.
pub fn dashboard(db: &Db) -> Result<Reply<(Stats, Option<Fleet>)>> {
    let mut reply = stats(db)?;
    reply.json["learned"] = learned(db)?;
    reply.json["outcomes"] = outcomes(db)?;
    Ok(reply)
}

/// Days since 1970-01-01 of a "YYYY-MM-DD…" stamp (civil calendar, UTC).
fn epoch_day(stamp: &str) -> Option<i64> {
    let (y, m, d): (i64, i64, i64) =
        (stamp.get(0..4)?.parse().ok()?, stamp.get(5..7)?.parse().ok()?, stamp.get(8..10)?.parse().ok()?);
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    Some(era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468)
}

/// Counts per bin, oldest first: bin i of `bin_days` ends `i` bins before now.
/// A count the library gives only as a floor (a window of more than 10,000
/// memories) ends the series there: older bins are null, `exact` false.
fn learned(db: &Db) -> Result<Value> {
    let today =
        (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) / 86_400) as i64;
    let all = ListRequest { status: None, limit: 1, ..Default::default() };
    let oldest = db.list(&ListRequest { oldest_first: true, ..all })?;
    let Some(first) = oldest.memories.first().and_then(|m| epoch_day(&m.created_at)) else {
        return Ok(json!({"end_day": today, "bin_days": 1, "counts": [], "exact": true}));
    };
    let range = span(db, &all)?.unwrap_or((today - first + 1).clamp(1, 36_500));
    let bin_days = if range <= LEARNED_BINS { 1 } else { 7 * ((range + 7 * LEARNED_BINS - 1) / (7 * LEARNED_BINS)) };
    let bins = (range + bin_days - 1) / bin_days;
    let (mut counts, mut before, mut exact) = (Vec::new(), 0, true);
    for k in 1..=bins {
        let days = (k * bin_days).min(36_500) as u32;
        let p = db.list(&ListRequest { days: Some(days), ..all })?;
        if !p.total_exact {
            exact = false;
            counts.extend(std::iter::repeat_n(Value::Null, (bins - k + 1) as usize));
            break;
        }
        counts.push((p.total - before).max(0).into());
        before = p.total;
    }
    counts.reverse();
    Ok(json!({"end_day": today, "bin_days": bin_days, "counts": counts, "exact": exact}))
}

/// Days back from now that hold every memory (imports keep their dates, so the
/// lowest id need not be the oldest): the smallest window counting them all,
/// by bisection; `None` when a window's count is only a floor.
fn span(db: &Db, all: &ListRequest) -> Result<Option<i64>> {
    let total = db.list(all)?.total;
    let covers = |days: i64| -> Result<Option<bool>> {
        let p = db.list(&ListRequest { days: Some(days as u32), ..*all })?;
        Ok(p.total_exact.then_some(p.total >= total))
    };
    let (mut lo, mut hi) = (1, 36_500);
    if covers(hi)? != Some(true) {
        return Ok(None);
    }
    while lo < hi {
        let mid = (lo + hi) / 2;
        match covers(mid)? {
            Some(true) => hi = mid,
            Some(false) => lo = mid + 1,
            None => return Ok(None),
        }
    }
    Ok(Some(lo))
}

/// The robot and task a context names, and whether the task succeeded.
fn context_outcome(context: &str) -> (Option<String>, Option<String>, Option<bool>) {
    let v: Value = serde_json::from_str(context).unwrap_or(Value::Null);
    let name = |x: &Value, key: &str| match x {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get(key).and_then(Value::as_str).map(str::to_string),
        _ => None,
    };
    (name(&v["robot"], "id"), name(&v["task"], "name"), v["task"]["success"].as_bool())
}

fn outcomes(db: &Db) -> Result<Value> {
    use std::collections::BTreeMap;
    let (mut tasks, mut robots) = (BTreeMap::<String, [i64; 2]>::new(), BTreeMap::<String, [i64; 2]>::new());
    let mut read = 0;
    while read < OUTCOME_WINDOW {
        let p =
            db.list(&ListRequest { status: None, offset: read, limit: limits::MAX_PER_PAGE, ..Default::default() })?;
        read += p.memories.len() as u64;
        for m in &p.memories {
            let (robot, task, success) = context_outcome(&m.context);
            let Some(ok) = success else { continue };
            for (map, key) in [(&mut tasks, task), (&mut robots, robot)] {
                map.entry(key.unwrap_or_else(|| "(not named)".into())).or_default()[usize::from(!ok)] += 1;
            }
        }
        if p.memories.len() < limits::MAX_PER_PAGE as usize {
            break;
        }
    }
    let rows = |m: BTreeMap<String, [i64; 2]>| {
        let mut v: Vec<_> = m.into_iter().collect();
        v.sort_by_key(|(_, [s, f])| std::cmp::Reverse((*f, *s)));
        v.truncate(12);
        v.into_iter().map(|(name, [s, f])| json!({"name": name, "success": s, "failure": f})).collect::<Vec<_>>()
    };
    Ok(json!({"memories_read": read, "by_task": rows(tasks), "by_robot": rows(robots)}))
}
