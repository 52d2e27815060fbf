//! Read-only views of the memory as MCP resources (JSON documents, the
//! library's renderings): totals, recent failures, one session's timeline.

use rmcp::model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
use rmcp::ErrorData;
use robotmem::{limits, Db};
use serde_json::Value;

use crate::request;

const STATS: &str = "robotmem://stats";
const FAILURES: &str = "robotmem://recent-failures";
const SESSION: &str = "robotmem://session/";
const JSON: &str = "application/json";

pub fn list() -> Vec<Resource> {
    vec![
        Resource::new(STATS, "stats")
            .with_title("Memory totals")
            .with_description("Memories by status, type, category, perception type and collection; learned per day; confidence histogram; sessions; sizes.")
            .with_mime_type(JSON),
        Resource::new(FAILURES, "recent-failures")
            .with_title("Recent failures")
            .with_description("The newest memories of failures (postmortem, gotcha, root_cause, or task.success false) among the newest 10,000 memories, every collection.")
            .with_mime_type(JSON),
    ]
}

pub fn templates() -> Vec<ResourceTemplate> {
    let mut t = ResourceTemplate::new("robotmem://session/{id}", "session");
    t.title = Some("Session timeline".into());
    t.description = Some("One session's memories, oldest first (every status), at most 500.".into());
    t.mime_type = Some(JSON.into());
    vec![t]
}

/// The document at `uri` (blocking).
pub fn read(db: &Db, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let engine = |e: robotmem::Error| {
        let m = format!("{}: {}", e.status.name(), e.message);
        match e.status {
            robotmem::Status::InvalidArgument | robotmem::Status::NotFound => ErrorData::invalid_params(m, None),
            _ => ErrorData::internal_error(m, None),
        }
    };
    let v: Value = if uri == STATS {
        request::stats(db).map_err(engine)?.json
    } else if uri == FAILURES {
        let n = limits::DEFAULT_RECENT_FAILURES;
        request::recent_failures(db, &request::RecentFailures { n }).map_err(engine)?.json
    } else if let Some(id) = uri.strip_prefix(SESSION).filter(|id| !id.is_empty()) {
        // The whole timeline as far as one page goes.
        let all = request::Paging { page: 1, per_page: limits::MAX_PER_PAGE };
        request::timeline(db, id, &all).map_err(engine)?.json
    } else {
        return Err(ErrorData::resource_not_found(
            format!(
                "uri: no resource {uri:?} (robotmem://stats, robotmem://recent-failures, robotmem://session/{{id}})"
            ),
            None,
        ));
    };
    Ok(ReadResourceResult::new(vec![ResourceContents::TextResourceContents {
        uri: uri.to_string(),
        mime_type: Some(JSON.into()),
        text: v.to_string(),
        meta: None,
    }]))
}
