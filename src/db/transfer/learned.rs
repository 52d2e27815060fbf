//! The minimal lines of an import (`{"text": ...}`, no `kind`): experiences from
//! a robot's log, stored as `learn` stores them — classified, deduplicated,
//! embedded — at the time the line gives, in the import's batches.

use rusqlite::Connection;

use super::record::LearnIn;
use super::LineOutcome;
use crate::db::{Db, Draft, DraftRequest};
use crate::error::Result;
use crate::limits;
use crate::session;
use crate::store::transfer::{self as sql, SessionRecord};
use crate::types::MemoryKind;

/// `client_type` of the sessions a minimal line's `session_id` makes.
const IMPORT_CLIENT: &str = "import";

impl Db {
    /// The draft of a line to learn, as `learn` makes it.
    pub(super) fn learn_draft<'a>(&'a self, l: &'a LearnIn) -> Result<Draft<'a>> {
        let fields = DraftRequest {
            tags: &[],
            context: l.context.as_deref(),
            collection: l.collection.as_deref(),
            session_id: l.session_id.as_deref(),
            perception: None,
            ttl_seconds: l.ttl_seconds,
            expires_at: l.expires_at.as_deref(),
        };
        let mut d = self.draft(MemoryKind::Fact, &l.text, fields)?;
        let tags: Vec<&str> = l.tags.iter().map(String::as_str).collect();
        d.user_tags = limits::user_tags(&tags)?;
        Ok(d)
    }

    /// Stores a line to learn inside the caller's savepoint, unless learn's
    /// dedup finds it stored. A `session_id` the database does not know makes an
    /// ended session of the line's collection, spanning the times of its lines
    /// (an episode of the log); a known session takes the line whatever its state.
    /// `made` counts the sessions made.
    pub(super) fn import_learned(
        &self,
        tx: &Connection,
        l: &LearnIn,
        d: &Draft,
        made: &mut u64,
    ) -> Result<LineOutcome> {
        let at = l.time.clone().unwrap_or_else(|| self.now());
        if let Some(s) = d.session {
            if session::get(tx, s)?.is_none() {
                let row = SessionRecord {
                    id: s.to_string(),
                    collection: d.collection.to_string(),
                    context: None,
                    session_count: 1,
                    status: "ended".into(),
                    client_type: IMPORT_CLIENT.into(),
                    created_at: at.clone(),
                    ended_at: Some(at.clone()),
                };
                *made += sql::insert_session(tx, &row, &[])? as u64;
            } else {
                sql::widen_session(tx, s, IMPORT_CLIENT, &at)?;
            }
        }
        let vec_ok = d.vector.is_some() && self.vectors_ready(tx)?;
        if let Some(dup) = self.find_fact_duplicate(tx, d, vec_ok, None)? {
            return Ok(LineOutcome::Duplicate { existing_id: dup.existing_id });
        }
        let stored = self.insert_draft(tx, d, vec_ok, &at)?;
        Ok(LineOutcome::Memory { id: stored.id, vector: stored.embedded })
    }
}
