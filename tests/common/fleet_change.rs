//! A fleet change as the hub would send it (a fact of collection "default",
//! category gotcha), for the fleet tests.

#![allow(dead_code)]

use robotmem::fleet::Change;

pub fn change(gid: &str, writer: &str, seq: i64, version: i64, content: &str) -> Change {
    Change {
        global_id: gid.into(),
        origin: writer.into(),
        writer: writer.into(),
        version,
        seq,
        deleted: false,
        status: "active".into(),
        superseded_by: None,
        collection: "default".into(),
        kind: "fact".into(),
        category: "gotcha".into(),
        confidence: 0.9,
        content: content.into(),
        context: "{\"source\":\"learn\"}".into(),
        tags: vec![],
        perception_type: None,
        perception_data: None,
        perception_metadata: None,
        created_at: "2026-11-26T00:00:00.000Z".into(),
        expires_at: None,
    }
}
