//! The command line's defaults and the request types' defaults are the library's
//! constants (`robotmem::limits`): clap's own description of every subcommand
//! (`Command` introspection) against them, and an empty web query / MCP call.

use clap::CommandFactory;
use robotmem::limits;
use serde_json::json;

use super::browse::{KindFilter, StatusFilter};
use super::*;

/// The default clap shows for `--arg` of `robotmem <path…>`.
fn clap_default(path: &[&str], arg: &str) -> String {
    let mut cmd = crate::cli::Args::command();
    cmd.build();
    let mut c = &cmd;
    for p in path {
        c = c.find_subcommand(p).unwrap_or_else(|| panic!("no subcommand {p}"));
    }
    let a = c.get_arguments().find(|a| a.get_id() == arg).unwrap_or_else(|| panic!("{path:?}: no argument {arg}"));
    let d: Vec<String> = a.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
    d.join(",")
}

#[test]
fn clap_defaults_are_the_limits() {
    assert_eq!(clap_default(&["recall"], "n"), limits::DEFAULT_RESULTS.to_string());
    assert_eq!(clap_default(&["recall"], "min_confidence"), limits::DEFAULT_MIN_CONFIDENCE.to_string());
    assert_eq!(clap_default(&["recall"], "group_similar"), "false");
    assert_eq!(clap_default(&["recall"], "collection"), "", "the handle's default collection");
    assert_eq!(clap_default(&["learn"], "collection"), "");
    assert_eq!(clap_default(&["perceive"], "perception_type"), "visual");
    assert_eq!(clap_default(&["session", "start"], "collection"), "");
    for path in [&["list"][..], &["sessions"][..]] {
        assert_eq!(clap_default(path, "per_page"), limits::DEFAULT_PER_PAGE.to_string(), "{path:?}");
        assert_eq!(clap_default(path, "page"), "1", "{path:?}");
    }
    assert_eq!(clap_default(&["list"], "status"), "active");
}

#[test]
fn an_empty_web_query_and_mcp_call_take_the_same_defaults() {
    let r: Recall = from_query("q=cup").unwrap();
    assert_eq!((r.n, r.min_confidence, r.group_similar, r.collection), (5, 0.3, false, None));
    let m: Recall = from_json(json!({"query": "cup"})).unwrap();
    assert_eq!((m.n, m.min_confidence, m.collection), (limits::DEFAULT_RESULTS, limits::DEFAULT_MIN_CONFIDENCE, None));
    let l: List = from_query("").unwrap();
    assert_eq!((l.page, l.per_page, l.status), (1, limits::DEFAULT_PER_PAGE, StatusFilter::Active));
    let l: List = from_query("status=forgotten&type=fact&per_page=%2010%20&days=").unwrap();
    assert_eq!(
        (l.status.status(), l.kind, l.per_page, l.days),
        (Some(robotmem::MemoryStatus::Invalidated), Some(KindFilter::Fact), 10, None)
    );
    let s: Paging = from_query("").unwrap();
    assert_eq!(s.per_page, limits::DEFAULT_PER_PAGE);
    let f: RecentFailures = from_query("").unwrap();
    assert_eq!(f.n, limits::DEFAULT_RECENT_FAILURES);
    assert!(from_query::<Recall>("q=cup&group_similar=maybe").unwrap_err().contains("group_similar"));
    assert!(from_query::<List>("page=x").unwrap_err().starts_with("page"));
    let d = robotmem::RecallRequest::default();
    assert_eq!((d.n, d.min_confidence), (limits::DEFAULT_RESULTS, limits::DEFAULT_MIN_CONFIDENCE));
}
