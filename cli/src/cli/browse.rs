//! `list`, `stats`, `sessions`, `doctor`: looking into a memory file.

use std::fmt::Write;

use clap::{Args, ValueEnum};
use robotmem::{render, Db, Error, ListRequest, MemoryKind, MemoryStatus, Result, Status};
use serde_json::{json, Value};

use super::human::{line, memory_line};

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum StatusArg {
    Active,
    Superseded,
    /// Forgotten memories.
    Forgotten,
    All,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum KindArg {
    Fact,
    Perception,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    #[arg(long)]
    collection: Option<String>,
    #[arg(long = "type", value_enum)]
    kind: Option<KindArg>,
    #[arg(long)]
    category: Option<String>,
    #[arg(long, value_enum, default_value_t = StatusArg::Active)]
    status: StatusArg,
    #[arg(long)]
    session: Option<String>,
    #[arg(long, default_value_t = 0.0)]
    min_confidence: f64,
    /// Only memories learned in the last N days.
    #[arg(long)]
    days: Option<u32>,
    /// Oldest first.
    #[arg(long)]
    oldest_first: bool,
    /// Page number, from 1.
    #[arg(long, default_value_t = 1)]
    page: u64,
    /// Memories per page, 1-500.
    #[arg(long, default_value_t = 20)]
    per_page: u32,
}

#[derive(Args, Debug)]
pub struct SessionsArgs {
    /// Show this session's memories in order (its timeline) instead of the list.
    session: Option<String>,
    #[arg(long, default_value_t = 1)]
    page: u64,
    #[arg(long, default_value_t = 20)]
    per_page: u32,
}

fn offset(page: u64, per_page: u32) -> Result<u64> {
    if page == 0 {
        return Err(Error::invalid("page must be at least 1"));
    }
    Ok((page - 1).saturating_mul(u64::from(per_page)))
}

fn print(json: bool, v: Value, text: String) {
    if json {
        println!("{v}");
    } else {
        print!("{text}");
    }
}

pub fn list(db: &Db, a: &ListArgs, json: bool) -> Result<()> {
    let req = ListRequest {
        collection: a.collection.as_deref(),
        kind: a.kind.map(|k| match k {
            KindArg::Fact => MemoryKind::Fact,
            KindArg::Perception => MemoryKind::Perception,
        }),
        category: a.category.as_deref(),
        status: match a.status {
            StatusArg::Active => Some(MemoryStatus::Active),
            StatusArg::Superseded => Some(MemoryStatus::Superseded),
            StatusArg::Forgotten => Some(MemoryStatus::Invalidated),
            StatusArg::All => None,
        },
        session_id: a.session.as_deref(),
        min_confidence: a.min_confidence,
        days: a.days,
        oldest_first: a.oldest_first,
        offset: offset(a.page, a.per_page)?,
        limit: a.per_page,
    };
    let p = db.list(&req)?;
    let mut text = String::new();
    for m in &p.memories {
        memory_line(&mut text, m, "");
    }
    let pages = (p.total as u64).div_ceil(u64::from(a.per_page)).max(1);
    let _ = writeln!(
        text,
        "page {} of {pages}{} · {}{} memories",
        a.page,
        if p.total_exact { "" } else { "+" },
        p.total,
        if p.total_exact { "" } else { "+" }
    );
    let mut v = render::memory_page(&p);
    v["page"] = json!(a.page);
    v["per_page"] = json!(a.per_page);
    print(json, v, text);
    Ok(())
}

pub fn stats(db: &Db, json: bool) -> Result<()> {
    let s = db.stats()?;
    let mut t = format!(
        "{} memories: {} active, {} superseded, {} forgotten · {} sessions ({} active)\n",
        s.memories, s.active, s.superseded, s.invalidated, s.sessions, s.active_sessions
    );
    let row = |t: &mut String, name: &str, v: &[(String, i64)]| {
        if !v.is_empty() {
            let items: Vec<String> = v.iter().map(|(k, n)| format!("{} {n}", line(k))).collect();
            let _ = writeln!(t, "  {name}: {}", items.join(", "));
        }
    };
    row(&mut t, "type", &s.by_type);
    row(&mut t, "category", &s.by_category);
    row(&mut t, "perception", &s.by_perception);
    for c in &s.collections {
        let _ = writeln!(t, "  collection {}: {} active of {}", line(&c.collection), c.active, c.total);
    }
    let _ = writeln!(t, "  confidence tenths: {:?}", s.confidence);
    if let Some((d, n)) = s.per_day.last() {
        let _ = writeln!(t, "  learned on {d}: {n}");
    }
    let _ = writeln!(
        t,
        "  recalls {} ({} matched nothing) · file {} bytes + log {} bytes",
        s.recalls, s.zero_hit_recalls, s.db_bytes, s.wal_bytes
    );
    let mut v = render::stats(&s);
    // The file's part in a fleet (docs/FLEET.md): who it is, what waits, what it received.
    if let Some(id) = db.fleet_identity()? {
        let marks = db.fleet_marks()?;
        let _ = writeln!(
            t,
            "  fleet: robot {} (instance {}) · {} changes waiting to be pushed (pushed up to #{}) · received from {} robots",
            line(&id.robot_id),
            id.instance,
            id.pending,
            id.pushed,
            marks.len()
        );
        for (w, n) in &marks {
            let _ = writeln!(t, "    from {} up to #{n}", line(w));
        }
        if let Some(o) = v.as_object_mut() {
            let marks: serde_json::Map<String, Value> = marks.into_iter().map(|(w, n)| (w, Value::from(n))).collect();
            o.insert(
                "fleet".into(),
                json!({"robot_id": id.robot_id, "instance": id.instance, "pending": id.pending, "pushed": id.pushed,
                       "last_seq": id.last_seq, "received_up_to": marks}),
            );
        }
    }
    print(json, v, t);
    Ok(())
}

pub fn sessions(db: &Db, a: &SessionsArgs, json: bool) -> Result<()> {
    let offset = offset(a.page, a.per_page)?;
    if let Some(id) = &a.session {
        let p = db.list(&ListRequest {
            session_id: Some(id),
            status: None,
            oldest_first: true,
            offset,
            limit: a.per_page,
            ..Default::default()
        })?;
        if p.total == 0 && db.sessions(0, 1)?.total == 0 {
            return Err(Error::new(Status::NotFound, format!("session {id:?} has no memories")));
        }
        let mut text = String::new();
        for m in &p.memories {
            memory_line(&mut text, m, &m.created_at);
        }
        let _ = writeln!(text, "{} memories in session {}", p.total, line(id));
        let v = json!({"session_id": id, "memories": p.memories.iter().map(render::memory).collect::<Vec<_>>(), "total": p.total});
        print(json, v, text);
        return Ok(());
    }
    let p = db.sessions(offset, a.per_page)?;
    let mut text = String::new();
    for s in &p.sessions {
        let _ = writeln!(
            text,
            "{}  [{}] {} · {} memories{} · {}",
            line(&s.session_id),
            s.status,
            line(&s.collection),
            s.memory_count,
            s.outcome_score.map(|o| format!(" · outcome {o:.2}")).unwrap_or_default(),
            s.created_at
        );
    }
    let _ = writeln!(text, "{} sessions", p.total);
    print(json, render::session_page(&p), text);
    Ok(())
}

/// Prints the report; a failed check makes the command fail (exit 10 + corrupt / invalid state).
pub fn doctor(db: &Db, full: bool, json: bool) -> Result<()> {
    let r = db.doctor(full)?;
    let mut t = String::new();
    for c in &r.checks {
        let _ = writeln!(t, "{} {:<17} {}", if c.ok { "ok  " } else { "FAIL" }, c.name, line(&c.detail));
        if !c.ok {
            let _ = writeln!(t, "     {:<17} → {}", "", c.fix);
        }
    }
    let failed: Vec<&str> = r.checks.iter().filter(|c| !c.ok).map(|c| c.name).collect();
    print(json, render::doctor(&r), t);
    if failed.is_empty() {
        return Ok(());
    }
    let status = if failed.iter().any(|n| ["quick_check", "integrity_check", "checksums"].contains(n)) {
        Status::Corrupt
    } else {
        Status::InvalidState
    };
    Err(Error::new(status, format!("doctor found problems: {}", failed.join(", "))))
}
