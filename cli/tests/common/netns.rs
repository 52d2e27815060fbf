//! Robots on links of their own (scripts/fleet-test.sh runs the hub's PostgreSQL, and
//! these tests, inside a network namespace: the hub's machine, ROBOTMEM_TEST_HUB_NETNS,
//! address ROBOTMEM_TEST_HUB_ADDR = 10.200.0.1 on its loopback). Robot i gets a
//! namespace `<hub ns>-r<i>` joined to the hub's by a veth pair: the robot's end is
//! 10.200.i.2, the hub's end `rb<i>` 10.200.i.1. Faults on the real link: a rate limit
//! (tbf), a blackhole route on the hub for the robot's address (every packet to the
//! robot, data, ACKs, SYN-ACKs, vanishes: from the robot the link is silent), and the
//! hub's end taken down and up. Everything is deleted on drop (also when a test
//! panics); the script deletes what a killed test left.
//!
//! Without namespaces (not root, no iproute2, `ip netns add` refused) `Lab::get` prints
//! SKIPPED with the reason.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::hub::{Robot, BIN};

/// `ip ARGS`, which must succeed.
pub fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().expect("run ip");
    assert!(o.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr));
}

fn ip_quiet(args: &[&str]) {
    let _ = Command::new("ip").args(args).stderr(Stdio::null()).status();
}

fn tc(args: &[&str]) {
    let o = Command::new("tc").args(args).output().expect("run tc");
    assert!(o.status.success(), "tc {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr));
}

pub struct Lab {
    pub hub_ns: String,
    pub hub_addr: String,
    nodes: Vec<Node>,
}

/// A robot's namespace and link.
#[derive(Clone, Debug)]
pub struct Node {
    pub ns: String,
    pub index: usize,
    /// The robot's address.
    pub addr: String,
    /// The hub's end of the veth (in the hub's namespace: this process's).
    pub hub_if: String,
}

impl Lab {
    /// The lab, or `None` after printing SKIPPED and why.
    pub fn get(test: &str) -> Option<Lab> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        match (var("ROBOTMEM_TEST_HUB_NETNS"), var("ROBOTMEM_TEST_HUB_ADDR")) {
            (Some(hub_ns), Some(hub_addr)) => Some(Lab { hub_ns, hub_addr, nodes: Vec::new() }),
            _ => {
                let why = var("ROBOTMEM_TEST_NETNS_SKIP").unwrap_or_else(|| {
                    "no hub namespace (ROBOTMEM_TEST_HUB_NETNS unset: run scripts/fleet-test.sh as root)".into()
                });
                eprintln!("\n*** SKIPPED: {test}: the fleet over real links needs network namespaces: {why} ***\n");
                None
            }
        }
    }

    /// A new robot namespace joined to the hub's by a veth pair; its index: from
    /// `ROBOTMEM_TEST_NODE_BASE` + 1 (default 0 + 1), so that test binaries run side
    /// by side (scripts/fleet-test.sh) use names and addresses of their own.
    pub fn add_node(&mut self) -> Node {
        let base: usize = std::env::var("ROBOTMEM_TEST_NODE_BASE").ok().and_then(|b| b.parse().ok()).unwrap_or(0);
        let index = base + self.nodes.len() + 1;
        assert!(index < 250, "robot index {index}: at most 249 (ROBOTMEM_TEST_NODE_BASE {base})");
        let ns = format!("{}-r{index}", self.hub_ns);
        let hub_if = format!("rb{index}");
        let (hub_end, addr) = (format!("10.200.{index}.1"), format!("10.200.{index}.2"));
        // A failed run of the same test binary may have left these.
        ip_quiet(&["netns", "del", &ns]);
        ip_quiet(&["link", "del", &hub_if]);
        ip(&["netns", "add", &ns]);
        let node = Node { ns: ns.clone(), index, addr: addr.clone(), hub_if: hub_if.clone() };
        self.nodes.push(node.clone());
        ip(&["link", "add", &hub_if, "type", "veth", "peer", "name", "eth0", "netns", &ns]);
        ip(&["addr", "add", &format!("{hub_end}/24"), "dev", &hub_if]);
        ip(&["link", "set", &hub_if, "up"]);
        ip(&["-n", &ns, "link", "set", "lo", "up"]);
        ip(&["-n", &ns, "addr", "add", &format!("{addr}/24"), "dev", "eth0"]);
        ip(&["-n", &ns, "link", "set", "eth0", "up"]);
        ip(&["-n", &ns, "route", "add", "default", "via", &hub_end]);
        node
    }

    /// The robot's connection string to the hub at `host:port` (as seen from its namespace).
    pub fn url_via(&self, robot: &Robot, host: &str, port: u16) -> String {
        let at = robot.url.find('@').expect("@ in url");
        let slash = at + robot.url[at..].find('/').expect("/ after host");
        format!("{}@{host}:{port}{}", &robot.url[..at], &robot.url[slash..])
    }

    pub fn hub_port() -> u16 {
        std::env::var("ROBOTMEM_TEST_PG_PORT").expect("ROBOTMEM_TEST_PG_PORT").parse().expect("port")
    }

    /// The robot's connection string straight to the hub's address.
    pub fn url(&self, robot: &Robot) -> String {
        self.url_via(robot, &self.hub_addr, Self::hub_port())
    }

    /// Everything the hub sends to the robot vanishes (on) or flows again (off).
    pub fn blackhole(&self, n: &Node, on: bool) {
        ip(&["route", if on { "add" } else { "del" }, "blackhole", &format!("{}/32", n.addr)]);
    }

    /// The hub's end of the robot's link down or up (while down, frames either way are dropped).
    pub fn link(&self, n: &Node, up: bool) {
        ip(&["link", "set", &n.hub_if, if up { "up" } else { "down" }]);
    }

    /// A rate limit both ways (tbf: `rate`, 8 KB bucket, packets wait up to 1 s in the queue).
    pub fn rate(&self, n: &Node, rate: &str) {
        tc(&["qdisc", "replace", "dev", &n.hub_if, "root", "tbf", "rate", rate, "burst", "8kb", "latency", "1s"]);
        tc(&[
            "-n", &n.ns, "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", rate, "burst", "8kb", "latency",
            "1s",
        ]);
    }

    pub fn unrate(&self, n: &Node) {
        tc(&["qdisc", "del", "dev", &n.hub_if, "root"]);
        tc(&["-n", &n.ns, "qdisc", "del", "dev", "eth0", "root"]);
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for n in &self.nodes {
            ip_quiet(&["route", "del", "blackhole", &format!("{}/32", n.addr)]);
            // Processes still in it (a sidecar a panicking test did not stop) are ours.
            if let Ok(o) = Command::new("ip").args(["netns", "pids", &n.ns]).output() {
                for pid in String::from_utf8_lossy(&o.stdout).split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
            ip_quiet(&["netns", "del", &n.ns]);
            ip_quiet(&["link", "del", &n.hub_if]);
        }
    }
}

/// A `robotmem sync` process in a robot's namespace; its stderr lines with the time
/// each was read.
pub struct NsSync {
    pub child: Child,
    pub lines: Arc<Mutex<Vec<(Instant, String)>>>,
}

impl NsSync {
    pub fn start(node: &Node, db: &Path, robot_id: &str, url: &str, extra: &[&str]) -> NsSync {
        let mut child = Command::new("ip")
            .args(["netns", "exec", &node.ns, BIN])
            .arg("--db")
            .arg(db)
            .args(["--no-embeddings", "--durability", "normal", "sync", "--robot-id", robot_id])
            .args(extra)
            .env("ROBOTMEM_HUB_URL", url)
            .env_remove("ROBOTMEM_MODEL_DIR")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sync");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (err, l) = (child.stderr.take().expect("stderr"), lines.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                l.lock().unwrap().push((Instant::now(), line));
            }
        });
        NsSync { child, lines }
    }

    pub fn log(&self) -> String {
        self.lines.lock().unwrap().iter().map(|(_, l)| format!("{l}\n")).collect()
    }

    /// The first line after `since` containing `what`: when it came, and the line.
    pub fn first_after(&self, since: Instant, what: &str) -> Option<(Duration, String)> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .find(|(t, l)| *t >= since && l.contains(what))
            .map(|(t, l)| (*t - since, l.clone()))
    }

    /// Warnings after `since` (failures of the link, with the time after `since`).
    pub fn warnings_after(&self, since: Instant) -> Vec<(Duration, String)> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|(t, l)| *t >= since && l.contains("warning"))
            .map(|(t, l)| (*t - since, l.clone()))
            .collect()
    }

    pub fn stop(mut self) -> String {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let log = self.log();
        assert!(status.success(), "sync exited with {status}: {log}");
        log
    }
}

impl Drop for NsSync {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Appends a line to the run's report of measurements (the script prints it at the end).
pub fn report(line: &str) {
    println!("{line}");
    if let Ok(p) = std::env::var("ROBOTMEM_TEST_NETNS_REPORT") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(p) {
            let _ = writeln!(f, "{line}");
        }
    }
}

/// p-quantile of sorted values.
pub fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}
