//! Read-only views of the memory as MCP resources (JSON documents, the
//! library's renderings): totals, recent failures, one session's timeline.

use rmcp::model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
use rmcp::ErrorData;
use robotmem::{render, Db, ListRequest};
use serde_json::{json, Value};

const STATS: &str = "robotmem://stats";
const FAILURES: &str = "robotmem://recent-failures";
const SESSION: &str = "robotmem://session/";
const JSON: &str = "application/json";

/// Failures listed by `robotmem://recent-failures`, among the newest 10,000 memories.
const FAILURES_SHOWN: u32 = 20;
/// Memories of a session's timeline (the largest page of `Db::list`).
const SESSION_LIMIT: u32 = 500;

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
        render::stats(&db.stats().map_err(engine)?)
    } else if uri == FAILURES {
        let ms = db.recent_failures(FAILURES_SHOWN, 10_000).map_err(engine)?;
        json!({ "memories": ms.iter().map(render::memory).collect::<Vec<_>>() })
    } else if let Some(id) = uri.strip_prefix(SESSION).filter(|id| !id.is_empty()) {
        let page = db
            .list(&ListRequest {
                session_id: Some(id),
                status: None,
                oldest_first: true,
                limit: SESSION_LIMIT,
                ..Default::default()
            })
            .map_err(engine)?;
        let mut v = render::memory_page(&page);
        v["session_id"] = json!(id);
        v
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
