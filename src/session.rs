//! Session stage: episodes, their summary, time decay and consolidation.

use rusqlite::{params, Connection, OptionalExtension};

use crate::classify;
use crate::error::{Error, Result, Status};
use crate::fingerprint::Terms;
use crate::store::memory;
use crate::text;
use crate::types::{Consolidation, SessionSummary};

/// Jaccard similarity above which memories of one session are merged.
pub const CONSOLIDATION_THRESHOLD: f64 = text::SIMILAR_JACCARD;
/// Memories at or above this confidence are never consolidated.
pub const CONSOLIDATION_MAX_CONFIDENCE: f64 = 0.95;
/// Decay never touches confidences at or below this floor.
pub const DECAY_FLOOR: f64 = 0.05;

pub struct SessionRow {
    pub collection: String,
    pub status: String,
}

pub fn create(conn: &Connection, id: &str, collection: &str, context: Option<&str>, now: &str) -> Result<()> {
    conn.prepare_cached("INSERT INTO sessions (external_id, collection, context, created_at) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![id, collection, context, now])?;
    Ok(())
}

pub fn get(conn: &Connection, id: &str) -> Result<Option<SessionRow>> {
    Ok(conn
        .prepare_cached("SELECT collection, status FROM sessions WHERE external_id = ?1")?
        .query_row([id], |r| Ok(SessionRow { collection: r.get(0)?, status: r.get(1)? }))
        .optional()?)
}

/// Fails with NotFound unless the session exists.
pub fn require(conn: &Connection, id: &str) -> Result<SessionRow> {
    get(conn, id)?
        .ok_or_else(|| Error::not_found(format!("session {id:?} does not exist (start one with start_session)")))
}

impl SessionRow {
    /// Fails with InvalidState if the session (`id`) has ended.
    pub fn ensure_active(&self, id: &str) -> Result<()> {
        if self.status != "active" {
            return Err(Error::new(Status::InvalidState, format!("session {id:?} has ended; start a new session")));
        }
        Ok(())
    }
}

/// Fails with NotFound unless the session exists, InvalidState if it has ended.
pub fn require_active(conn: &Connection, id: &str) -> Result<SessionRow> {
    let row = require(conn, id)?;
    row.ensure_active(id)?;
    Ok(row)
}

pub fn active_count(conn: &Connection, collection: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT count(*) FROM memories WHERE collection = ?1 AND status = 'active'")?
        .query_row([collection], |r| r.get(0))?)
}

/// Marks the session ended and records the outcome score.
pub fn finish(conn: &Connection, id: &str, score: Option<f64>, now: &str) -> Result<()> {
    conn.prepare_cached("UPDATE sessions SET status = 'ended', ended_at = ?2 WHERE external_id = ?1")?
        .execute(params![id, now])?;
    if let Some(s) = score {
        conn.prepare_cached("INSERT INTO session_outcomes (session_id, score, created_at) VALUES (?1, ?2, ?3)")?
            .execute(params![id, s, now])?;
    }
    Ok(())
}

/// Counts of the session's memories (all statuses) by type and by category.
pub fn summarize(conn: &Connection, id: &str) -> Result<SessionSummary> {
    let group = |col: &str| -> Result<Vec<(String, i64)>> {
        let sql = format!("SELECT {col}, count(*) FROM memories WHERE session_id = ?1 GROUP BY 1 ORDER BY 1");
        let mut st = conn.prepare_cached(&sql)?;
        let rows = st.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    };
    let by_type = group("type")?;
    let by_category = group("category")?;
    Ok(SessionSummary { memory_count: by_type.iter().map(|(_, n)| n).sum(), by_type, by_category })
}

/// Time decay: `confidence = base × (1 − decay_rate)^days`, `days` the whole days
/// since the last access (else creation) and `base` the confidence at that time.
/// The result depends only on elapsed whole days, so repeated calls never
/// compound. Protected categories and confidences ≤ 0.05 are left alone.
///
/// Each memory stores when its next whole day elapses (`decay_next_at`, indexed),
/// so a call reads only the memories whose value changes now, not every memory.
/// Returns how many memories changed.
pub fn apply_decay(conn: &Connection, now: &str) -> Result<i64> {
    let protected = classify::PROTECTED.map(|c| format!("'{c}'")).join(", ");
    let anchor = "coalesce(last_accessed, created_at)";
    let sql = format!(
        "SELECT id, coalesce(decay_base, confidence), decay_rate, confidence, category,
                CAST(julianday(?1) - julianday({anchor}) AS INTEGER), {anchor}
         FROM memories INDEXED BY idx_mem_decay
         WHERE decay_next_at <= ?1 AND status = 'active'"
    );
    let mut due = Vec::new();
    {
        let mut st = conn.prepare_cached(&sql)?;
        let mut rows = st.query([now])?;
        while let Some(r) = rows.next()? {
            let row: (i64, f64, f64, f64, String, i64, String) =
                (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?);
            due.push(row);
        }
    }
    let mut up = conn.prepare_cached(
        "UPDATE memories SET confidence = ?2, decay_base = ?3,
            decay_next_at = CASE WHEN ?4 THEN NULL
                                 ELSE strftime('%Y-%m-%dT%H:%M:%fZ', ?5, '+' || ?6 || ' days') END
         WHERE id = ?1",
    )?;
    let mut changed = 0;
    for (id, base, rate, current, category, days, anchor) in due {
        let value = decayed(base, rate, days);
        let done = protected.contains(&format!("'{category}'")) || value <= DECAY_FLOOR;
        up.execute(params![id, value, base, done, anchor, days.max(0) + 1])?;
        if (value - current).abs() > 1e-12 {
            changed += 1;
        }
    }
    Ok(changed)
}

/// `base × (1 − rate)^days`, never below the floor once above it.
pub fn decayed(base: f64, rate: f64, days: i64) -> f64 {
    if base <= DECAY_FLOOR || days < 1 {
        return base;
    }
    base * (1.0 - rate).powi(days.min(i32::MAX as i64) as i32)
}

struct Candidate {
    id: i64,
    category: String,
    confidence: f64,
    access_count: i64,
    terms: Terms,
}

/// Consolidation of one session (spec 000): within each category, greedy clusters
/// whose members all have pairwise Jaccard > 0.50 — and, unlike the original, only
/// memories that state the same fact ([`Terms::same_fact_above`]: the same numbers
/// and success/failure outcome, one text's words holding the other's, none
/// substituted, in the same order). So no memory is retired that carries a fact the
/// survivor lacks: "the egg" is not merged into "the tin can", nor 12.5N into 15N.
/// The survivor holds every word of the others (the members' word sets are nested,
/// so one holds them all); among equal texts, the highest confidence, then access
/// count, then the newest. The others are superseded (still readable by id).
pub fn consolidate(conn: &Connection, session: &str, collection: &str, now: &str) -> Result<Consolidation> {
    let protected = classify::PROTECTED.map(|c| format!("'{c}'")).join(", ");
    // An expired memory is not merged into (or kept as) a live one.
    let live = crate::store::memory::not_expired!();
    let sql = format!(
        "SELECT id, category, confidence, access_count, content FROM memories
         WHERE session_id = ?1 AND collection = ?2 AND status = 'active' AND type = 'fact' AND {live}
           AND confidence < {CONSOLIDATION_MAX_CONFIDENCE} AND category NOT IN ({protected})
         ORDER BY category, id"
    );
    let mut st = conn.prepare_cached(&sql)?;
    let cands: Vec<Candidate> = st
        .query_map(params![session, collection], |r| {
            let content: String = r.get(4)?;
            Ok(Candidate {
                id: r.get(0)?,
                category: r.get(1)?,
                confidence: r.get(2)?,
                access_count: r.get(3)?,
                terms: Terms::of(&content),
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let total = cands.len();
    if total < 3 {
        return Ok(Consolidation::default());
    }
    let mut clusters: Vec<Vec<usize>> = Vec::new();
    for (i, c) in cands.iter().enumerate() {
        let home = clusters.iter_mut().find(|cl| {
            cl.iter().all(|&j| {
                let o = &cands[j];
                o.category == c.category && o.terms.same_fact_above(&c.terms, CONSOLIDATION_THRESHOLD).is_some()
            })
        });
        match home {
            Some(cl) => cl.push(i),
            None => clusters.push(vec![i]),
        }
    }
    let mut result = Consolidation::default();
    let mut sims = Vec::new();
    for cl in clusters.iter().filter(|cl| cl.len() > 1) {
        let rep = *cl
            .iter()
            .max_by(|&&a, &&b| {
                let (a, b) = (&cands[a], &cands[b]);
                a.terms
                    .set
                    .len()
                    .cmp(&b.terms.set.len())
                    .then(a.confidence.partial_cmp(&b.confidence).unwrap_or(std::cmp::Ordering::Equal))
                    .then(a.access_count.cmp(&b.access_count))
                    .then(a.id.cmp(&b.id))
            })
            .expect("cluster is not empty");
        for (x, &a) in cl.iter().enumerate() {
            for &b in &cl[x + 1..] {
                sims.push(text::jaccard_sets(&cands[a].terms.set, &cands[b].terms.set));
            }
            if a != rep {
                memory::supersede(conn, cands[a].id, cands[rep].id, now)?;
                result.superseded_count += 1;
            }
        }
        result.merged_groups += 1;
    }
    result.compression_ratio = result.superseded_count as f64 / total as f64;
    if !sims.is_empty() {
        result.avg_similarity = sims.iter().sum::<f64>() / sims.len() as f64;
    }
    Ok(result)
}

/// Text describing what a session was about: its memories' content, newest first,
/// used as the query of proactive recall.
pub fn topic(conn: &Connection, session: &str) -> Result<String> {
    let mut st = conn.prepare_cached(
        "SELECT content FROM memories WHERE session_id = ?1 AND status = 'active' ORDER BY id DESC LIMIT 20",
    )?;
    let rows = st.query_map([session], |r| r.get::<_, String>(0))?;
    let parts: Vec<String> = rows.collect::<rusqlite::Result<_>>()?;
    Ok(parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decay_cases() {
        assert!((decayed(0.9, 0.01, 0) - 0.9).abs() < 1e-3);
        assert!((decayed(0.9, 0.01, 30) - 0.6657).abs() < 1e-3);
        assert!((decayed(0.04, 0.01, 100) - 0.04).abs() < 1e-3);
    }

    #[test]
    fn outcome_polarity() {
        let o = |t: &str| Terms::of(t).outcome;
        assert_eq!(o("grasp succeeded at 37.8N"), 1);
        assert_eq!(o("grasp failed: slipped at 9.1N"), -1);
        assert_eq!(o("approach from the left"), 0);
        // Issue 11: outcome words inside identifiers are not outcomes.
        assert_eq!(o("place cup: place_error=0.01 result=success"), 1);
        assert_eq!(o("place cup: place_error=0.01 result=fail"), -1);
        assert_eq!(o("error_count=0 GRASP_SUCCEEDED flag set"), 0);
        assert_eq!(o("抓取失败"), -1);
    }
}
