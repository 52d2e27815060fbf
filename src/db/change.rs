//! Changes of one memory on a [`Db`]: forget (soft delete, with a reason) and
//! update (new text, re-classified, re-hashed, re-indexed). Each keeps the
//! version it replaces (`store::history`).

use rusqlite::Connection;

use super::Db;
use crate::classify;
use crate::dedup;
use crate::error::{Error, Result, Status};
use crate::fingerprint::{self, Terms};
use crate::limits::{self, MAX_CONTENT_CHARS, MAX_REASON_CHARS};
use crate::search;
use crate::store::memory;
use crate::types::*;

impl Db {
    /// Loads an active memory for modification, with precise errors.
    pub(super) fn active(conn: &Connection, id: i64, verb: &str) -> Result<Memory> {
        let m = memory::get(conn, id)?.ok_or_else(|| Error::not_found(format!("memory #{id} does not exist")))?;
        if m.status != MemoryStatus::Active {
            return Err(Error::new(
                Status::InvalidState,
                format!("memory #{id} is {}; cannot {verb} it", m.status.as_str()),
            ));
        }
        Ok(m)
    }

    /// Soft-deletes a memory: it stays in the file for audit, out of every search.
    pub fn forget(&self, id: i64, reason: &str) -> Result<ForgetOutcome> {
        let id = limits::memory_id(id)?;
        let reason = limits::required_text("reason", reason, 1, MAX_REASON_CHARS)?;
        self.write(|tx| {
            // A damaged memory can be forgotten (that is the way out); its text is not returned.
            let content = match Self::active(tx, id, "forget") {
                Ok(m) => m.content,
                Err(e) if e.status == Status::Corrupt && memory::is_active(tx, id)? => String::new(),
                Err(e) => return Err(e),
            };
            memory::invalidate(tx, id, reason, &self.now(), None)?;
            Ok(ForgetOutcome { memory_id: id, content, reason: reason.to_string() })
        })
    }

    /// Replaces a memory's content (and optionally its context), re-classifying it
    /// and refreshing its hash, summary, index entry and automatic tags.
    pub fn update(&self, id: i64, new_content: &str, context: Option<&str>) -> Result<UpdateOutcome> {
        let id = limits::memory_id(id)?;
        let content = limits::required_text("new_content", new_content, 1, MAX_CONTENT_CHARS)?;
        // None keeps the context; Some (even "") replaces it.
        let new_ctx = context.map(|c| limits::context("context", Some(c))).transpose()?;
        let vector = self.embed_passages(&[content]).pop().flatten();
        self.write(|tx| {
            let old = Self::active(tx, id, "update")?;
            let (ctx_text, ctx) = match &new_ctx {
                // Classified on the user's context, as at learn: not on the stored
                // {"source": ...} marker, whose length alone would add a signal.
                None => (classify::user_context(&old.context), serde_json::from_str(&old.context).unwrap_or_default()),
                Some(c) => {
                    let source =
                        if old.kind == MemoryKind::Fact { classify::LEARN_SOURCE } else { classify::PERCEPTION_SOURCE };
                    (c.clone(), classify::build_context_json_with_source(c, source))
                }
            };
            let (cls, hash) = match old.kind {
                MemoryKind::Fact => (classify::classify(content, &ctx_text), fingerprint::fact_hash(content)),
                MemoryKind::Perception => (
                    classify::classify_perception(content, &ctx_text),
                    fingerprint::perception_hash(
                        content,
                        old.perception_type.unwrap_or_default().as_str(),
                        old.perception_data.as_deref(),
                        old.perception_metadata.as_deref(),
                    ),
                ),
            };
            if let Some(d) = dedup::exact(tx, &old.collection, &hash, Some(id))? {
                return Err(Error::new(
                    Status::Duplicate,
                    format!("memory #{} already holds this content in collection {:?}", d.existing_id, old.collection),
                ));
            }
            let now = self.now();
            let terms = Terms::of(content);
            let ctx_json = serde_json::to_string(&ctx)?;
            let rewrite = memory::Rewrite {
                content,
                category: cls.category,
                confidence: cls.confidence,
                content_hash: &hash,
                context: &ctx_json,
                is_real: search::is_real_world(&ctx),
                scope: &cls.scope,
                terms: &terms,
                now: &now,
                remote: None,
                expiry: None,
            };
            memory::rewrite(tx, id, &rewrite)?;
            memory::unindex(tx, id)?; // the old text's vector
            memory::set_auto_tags(tx, id, &cls.tags)?;
            if self.vectors_ready(tx)? {
                self.store_embedding(tx, id, &old.collection, vector.as_ref())?;
            }
            Ok(UpdateOutcome {
                memory_id: id,
                old_content: old.content,
                new_content: content.to_string(),
                category: cls.category.to_string(),
                confidence: cls.confidence,
                tags: cls.tags.clone(),
            })
        })
    }
}
