//! The engine's session side: episodes begin and end (outcome, decay,
//! consolidation, proactive recall of related experience).

use super::Db;
use crate::error::Result;
use crate::limits;
use crate::search;
use crate::session;
use crate::text;
use crate::types::*;

/// Related memories returned by end_session.
const RELATED_N: i64 = 5;

impl Db {
    /// Begins an episode and returns its UUID.
    pub fn start_session(&self, collection: Option<&str>, context: Option<&str>) -> Result<SessionStarted> {
        let collection = self.collection(collection)?;
        let ctx = limits::context("context", context)?;
        let id = uuid::Uuid::new_v4().to_string();
        self.write(|tx| {
            session::create(tx, &id, collection, Some(ctx.as_str()).filter(|c| !c.is_empty()), &self.now())?;
            Ok(SessionStarted {
                session_id: id.clone(),
                collection: collection.to_string(),
                active_memories_count: session::active_count(tx, collection)?,
            })
        })
    }

    /// Ends an episode: records the outcome, decays, consolidates, and returns
    /// related experience from other sessions.
    pub fn end_session(&self, session_id: &str, outcome_score: Option<f64>) -> Result<SessionEnded> {
        let sid = limits::required_text("session_id", session_id, 1, limits::MAX_NAME_CHARS)?;
        let score = outcome_score.map(|s| limits::unit_range("outcome_score", s, 0.0, 1.0)).transpose()?;
        let (collection, summary, decayed_count, consolidated) = self.write(|tx| {
            let row = session::require_active(tx, sid)?;
            let now = self.now();
            let consolidated = session::consolidate(tx, sid, &row.collection, &now)?;
            let decayed = session::apply_decay(tx, &now)?;
            session::finish(tx, sid, score, &now)?;
            Ok((row.collection.clone(), session::summarize(tx, sid)?, decayed, consolidated))
        })?;
        let related = self.related(sid, &collection)?;
        Ok(SessionEnded {
            session_id: sid.to_string(),
            collection,
            outcome_score: score,
            summary,
            decayed_count,
            consolidated,
            related,
        })
    }

    /// Proactive recall: memories of other sessions related to what this one stored.
    fn related(&self, sid: &str, collection: &str) -> Result<Vec<Hit>> {
        self.store.read(|conn| {
            let words = text::query_words(&session::topic(conn, sid)?);
            if words.is_empty() {
                return Ok(Vec::new());
            }
            let plan = search::Plan {
                collection,
                words,
                n: RELATED_N as usize,
                min_confidence: 0.3,
                session_id: None,
                exclude_session: Some(sid),
                filter: None,
                spatial: None,
                rrf_k: self.opts.rrf_k,
                points: None,
                columns: None,
                checker: Default::default(),
            };
            Ok(self.hits(conn, &plan, None, 0.0)?.0)
        })
    }
}
