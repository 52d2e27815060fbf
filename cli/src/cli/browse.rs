//! `list`, `stats`, `sessions`, `doctor`: looking into a memory file.

use std::fmt::Write;

use clap::Args;
use robotmem::{Db, Error, Result, Status};

use super::human::{line, memory_line};
use crate::request;

#[derive(Args, Debug)]
pub struct SessionsArgs {
    /// Show this session's memories in order (its timeline) instead of the list.
    session: Option<String>,
    #[command(flatten)]
    paging: request::Paging,
}

fn print(json: bool, v: serde_json::Value, text: String) {
    if json {
        println!("{v}");
    } else {
        print!("{text}");
    }
}

pub fn list(db: &Db, a: &request::List, json: bool) -> Result<()> {
    let o = request::list(db, a)?;
    let p = &o.data;
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
    print(json, o.json, text);
    Ok(())
}

pub fn stats(db: &Db, json: bool) -> Result<()> {
    let o = request::stats(db)?;
    let (s, fleet) = &o.data;
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
    if let Some(f) = fleet {
        let id = &f.identity;
        let _ = writeln!(
            t,
            "  fleet: robot {} (instance {}) · {} changes waiting to be pushed (pushed up to #{}) · received from {} robots",
            line(&id.robot_id),
            id.instance,
            id.pending,
            id.pushed,
            f.marks.len()
        );
        for (w, n) in &f.marks {
            let _ = writeln!(t, "    from {} up to #{n}", line(w));
        }
    }
    print(json, o.json, t);
    Ok(())
}

pub fn sessions(db: &Db, a: &SessionsArgs, json: bool) -> Result<()> {
    if let Some(id) = &a.session {
        let o = request::timeline(db, id, &a.paging)?;
        let p = &o.data;
        if p.total == 0 && db.sessions(0, 1)?.total == 0 {
            return Err(Error::new(Status::NotFound, format!("session {id:?} has no memories")));
        }
        let mut text = String::new();
        for m in &p.memories {
            memory_line(&mut text, m, &m.created_at);
        }
        let _ = writeln!(text, "{} memories in session {}", p.total, line(id));
        print(json, o.json, text);
        return Ok(());
    }
    let o = request::sessions(db, &a.paging)?;
    let mut text = String::new();
    for s in &o.data.sessions {
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
    let _ = writeln!(text, "{} sessions", o.data.total);
    print(json, o.json, text);
    Ok(())
}

/// Prints the report; a failed check makes the command fail (exit 10 + corrupt / invalid state).
pub fn doctor(db: &Db, full: bool, json: bool) -> Result<()> {
    let o = request::doctor(db, full)?;
    let r = &o.data;
    let mut t = String::new();
    for c in &r.checks {
        let _ = writeln!(t, "{} {:<17} {}", if c.ok { "ok  " } else { "FAIL" }, c.name, line(&c.detail));
        if !c.ok {
            let _ = writeln!(t, "     {:<17} → {}", "", c.fix);
        }
    }
    let failed: Vec<&str> = r.checks.iter().filter(|c| !c.ok).map(|c| c.name).collect();
    print(json, o.json, t);
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
