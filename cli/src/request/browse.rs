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
}

pub fn list(db: &Db, r: &List) -> Result<Reply<MemoryPage>> {
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
