//! A test hub: the PostgreSQL server scripts/fleet-test.sh started (ROBOTMEM_TEST_PG_*),
//! one fresh database per test, robot logins, `robotmem sync` processes, faults.
//! Without a server the tests print SKIPPED and pass, unless ROBOTMEM_REQUIRE_PG=1.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_robotmem");

pub struct Server {
    pub host: String,
    pub port: String,
    pub admin: String,
    pub password: String,
    pub ca: PathBuf,
    pub pgctl: PathBuf,
    pub faketime: Option<PathBuf>,
}

impl Server {
    /// The server, or `None` after printing why the test is skipped.
    pub fn get(test: &str) -> Option<Server> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        match (var("ROBOTMEM_TEST_PG_HOST"), var("ROBOTMEM_TEST_PG_PORT"), var("ROBOTMEM_TEST_PG_PASSWORD")) {
            (Some(host), Some(port), Some(password)) => Some(Server {
                host,
                port,
                password,
                admin: var("ROBOTMEM_TEST_PG_ADMIN").unwrap_or_else(|| "postgres".into()),
                ca: var("ROBOTMEM_TEST_PG_CA").map(PathBuf::from).unwrap_or_default(),
                pgctl: var("ROBOTMEM_TEST_PGCTL").map(PathBuf::from).unwrap_or_default(),
                faketime: var("ROBOTMEM_TEST_FAKETIME").map(PathBuf::from),
            }),
            _ => {
                assert_ne!(
                    var("ROBOTMEM_REQUIRE_PG").as_deref(),
                    Some("1"),
                    "{test}: ROBOTMEM_REQUIRE_PG=1 but no test server (run scripts/fleet-test.sh)"
                );
                eprintln!("SKIPPED: {test}: no PostgreSQL test server (scripts/fleet-test.sh starts one)");
                None
            }
        }
    }

    pub fn url(&self, db: &str, user: &str, password: &str, tls: &str) -> String {
        format!("postgresql://{user}:{password}@{}:{}/{db}?{tls}", self.host, self.port)
    }

    pub fn admin_url(&self, db: &str) -> String {
        self.url(db, &self.admin, &self.password, "sslmode=disable")
    }

    pub fn admin(&self, db: &str) -> postgres::Client {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match postgres::Client::connect(&self.admin_url(db), postgres::NoTls) {
                Ok(c) => return c,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => panic!("admin connection to {db}: {e}"),
            }
        }
    }

    /// A new empty database `name` (dropped first if a failed run left it), with
    /// the hub schema migrated by `robotmem hub migrate`.
    pub fn hub(&self, name: &str) -> Hub<'_> {
        let mut c = self.admin("fleet");
        c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).unwrap();
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        let hub = Hub { server: self, db: name.to_string() };
        let o = hub.robotmem_admin(&["hub", "migrate"]);
        assert!(o.status.success(), "migrate: {}", String::from_utf8_lossy(&o.stderr));
        hub
    }

    pub fn ctl(&self, what: &str) {
        let o = Command::new(&self.pgctl).arg(what).output().unwrap();
        assert!(o.status.success(), "pgctl {what}: {}", String::from_utf8_lossy(&o.stderr));
    }
}

pub struct Hub<'a> {
    pub server: &'a Server,
    pub db: String,
}

impl Hub<'_> {
    pub fn admin(&self) -> postgres::Client {
        self.server.admin(&self.db)
    }

    /// `robotmem ARGS` with the admin's connection string in $ROBOTMEM_HUB_URL.
    pub fn robotmem_admin(&self, args: &[&str]) -> Output {
        Command::new(BIN).args(args).env("ROBOTMEM_HUB_URL", self.server.admin_url(&self.db)).output().unwrap()
    }

    /// Registers robot `id` with login `<db>_<id>` (password `pw-<id>-secret`).
    pub fn add_robot(&self, id: &str) -> Robot {
        let login = format!("{}_{}", self.db, id.replace('-', "_"));
        let password = format!("pw-{id}-secret");
        let o = Command::new(BIN)
            .args(["hub", "add-robot", id, "--login", &login, "--password-env", "ROBOT_PW"])
            .env("ROBOTMEM_HUB_URL", self.server.admin_url(&self.db))
            .env("ROBOT_PW", &password)
            .output()
            .unwrap();
        assert!(o.status.success(), "add-robot: {}", String::from_utf8_lossy(&o.stderr));
        Robot { id: id.into(), url: self.server.url(&self.db, &login, &password, "sslmode=disable"), login, password }
    }

    /// Terminates every robot connection (as a network cut or a hub admin would).
    pub fn terminate_robots(&self) -> i64 {
        let mut c = self.admin();
        let r = c
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                 WHERE datname = current_database() AND application_name = 'robotmem-sync'",
                &[],
            )
            .unwrap();
        r.get(0)
    }
}

pub struct Robot {
    pub id: String,
    pub login: String,
    pub password: String,
    pub url: String,
}

/// A `robotmem sync` process.
pub struct Sync {
    pub child: Child,
    pub log: PathBuf,
}

pub fn sync_command(db: &Path, robot: &str, url: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--db")
        .arg(db)
        .args(["--no-embeddings", "--durability", "normal", "sync", "--robot-id", robot])
        .args(extra)
        .env("ROBOTMEM_HUB_URL", url)
        .env_remove("ROBOTMEM_MODEL_DIR");
    c
}

impl Sync {
    pub fn start(db: &Path, robot: &Robot, extra: &[&str], log: PathBuf) -> Sync {
        let f = std::fs::File::create(&log).unwrap();
        let child = sync_command(db, &robot.id, &robot.url, extra).stdout(Stdio::null()).stderr(f).spawn().unwrap();
        Sync { child, log }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, then the exit status (must be a clean exit).
    pub fn stop(mut self) -> String {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().unwrap();
        let log = self.log();
        assert!(status.success(), "sync exited with {status}: {log}");
        log
    }

    /// SIGKILL, in place (the value can be replaced by a new process).
    pub fn kill_now(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    pub fn kill(mut self) -> String {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.log()
    }
}

impl Drop for Sync {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `robotmem sync --once`.
pub fn sync_once(db: &Path, robot: &Robot, extra: &[&str]) -> Output {
    let mut a = vec!["--once", "--share", "all"];
    a.extend_from_slice(extra);
    sync_command(db, &robot.id, &robot.url, &a).output().unwrap()
}

/// Polls `f` until it returns true (or panics with `what` after `secs`).
pub fn wait_for(secs: u64, what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < deadline, "timed out after {secs} s waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}
