//! Text output for people. Scripts use `--json` (the library's renderings).

use std::fmt::Write;

use robotmem::{
    EmbeddingStatus, Hit, LearnOutcome, Memory, MemoryStatus, MemoryVersion, PerceptionOutcome, RecallResult,
    SessionEnded,
};

/// A text on one line: newlines and other control characters shown escaped, so a
/// memory cannot forge lines of the listing (or move the terminal's cursor).
pub(super) fn line(text: &str) -> String {
    text.chars().flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] }).collect()
}

pub fn learn(o: &LearnOutcome) -> String {
    match &o.duplicate {
        Some(d) => format!(
            "duplicate of #{} ({}, similarity {:.2}); nothing stored\n",
            o.memory_id,
            d.method.as_str(),
            d.similarity
        ),
        None => {
            format!(
                "learned #{}: {} (confidence {:.2}{}){}\n",
                o.memory_id,
                o.category,
                o.confidence,
                if o.has_embedding { ", embedded" } else { "" },
                if o.tags.is_empty() { String::new() } else { format!("\n  tags: {}", line(&o.tags.join(", "))) }
            ) + &evicted(&o.evicted)
        }
    }
}

/// The line a write adds when the memory budget made it evict (empty otherwise).
fn evicted(ids: &[i64]) -> String {
    if ids.is_empty() {
        return String::new();
    }
    let ids: Vec<String> = ids.iter().map(|id| format!("#{id}")).collect();
    format!("  evicted to keep the memory budget: {}\n", ids.join(", "))
}

/// One memory on one line: id, kind, category, status (when not active), `note`, text.
pub(super) fn memory_line(out: &mut String, m: &Memory, note: &str) {
    let status = if m.status == MemoryStatus::Active { String::new() } else { format!(" · {}", m.status.as_str()) };
    let note = if note.is_empty() { String::new() } else { format!("{note}  ") };
    let _ = writeln!(
        out,
        "#{:<6} [{} · {}{}]  {}{}",
        m.id,
        m.kind.as_str(),
        line(&m.category),
        status,
        note,
        line(&m.content)
    );
}

pub fn perception(o: &PerceptionOutcome) -> String {
    match &o.duplicate {
        Some(d) => format!("duplicate of #{} ({}); nothing stored\n", o.memory_id, d.method.as_str()),
        None => {
            format!("stored #{}: {} perception in {}\n", o.memory_id, o.perception_type.as_str(), line(&o.collection))
                + &evicted(&o.evicted)
        }
    }
}

fn hit_line(out: &mut String, h: &Hit) {
    let m = &h.memory;
    let mut why = String::new();
    if let Some(l) = h.lexical {
        let _ = write!(why, " bm25 {l:.2}");
    }
    if let Some(c) = h.cosine {
        let _ = write!(why, " cos {c:.2}");
    }
    match h.distance {
        Some(d) if d.is_finite() => {
            let _ = write!(why, " dist {d:.3}");
        }
        Some(_) => why.push_str(" dist -"), // no coordinates of the target's dimension there
        None => {}
    }
    if !h.matched {
        why.push_str(" (filter only)");
    }
    let _ = writeln!(
        out,
        "#{:<6} {:.3}{}  [{} · {}]  {}",
        m.id,
        h.score,
        why,
        m.kind.as_str(),
        line(&m.category),
        line(&m.content)
    );
    if !h.similar.is_empty() {
        let ids: Vec<String> = h.similar.iter().map(|id| format!("#{id}")).collect();
        let _ = writeln!(out, "        + {} similar: {}", h.similar.len(), ids.join(" "));
    }
}

pub fn recall(r: &RecallResult) -> String {
    let mut out = String::new();
    for h in &r.hits {
        hit_line(&mut out, h);
    }
    let _ = writeln!(
        out,
        "{} memor{} · mode {} · query vector {} · {:.2} ms",
        r.hits.len(),
        if r.hits.len() == 1 { "y" } else { "ies" },
        r.mode.as_str(),
        r.query_vector.as_str(),
        r.query_ms
    );
    out
}

pub fn memory(m: &Memory, tags: &[String]) -> String {
    let mut out = String::new();
    let state = if m.expired { format!("{}, expired", m.status.as_str()) } else { m.status.as_str().to_string() };
    let _ = writeln!(out, "#{} [{state}] {}", m.id, line(&m.content));
    let _ = writeln!(
        out,
        "  type {} · category {} · confidence {:.2} · collection {}",
        m.kind.as_str(),
        line(&m.category),
        m.confidence,
        line(&m.collection)
    );
    if let Some(s) = &m.session_id {
        let _ = writeln!(out, "  session {}", line(s));
    }
    if !tags.is_empty() {
        let _ = writeln!(out, "  tags {}", line(&tags.join(", ")));
    }
    if let Some(p) = m.perception_type {
        let bytes = m.perception_data.as_ref().map_or(0, Vec::len);
        let _ = writeln!(out, "  perception {} · {} bytes of data", p.as_str(), bytes);
    }
    if let Some(t) = &m.expires_at {
        let _ = writeln!(out, "  {} {t}", if m.expired { "expired at" } else { "expires at" });
    }
    if let Some(by) = m.superseded_by {
        let _ = writeln!(out, "  superseded by #{by}");
    }
    let _ = writeln!(out, "  created {} · updated {} · recalled {} times", m.created_at, m.updated_at, m.access_count);
    let context = serde_json::from_str::<serde_json::Value>(&m.context)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| m.context.clone());
    for l in context.lines() {
        let _ = writeln!(out, "  | {}", line(l));
    }
    out
}

pub fn session_ended(s: &SessionEnded) -> String {
    let mut out = format!(
        "ended {} ({} memories{}); decayed {}, merged {} groups\n",
        line(&s.session_id),
        s.summary.memory_count,
        s.outcome_score.map(|o| format!(", outcome {o:.2}")).unwrap_or_default(),
        s.decayed_count,
        s.consolidated.merged_groups
    );
    if !s.related.is_empty() {
        out.push_str("related memories:\n");
        for h in &s.related {
            hit_line(&mut out, h);
        }
    }
    out
}

pub fn status(s: &EmbeddingStatus) -> String {
    let mut out =
        format!("embeddings {} · index kernel {} · sqlite-vec {}\n", s.state.as_str(), s.index_kernel, s.kernel);
    if let Some(m) = &s.model {
        let _ = writeln!(out, "  model {m} ({} dimensions)", s.dim);
    }
    if let Some(m) = &s.stored_model {
        let _ = writeln!(out, "  stored vectors {m}");
    }
    let _ = writeln!(out, "  {} memories waiting for a vector", s.pending);
    if !s.reason.is_empty() {
        let _ = writeln!(out, "  {}", line(&s.reason));
    }
    out
}

/// A memory's versions, oldest first: when each held, what made it, what it said.
pub fn history(id: i64, versions: &[MemoryVersion]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "#{id}: {} version(s), oldest first", versions.len());
    for v in versions {
        let until = v.valid_to.as_deref().unwrap_or("now");
        let who =
            if v.cause_writer.is_empty() { String::new() } else { format!(" by robot {}", line(&v.cause_writer)) };
        let _ = writeln!(
            out,
            "  {} .. {}  {}{who} · {} · {}",
            v.valid_from,
            until,
            v.cause,
            v.status.as_str(),
            line(&v.category)
        );
        let _ = writeln!(out, "    {}", line(&v.content));
        if let Some(r) = &v.invalidated_reason {
            let _ = writeln!(out, "    forgotten: {}", line(r));
        }
        if let Some(t) = &v.expires_at {
            let _ = writeln!(out, "    expires at {t}");
        }
        if let Some(by) = v.superseded_by {
            let _ = writeln!(out, "    superseded by #{by}");
        }
    }
    out
}
