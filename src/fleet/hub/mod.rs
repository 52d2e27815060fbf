//! The PostgreSQL hub client (feature `fleet`): connecting (sslmode as libpq
//! reads it), migrations, and the statements of a sync (docs/FLEET.md).
//!
//! Credentials never appear in a message: errors and logs name the hub by
//! [`HubUrl::describe`] (user, host, port, database, sslmode), and the server's
//! own messages carry no password.

pub mod schema;
mod url;

pub use url::HubUrl;

use postgres::Client;

use super::{Change, SessionEnd};
use crate::error::{Error, Result, Status};

/// A failure of the hub: the message, without credentials, and its kind:
/// `Io` (network or server: try again later), `InvalidState` (a refusal: this
/// login or robot id may not), `InvalidArgument` (the hub refuses the data itself).
pub fn hub_error(e: postgres::Error) -> Error {
    let message = match e.as_db_error() {
        Some(db) => format!("hub refused: {} ({})", db.message(), db.code().code()),
        None => {
            // The driver's own text is short ("error performing TLS handshake"): the
            // causes say which (certificate, refused, timed out).
            let mut m = format!("hub unreachable or connection lost: {e}");
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                m.push_str(&format!(": {c}"));
                cause = c.source();
            }
            m
        }
    };
    let status = match e.code().map(|c| c.code()) {
        Some("RM001") | Some("RM002") | Some("42501") => Status::InvalidState,
        // Data exceptions and integrity violations: this data, not the link.
        Some(c) if c.starts_with("22") || c.starts_with("23") => Status::InvalidArgument,
        _ => Status::Io,
    };
    Error::new(status, message)
}

trait HubResult<T> {
    fn hub(self) -> Result<T>;
}

impl<T> HubResult<T> for std::result::Result<T, postgres::Error> {
    fn hub(self) -> Result<T> {
        self.map_err(hub_error)
    }
}

/// The hub schema version of this build.
pub fn schema_version() -> i32 {
    schema::MIGRATIONS.len() as i32
}

/// The hub's schema version (0: none).
pub fn hub_version(client: &mut Client) -> Result<i32> {
    let exists: bool = client.query_one("SELECT to_regclass('fleet.schema_migrations') IS NOT NULL", &[]).hub()?.get(0);
    if !exists {
        return Ok(0);
    }
    Ok(client.query_one("SELECT coalesce(max(version), 0) FROM fleet.schema_migrations", &[]).hub()?.get(0))
}

/// Brings the hub's schema to this build's version, one transaction per
/// migration, serialised by an advisory lock. Returns (before, after).
pub fn migrate(client: &mut Client) -> Result<(i32, i32)> {
    let mut tx = client.transaction().hub()?;
    tx.execute("SELECT pg_advisory_xact_lock(hashtextextended('robotmem.fleet.migrate', 0))", &[]).hub()?;
    tx.batch_execute(
        "CREATE SCHEMA IF NOT EXISTS fleet;
         CREATE TABLE IF NOT EXISTS fleet.schema_migrations (
             version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
    )
    .hub()?;
    let before: i32 = tx.query_one("SELECT coalesce(max(version), 0) FROM fleet.schema_migrations", &[]).hub()?.get(0);
    if before > schema_version() {
        return Err(Error::new(
            Status::SchemaTooNew,
            format!(
                "the hub's schema is version {before}, newer than this robotmem's ({}); upgrade robotmem",
                schema_version()
            ),
        ));
    }
    for (v, sql) in schema::MIGRATIONS.iter().enumerate().skip(before as usize) {
        tx.batch_execute(sql).hub()?;
        tx.execute("INSERT INTO fleet.schema_migrations (version) VALUES ($1)", &[&(v as i32 + 1)]).hub()?;
    }
    tx.commit().hub()?;
    Ok((before, schema_version()))
}

/// Registers robot `robot_id`, synced by login `login` (created with `password`
/// as a member of `fleet_robot` when it does not exist). Run by the hub owner.
pub fn add_robot(client: &mut Client, robot_id: &str, login: &str, password: Option<&str>) -> Result<()> {
    super::check_robot_id(robot_id)?;
    let mut tx = client.transaction().hub()?;
    let exists: bool =
        tx.query_one("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", &[&login]).hub()?.get(0);
    if !exists {
        let pw =
            password.ok_or_else(|| Error::invalid(format!("login {login:?} does not exist: give its password")))?;
        let sql: String = tx
            .query_one(
                "SELECT format('CREATE ROLE %I LOGIN PASSWORD %L IN ROLE fleet_robot', $1::text, $2::text)",
                &[&login, &pw],
            )
            .hub()?
            .get(0);
        tx.batch_execute(&sql).hub()?;
    } else {
        let sql: String = tx.query_one("SELECT format('GRANT fleet_robot TO %I', $1::text)", &[&login]).hub()?.get(0);
        tx.batch_execute(&sql).hub()?;
    }
    tx.execute(
        "INSERT INTO fleet.robots (robot_id, login) VALUES ($1, $2)
         ON CONFLICT (robot_id) DO UPDATE SET login = EXCLUDED.login",
        &[&robot_id, &login],
    )
    .hub()?;
    tx.commit().hub()
}

/// Takes robot `robot_id`'s sync lock for this connection's life: one sync
/// process per robot. `false`: another connection holds it.
pub fn lock_robot(client: &mut Client, robot_id: &str) -> Result<bool> {
    Ok(client
        .query_one("SELECT pg_try_advisory_lock(hashtextextended('robotmem.fleet.robot:' || $1, 0))", &[&robot_id])
        .hub()?
        .get(0))
}

/// Claims robot `robot_id` for database instance `instance`; returns the robot's
/// last change number on the hub.
pub fn claim(client: &mut Client, robot_id: &str, instance: &str) -> Result<i64> {
    Ok(client.query_one("SELECT fleet.claim($1, $2::text::uuid)", &[&robot_id, &instance]).hub()?.get(0))
}

/// The robot's last change number on the hub.
pub fn last_seq(client: &mut Client, robot_id: &str) -> Result<i64> {
    let row = client.query_opt("SELECT last_seq FROM fleet.robots WHERE robot_id = $1", &[&robot_id]).hub()?;
    Ok(row.map_or(0, |r| r.get(0)))
}

/// The hub's versions of these memories (those it has).
pub fn versions(client: &mut Client, gids: &[String]) -> Result<Vec<(String, i64)>> {
    let rows = client
        .query(
            "SELECT global_id::text, version FROM fleet.memories WHERE global_id = ANY($1::text[]::uuid[])",
            &[&gids],
        )
        .hub()?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

fn change_json(c: &Change) -> serde_json::Value {
    let mut v = serde_json::to_value(c).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        let hex = c.perception_data.as_ref().map(|d| d.iter().map(|b| format!("{b:02x}")).collect::<String>());
        o.insert("perception_data".into(), hex.into());
    }
    v
}

/// Pushes a batch of robot `robot_id` as one hub transaction: the changes
/// (ignored when already there: idempotent on writer, global id and version) and
/// ended sessions; then the robot's last change number moves to `upto`. Returns
/// how many changes were new.
pub fn push(
    client: &mut Client,
    robot_id: &str,
    changes: &[Change],
    sessions: &[SessionEnd],
    upto: i64,
) -> Result<u64> {
    let batch = serde_json::Value::Array(changes.iter().map(change_json).collect());
    let ended = serde_json::to_value(sessions)?;
    let mut tx = client.transaction().hub()?;
    tx.execute("SELECT fleet.begin_push($1)", &[&robot_id]).hub()?;
    let inserted = tx
        .execute(
            "INSERT INTO fleet.changes (writer, seq, global_id, version, origin, deleted, status, superseded_by,
                 collection, kind, category, confidence, content, context, tags, perception_type,
                 perception_data, perception_metadata, created_at, expires_at)
             SELECT writer, seq, global_id::uuid, version, origin, deleted, status, superseded_by::uuid,
                 collection, kind, category, confidence, content, context::jsonb, tags, perception_type,
                 decode(perception_data, 'hex'), perception_metadata, created_at, expires_at
             FROM jsonb_to_recordset($1::text::jsonb) AS x(writer text, seq bigint, global_id text, version bigint,
                 origin text, deleted boolean, status text, superseded_by text, collection text, kind text,
                 category text, confidence double precision, content text, context text, tags text[],
                 perception_type text, perception_data text, perception_metadata text, created_at text,
                 expires_at text)
             ORDER BY seq
             ON CONFLICT DO NOTHING",
            &[&batch.to_string()],
        )
        .hub()?;
    tx.execute(
        "INSERT INTO fleet.sessions (robot_id, session_id, seq, collection, ended_at, outcome, memories)
         SELECT $1, session_id, seq, collection, ended_at, outcome, memories
         FROM jsonb_to_recordset($2::text::jsonb) AS x(session_id text, seq bigint, collection text,
             ended_at text, outcome double precision, memories bigint)
         ON CONFLICT DO NOTHING",
        &[&robot_id, &ended.to_string()],
    )
    .hub()?;
    tx.execute("SELECT fleet.end_push($1, $2)", &[&robot_id, &upto]).hub()?;
    tx.commit().hub()?;
    Ok(inserted)
}

/// Which filter a pull applies (`None`: everything).
#[derive(Clone, Debug, Default)]
pub struct PullFilter {
    pub categories: Option<Vec<String>>,
    pub collections: Option<Vec<String>>,
}

/// The next memories for robot `robot_id`: per writer other than itself, the
/// memories whose current version that writer numbered above its mark, in change
/// order, at most `limit`. Only writers whose last push is above the mark are
/// probed (an index range each), so an idle fleet costs a scan of `robots`. `own_after`: also this robot's own changes after that
/// number (the repair of a restored file).
pub fn pull(
    client: &mut Client,
    robot_id: &str,
    marks: &[(String, i64)],
    filter: &PullFilter,
    limit: i64,
    own_after: Option<i64>,
) -> Result<Vec<Change>> {
    let writers: Vec<&str> = marks.iter().map(|m| m.0.as_str()).collect();
    let seqs: Vec<i64> = marks.iter().map(|m| m.1).collect();
    let rows = client
        .query(
            "SELECT m.global_id::text, m.origin, m.writer, m.version, m.seq, m.deleted, m.status,
                    m.superseded_by::text, m.collection, m.kind, m.category, m.confidence, m.content,
                    m.context::text, m.tags, m.perception_type, m.perception_data, m.perception_metadata, m.created_at,
                    m.expires_at
             FROM fleet.robots r
             LEFT JOIN unnest($2::text[], $3::int8[]) AS w(writer, mark) ON w.writer = r.robot_id
             CROSS JOIN LATERAL (
                 SELECT * FROM fleet.memories m
                 WHERE m.writer = r.robot_id
                   AND m.seq > CASE WHEN r.robot_id = $1 THEN $7 ELSE coalesce(w.mark, 0) END
                   AND ($4::text[] IS NULL OR m.category = ANY($4))
                   AND ($5::text[] IS NULL OR m.collection = ANY($5))
                 ORDER BY m.seq LIMIT $6) m
             WHERE (r.robot_id <> $1 OR $7 IS NOT NULL)
               -- Only robots that pushed since: a memory's number never exceeds its writer's last_seq.
               AND r.last_seq > CASE WHEN r.robot_id = $1 THEN $7 ELSE coalesce(w.mark, 0) END
             ORDER BY m.writer, m.seq
             LIMIT $6",
            &[&robot_id, &writers, &seqs, &filter.categories, &filter.collections, &limit, &own_after],
        )
        .hub()?;
    Ok(rows
        .iter()
        .map(|r| Change {
            global_id: r.get(0),
            origin: r.get(1),
            writer: r.get(2),
            version: r.get(3),
            seq: r.get(4),
            deleted: r.get(5),
            status: r.get(6),
            superseded_by: r.get(7),
            collection: r.get(8),
            kind: r.get(9),
            category: r.get(10),
            confidence: r.get(11),
            content: r.get(12),
            context: r.get(13),
            tags: r.get(14),
            perception_type: r.get(15),
            perception_data: r.get(16),
            perception_metadata: r.get(17),
            created_at: r.get(18),
            expires_at: r.get(19),
        })
        .collect())
}
