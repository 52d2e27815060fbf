//! The fleet surface (docs/FLEET.md): `robotmem sync`, the sidecar that shares
//! this robot's memories through a PostgreSQL hub and brings the fleet's back, and
//! `robotmem hub`, the hub owner's commands (schema migrations, robot logins).
//!
//! The hub's connection string never comes from the command line (where `ps`
//! shows it): from an environment variable (`--hub-env`, default
//! `ROBOTMEM_HUB_URL`) or a file (`--hub-file`). It is never printed: messages
//! name the hub as user@host:port/db (sslmode=...).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Subcommand;
use robotmem::fleet::agent::{self, Agent, Settings, Share};
use robotmem::fleet::hub::{self, HubUrl, PullFilter};
use robotmem::{Db, Error, Result};

/// Where the hub's connection string comes from.
#[derive(clap::Args, Debug, Clone)]
pub struct HubSource {
    /// Environment variable holding the hub's connection string
    /// (postgresql://user:password@host:port/db?sslmode=verify-full&sslrootcert=...).
    #[arg(long, value_name = "VAR", default_value = "ROBOTMEM_HUB_URL")]
    hub_env: String,
    /// File holding the connection string (first line), instead of the variable.
    #[arg(long, value_name = "FILE")]
    hub_file: Option<PathBuf>,
}

impl HubSource {
    fn url(&self) -> Result<HubUrl> {
        let text = match &self.hub_file {
            Some(f) => std::fs::read_to_string(f)
                .map_err(|e| Error::invalid(format!("--hub-file {}: {e}", f.display())))?
                .lines()
                .next()
                .unwrap_or_default()
                .to_string(),
            None => std::env::var(&self.hub_env).map_err(|_| {
                Error::invalid(format!("no hub: set ${} to its connection string, or give --hub-file", self.hub_env))
            })?,
        };
        HubUrl::parse(&text)
    }
}

#[derive(clap::Args, Debug)]
pub struct SyncArgs {
    #[command(flatten)]
    hub: HubSource,
    /// This robot's id in the fleet (letters, digits, - _ .; at most 64).
    #[arg(long, value_name = "ID")]
    robot_id: String,
    /// Time between two syncs: 500ms, 30s, 5m.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    every: Duration,
    /// Categories shared with the fleet (comma-separated), or "all".
    #[arg(long, value_name = "CATEGORIES", default_value = "constraint,gotcha,postmortem")]
    share: String,
    /// Only memories of these collections are shared (comma-separated; default: any).
    #[arg(long, value_name = "COLLECTIONS")]
    share_collection: Option<String>,
    /// Categories received from the fleet (comma-separated), or "all".
    #[arg(long, value_name = "CATEGORIES", default_value = "all")]
    pull: String,
    /// Only memories of these collections are received (comma-separated; default: any).
    #[arg(long, value_name = "COLLECTIONS")]
    pull_collection: Option<String>,
    /// Changes per hub transaction.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    batch: u64,
    /// One sync, then exit (non-zero when it failed).
    #[arg(long)]
    once: bool,
    /// hold: keep the hub connection between syncs; per-sync: connect for each
    /// (a hub of a large fleet then holds a connection per syncing robot only).
    #[arg(long, value_enum, default_value_t = Connection::Hold)]
    connection: Connection,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connection {
    Hold,
    PerSync,
}

#[derive(Subcommand, Debug)]
pub enum HubAction {
    /// Create or upgrade the hub's schema (as the hub database's owner).
    Migrate {
        #[command(flatten)]
        hub: HubSource,
    },
    /// Register a robot and the login it syncs with (created, member of fleet_robot).
    AddRobot {
        #[command(flatten)]
        hub: HubSource,
        robot_id: String,
        /// Login name (default: robot_<id>).
        #[arg(long)]
        login: Option<String>,
        /// Environment variable holding the new login's password.
        #[arg(long, value_name = "VAR")]
        password_env: Option<String>,
    },
}

fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    let (num, unit) =
        s.trim().split_at(s.trim().find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.trim().len()));
    let n: f64 = num.parse().map_err(|_| format!("{s:?} is not a duration such as 500ms, 30s, 5m"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("{s:?}: the unit must be ms, s, m or h")),
    };
    if !(0.01..=86_400.0).contains(&secs) {
        return Err(format!("{s:?} must be between 10ms and 24h"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn list(s: &str) -> Option<Vec<String>> {
    let items: Vec<String> = s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect();
    if items.is_empty() || items.iter().any(|x| x == "all") {
        None
    } else {
        Some(items)
    }
}

struct Stderr;

impl agent::Log for Stderr {
    fn info(&self, msg: &str) {
        eprintln!("robotmem sync: {msg}");
    }
    fn warn(&self, msg: &str) {
        eprintln!("robotmem sync: warning: {msg}");
    }
}

/// Sets `stop` on SIGINT or SIGTERM (a thread with a small runtime waits for them).
fn stop_on_signal(stop: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        rt.block_on(async {
            let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
                return;
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        });
        stop.store(true, Ordering::Relaxed);
    });
}

/// `robotmem sync`: runs until SIGINT/SIGTERM (or once).
pub fn sync(db: &Db, a: &SyncArgs) -> Result<()> {
    let settings = Settings {
        hub: a.hub.url()?,
        robot_id: a.robot_id.clone(),
        every: a.every,
        share: Share { categories: list(&a.share), collections: a.share_collection.as_deref().and_then(list) },
        pull: PullFilter { categories: list(&a.pull), collections: a.pull_collection.as_deref().and_then(list) },
        batch: a.batch as usize,
        hold_connection: a.connection == Connection::Hold,
    };
    let mut agent = Agent::new(db, &settings)?;
    let stop = Arc::new(AtomicBool::new(false));
    if !a.once {
        stop_on_signal(stop.clone());
        let id = agent.identity();
        eprintln!(
            "robotmem sync: robot {} (database instance {}), hub {}, every {:?}; {} changes waiting",
            id.robot_id,
            id.instance,
            settings.hub.describe(),
            settings.every,
            id.pending
        );
    }
    agent.run(&stop, a.once, &Stderr)
}

/// `robotmem hub ...`.
pub fn hub(action: &HubAction, json: bool) -> Result<()> {
    match action {
        HubAction::Migrate { hub } => {
            let url = hub.url()?;
            let (before, after) = hub::migrate(&mut url.connect()?)?;
            if json {
                println!("{}", serde_json::json!({"hub": url.describe(), "from_version": before, "to_version": after}));
            } else if before == after {
                println!("hub {}: schema at version {after}, nothing to do", url.describe());
            } else {
                println!("hub {}: schema migrated from version {before} to {after}", url.describe());
            }
        }
        HubAction::AddRobot { hub, robot_id, login, password_env } => {
            let url = hub.url()?;
            let login = login.clone().unwrap_or_else(|| format!("robot_{robot_id}"));
            let password = match password_env {
                Some(var) => Some(std::env::var(var).map_err(|_| Error::invalid(format!("${var} is not set")))?),
                None => None,
            };
            hub::add_robot(&mut url.connect()?, robot_id, &login, password.as_deref())?;
            if json {
                println!("{}", serde_json::json!({"robot_id": robot_id, "login": login}));
            } else {
                println!("robot {robot_id} registered; it syncs as login {login}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_lists_parse() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("5").unwrap(), Duration::from_secs(5));
        for bad in ["", "s", "1x", "-1s", "0s", "2d", "1e9s", "99999h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(list("a, b,,c"), Some(vec!["a".into(), "b".into(), "c".into()]));
        assert_eq!(list("all"), None);
        assert_eq!(list(""), None);
    }
}
