//! JSON renderings of results, shaped like the spec's API reference. Used for
//! logging and bridging (the C ABI's `rm_*_json` functions, ROS string fields).

use serde_json::{json, Map, Value};

use crate::types::*;

/// The context fields the spec lifts to the top level of a recalled memory.
pub const LIFTED_FIELDS: [&str; 4] = ["params", "spatial", "robot", "task"];

/// Parses a stored context (always an object; anything else gives an empty map).
pub fn context_map(context: &str) -> Map<String, Value> {
    match serde_json::from_str(context) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

pub fn memory(m: &Memory) -> Value {
    let ctx = context_map(&m.context);
    let mut v = json!({
        "id": m.id,
        "collection": m.collection,
        "session_id": m.session_id,
        "type": m.kind.as_str(),
        "content": m.content,
        "human_summary": m.human_summary,
        "category": m.category,
        "confidence": m.confidence,
        "status": m.status.as_str(),
        "superseded_by": m.superseded_by,
        "context": m.context,
        "perception_type": m.perception_type.map(PerceptionType::as_str),
        "perception_metadata": m.perception_metadata,
        "access_count": m.access_count,
        "last_accessed": m.last_accessed,
        "created_at": m.created_at,
        "updated_at": m.updated_at,
        "expires_at": m.expires_at,
        "expired": m.expired,
    });
    let obj = v.as_object_mut().expect("object literal");
    if let Some(data) = &m.perception_data {
        obj.insert("perception_data".into(), perception_data(data));
    }
    for key in LIFTED_FIELDS {
        if let Some(x) = ctx.get(key) {
            obj.insert(key.into(), x.clone());
        }
    }
    v
}

/// Perception data: the JSON value when the bytes are JSON, a string when they
/// are other UTF-8 text, else `{"base64": "…"}`.
fn perception_data(data: &[u8]) -> Value {
    match std::str::from_utf8(data) {
        Ok(s) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_string())),
        Err(_) => json!({ "base64": base64(data) }),
    }
}

/// Standard base64 with padding (RFC 4648).
pub fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub fn hit(h: &Hit) -> Value {
    let mut v = memory(&h.memory);
    let obj = v.as_object_mut().expect("object");
    obj.insert("_rrf_score".into(), json!(h.score));
    obj.insert("_matched".into(), json!(h.matched));
    if let Some(l) = h.lexical {
        obj.insert("_lexical".into(), json!(l));
    }
    if let Some(c) = h.cosine {
        obj.insert("_cosine".into(), json!(c));
    }
    if let Some(d) = h.distance {
        obj.insert("_distance".into(), if d.is_finite() { json!(d) } else { Value::Null });
    }
    if !h.similar.is_empty() {
        obj.insert("_similar".into(), json!(h.similar));
    }
    v
}

pub fn recall(r: &RecallResult) -> Value {
    json!({
        "memories": r.hits.iter().map(hit).collect::<Vec<_>>(),
        "total": r.hits.len(),
        "mode": r.mode.as_str(),
        "query_vector": r.query_vector.as_str(),
        "query_ms": r.query_ms,
    })
}

fn duplicate(memory_id: i64, d: &Duplicate) -> Value {
    json!({
        "status": "duplicate",
        "method": d.method.as_str(),
        "existing_id": memory_id,
        "similarity": d.similarity,
    })
}

pub fn learn(o: &LearnOutcome) -> Value {
    match &o.duplicate {
        Some(d) => duplicate(o.memory_id, d),
        None => json!({
            "status": "created",
            "memory_id": o.memory_id,
            "auto_inferred": {
                "category": o.category,
                "confidence": o.confidence,
                "tags": o.tags,
                "scope_files": o.scope_files,
            },
            "has_embedding": o.has_embedding,
        }),
    }
    .with_evicted(&o.evicted)
}

pub fn perception(o: &PerceptionOutcome) -> Value {
    match &o.duplicate {
        Some(d) => duplicate(o.memory_id, d),
        None => json!({
            "status": "created",
            "memory_id": o.memory_id,
            "perception_type": o.perception_type.as_str(),
            "collection": o.collection,
            "has_embedding": o.has_embedding,
        }),
    }
    .with_evicted(&o.evicted)
}

/// Adds `"evicted": [ids]` to a write's rendering when the memory budget made
/// it evict (absent: nothing was evicted).
trait WithEvicted {
    fn with_evicted(self, ids: &[i64]) -> Value;
}

impl WithEvicted for Value {
    fn with_evicted(mut self, ids: &[i64]) -> Value {
        if let (false, Some(o)) = (ids.is_empty(), self.as_object_mut()) {
            o.insert("evicted".into(), json!(ids));
        }
        self
    }
}

pub fn purge(o: &PurgeOutcome) -> Value {
    json!({
        "status": "purged",
        "purged": o.purged,
        "batches": o.batches,
        "reclaimed_bytes": o.reclaimed_bytes,
        "live_bytes": o.live_bytes,
    })
}

pub fn forget(o: &ForgetOutcome) -> Value {
    json!({ "status": "forgotten", "memory_id": o.memory_id, "content": o.content, "reason": o.reason })
}

pub fn update(o: &UpdateOutcome) -> Value {
    json!({
        "status": "updated",
        "memory_id": o.memory_id,
        "old_content": o.old_content,
        "new_content": o.new_content,
        "auto_inferred": { "category": o.category, "confidence": o.confidence, "tags": o.tags },
    })
}

pub fn session_started(s: &SessionStarted) -> Value {
    json!({
        "session_id": s.session_id,
        "collection": s.collection,
        "active_memories_count": s.active_memories_count,
    })
}

fn counts(c: &[(String, i64)]) -> Value {
    Value::Object(c.iter().map(|(k, n)| (k.clone(), json!(n))).collect())
}

pub fn session_ended(s: &SessionEnded) -> Value {
    json!({
        "status": "ended",
        "session_id": s.session_id,
        "collection": s.collection,
        "outcome_score": s.outcome_score,
        "summary": {
            "memory_count": s.summary.memory_count,
            "by_type": counts(&s.summary.by_type),
            "by_category": counts(&s.summary.by_category),
        },
        "decayed_count": s.decayed_count,
        "consolidated": {
            "merged_groups": s.consolidated.merged_groups,
            "superseded_count": s.consolidated.superseded_count,
            "compression_ratio": s.consolidated.compression_ratio,
            "avg_similarity": s.consolidated.avg_similarity,
        },
        "related_memories": s.related.iter().map(hit).collect::<Vec<_>>(),
    })
}

/// A page of [`crate::Db::list`].
pub fn memory_page(p: &MemoryPage) -> Value {
    json!({ "memories": p.memories.iter().map(memory).collect::<Vec<_>>(), "total": p.total, "total_exact": p.total_exact })
}

/// [`crate::Db::stats`].
pub fn stats(s: &Stats) -> Value {
    json!({
        "memories": s.memories, "active": s.active, "superseded": s.superseded, "forgotten": s.invalidated, "expired": s.expired,
        "by_type": counts(&s.by_type), "by_category": counts(&s.by_category), "by_perception": counts(&s.by_perception),
        "collections": s.collections.iter()
            .map(|c| json!({"collection": c.collection, "active": c.active, "total": c.total}))
            .collect::<Vec<_>>(),
        "per_day": s.per_day.iter().map(|(d, n)| json!({"day": d, "count": n})).collect::<Vec<_>>(),
        "confidence_histogram": s.confidence,
        "sessions": s.sessions, "active_sessions": s.active_sessions,
        "recalls": s.recalls, "zero_hit_recalls": s.zero_hit_recalls,
        "db_bytes": s.db_bytes, "wal_bytes": s.wal_bytes,
    })
}

/// One session of [`crate::Db::sessions`].
pub fn session_info(s: &SessionInfo) -> Value {
    json!({
        "session_id": s.session_id, "collection": s.collection, "status": s.status, "context": s.context,
        "created_at": s.created_at, "ended_at": s.ended_at, "outcome_score": s.outcome_score,
        "memory_count": s.memory_count,
    })
}

pub fn session_page(p: &SessionPage) -> Value {
    json!({ "sessions": p.sessions.iter().map(session_info).collect::<Vec<_>>(), "total": p.total })
}

/// [`crate::Db::doctor`].
pub fn doctor(r: &DoctorReport) -> Value {
    json!({
        "ok": r.ok(), "schema_version": r.schema_version, "memories": r.memories,
        "db_bytes": r.db_bytes, "wal_bytes": r.wal_bytes,
        "checks": r.checks.iter()
            .map(|c| json!({"name": c.name, "ok": c.ok, "detail": c.detail, "fix": c.fix}))
            .collect::<Vec<_>>(),
    })
}

pub fn embedding_status(s: &EmbeddingStatus) -> Value {
    json!({
        "state": s.state.as_str(),
        "model": s.model,
        "dim": s.dim,
        "stored_model": s.stored_model,
        "pending": s.pending,
        "kernel": s.kernel,
        "reason": s.reason,
        "index_kernel": s.index_kernel,
    })
}

/// A memory's versions, oldest first ([`crate::Db::history`]).
pub fn history(id: i64, versions: &[MemoryVersion]) -> Value {
    let list: Vec<Value> = versions
        .iter()
        .map(|v| {
            json!({
                "version": v.version,
                "writer": v.writer,
                "content": v.content,
                "context": v.context,
                "category": v.category,
                "confidence": v.confidence,
                "status": v.status.as_str(),
                "superseded_by": v.superseded_by,
                "invalidated_reason": v.invalidated_reason,
                "expires_at": v.expires_at,
                "valid_from": v.valid_from,
                "valid_to": v.valid_to,
                "cause": v.cause,
                "cause_writer": v.cause_writer,
            })
        })
        .collect();
    json!({ "memory_id": id, "versions": list })
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_rfc4648_vectors() {
        for (i, o) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foobar", "Zm9vYmFy")] {
            assert_eq!(super::base64(i.as_bytes()), o);
        }
    }
}
