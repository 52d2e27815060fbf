//! Request and result types of looking into a file: listings, totals,
//! sessions, the health check (`Db::list`, `stats`, `sessions`, `doctor`).

use super::{Memory, MemoryKind, MemoryStatus};

/// Parameters of [`crate::Db::list`]: memories in id order with filters, one page.
#[derive(Debug, Clone, Copy)]
pub struct ListRequest<'a> {
    pub collection: Option<&'a str>,
    pub kind: Option<MemoryKind>,
    pub category: Option<&'a str>,
    /// `None`: every status. Default `Some(Active)`.
    pub status: Option<MemoryStatus>,
    pub session_id: Option<&'a str>,
    /// 0–1. Default 0.
    pub min_confidence: f64,
    /// Only memories learned in the last `days` days (1–36500).
    pub days: Option<u32>,
    /// Oldest first (a session's timeline); default newest first.
    pub oldest_first: bool,
    /// Memories to skip (page × limit), ≤ 10,000,000.
    pub offset: u64,
    /// Page size, 1–500. Default [`crate::limits::DEFAULT_PER_PAGE`] (25).
    pub limit: u32,
}

impl Default for ListRequest<'_> {
    fn default() -> Self {
        ListRequest {
            collection: None,
            kind: None,
            category: None,
            status: Some(MemoryStatus::Active),
            session_id: None,
            min_confidence: 0.0,
            days: None,
            oldest_first: false,
            offset: 0,
            limit: crate::limits::DEFAULT_PER_PAGE,
        }
    }
}

/// One page of [`crate::Db::list`].
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryPage {
    pub memories: Vec<Memory>,
    /// Memories that pass the filters (all pages); at most 10,000 when `total_exact`
    /// is false (a filter no index answers is counted only that far).
    pub total: i64,
    pub total_exact: bool,
}

/// Memories of one collection.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectionCount {
    pub collection: String,
    pub active: i64,
    pub total: i64,
}

/// [`crate::Db::stats`]: what a file holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Every memory, whatever its status.
    pub memories: i64,
    pub active: i64,
    pub superseded: i64,
    /// Forgotten memories.
    pub invalidated: i64,
    /// Active memories whose expiry has passed (not counted in `active`).
    pub expired: i64,
    /// Active memories per type, category and perception type, (name, count) sorted by name.
    pub by_type: Vec<(String, i64)>,
    pub by_category: Vec<(String, i64)>,
    pub by_perception: Vec<(String, i64)>,
    pub collections: Vec<CollectionCount>,
    /// Memories learned per UTC day ("YYYY-MM-DD", count), the last 30 days with any, oldest first.
    pub per_day: Vec<(String, i64)>,
    /// Active memories per confidence tenth: [0, 0.1), [0.1, 0.2), … [0.9, 1.0].
    pub confidence: [i64; 10],
    pub sessions: i64,
    pub active_sessions: i64,
    /// Recalls recorded in this file, and those whose query matched no memory.
    pub recalls: i64,
    pub zero_hit_recalls: i64,
    /// Size of the database file and of its write-ahead log (0 in memory).
    pub db_bytes: u64,
    pub wal_bytes: u64,
}

/// One session of [`crate::Db::sessions`].
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    pub session_id: String,
    pub collection: String,
    /// "active" or "ended".
    pub status: String,
    pub context: Option<String>,
    pub created_at: String,
    pub ended_at: Option<String>,
    /// The latest outcome score given at `end_session`.
    pub outcome_score: Option<f64>,
    /// Memories learned in the session (any status).
    pub memory_count: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SessionPage {
    pub sessions: Vec<SessionInfo>,
    pub total: i64,
}

/// One finding of [`crate::Db::doctor`].
#[derive(Debug, Clone, PartialEq)]
pub struct DoctorCheck {
    pub name: &'static str,
    pub ok: bool,
    /// What was found.
    pub detail: String,
    /// What to do about it (empty when ok).
    pub fix: String,
}

/// [`crate::Db::doctor`].
#[derive(Debug, Clone, PartialEq)]
pub struct DoctorReport {
    pub checks: Vec<DoctorCheck>,
    pub schema_version: i32,
    pub memories: i64,
    pub db_bytes: u64,
    pub wal_bytes: u64,
}

impl DoctorReport {
    /// Whether every check passed.
    pub fn ok(&self) -> bool {
        self.checks.iter().all(|c| c.ok)
    }
}
