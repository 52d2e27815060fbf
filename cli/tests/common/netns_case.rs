//! One case of the fleet over real links: robots in namespaces of their own with their
//! sidecars, learning (and recalling) on their own threads while a fault runs; then the
//! time to converge after it, and the counts: every learned memory is one row of
//! `fleet.changes` and of `fleet.memories` on the hub and one memory on every robot.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::hub::{Hub, Robot, Server};
use super::netns::{pct, report, Lab, Node, NsSync};
use super::proxy::Proxy;
use super::view::{converged, fact, open, temp};
use robotmem::{Db, LearnRequest, RecallRequest};

pub const EVERY: &[&str] = &["--every", "500ms", "--share", "all", "--batch", "100"];

pub struct Rig<'a> {
    // Dropped in this order: sidecars and proxies, files, then the namespaces.
    pub syncs: Vec<Option<NsSync>>,
    pub proxies: Vec<Option<Proxy>>,
    pub dbs: Vec<Db>,
    pub files: Vec<PathBuf>,
    pub robots: Vec<Robot>,
    pub urls: Vec<String>,
    pub nodes: Vec<Node>,
    pub hub: Hub<'a>,
    pub lab: Lab,
    /// Facts learned by each robot so far.
    pub learned: Vec<usize>,
    pub name: String,
    dir: tempfile::TempDir,
}

/// Learn and recall latencies (ms) on the robots during a fault.
#[derive(Default)]
pub struct Latency {
    pub learn: Vec<f64>,
    pub recall: Vec<f64>,
}

fn summary(v: &mut [f64]) -> String {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    format!("{:.1} / {:.1} / {:.0}", pct(v, 0.5), pct(v, 0.95), v.last().copied().unwrap_or(f64::NAN))
}

impl Latency {
    pub fn learns(&mut self) -> String {
        summary(&mut self.learn)
    }
    pub fn recalls(&mut self) -> String {
        summary(&mut self.recall)
    }
}

impl<'a> Rig<'a> {
    /// `n` robots, each with `pre` facts learned (their sidecars start with
    /// [`Rig::start_all`]). With `proxy`, each robot's sidecar reaches the hub through a
    /// fault proxy in its namespace.
    pub fn new(server: &'a Server, lab: Lab, name: &str, n: usize, pre: usize, proxy: bool) -> Rig<'a> {
        let hub = server.hub(name);
        let dir = temp();
        let mut rig = Rig {
            syncs: Vec::new(),
            proxies: Vec::new(),
            dbs: Vec::new(),
            files: Vec::new(),
            robots: Vec::new(),
            urls: Vec::new(),
            nodes: Vec::new(),
            hub,
            lab,
            learned: vec![0; n],
            name: name.into(),
            dir,
        };
        let upstream: SocketAddr = format!("{}:{}", rig.lab.hub_addr, Lab::hub_port()).parse().unwrap();
        for i in 0..n {
            let node = rig.lab.add_node();
            let robot = rig.hub.add_robot(&format!("r{}", i + 1));
            let file = rig.dir.path().join(format!("{}.db", robot.id));
            let db = open(&file);
            let p = proxy.then(|| Proxy::start(&node.ns, upstream));
            let url = match &p {
                Some(p) => rig.lab.url_via(&robot, "127.0.0.1", p.port),
                None => rig.lab.url(&robot),
            };
            rig.proxies.push(p);
            rig.urls.push(url);
            rig.nodes.push(node);
            rig.robots.push(robot);
            rig.files.push(file);
            rig.dbs.push(db);
        }
        for i in 0..n {
            for _ in 0..pre {
                rig.learn_one(i);
            }
        }
        rig
    }

    pub fn start_all(&mut self) {
        for i in 0..self.robots.len() {
            self.start_sync(i, EVERY);
        }
    }

    pub fn start_sync(&mut self, i: usize, args: &[&str]) {
        let s = NsSync::start(&self.nodes[i], &self.files[i], &self.robots[i].id, &self.urls[i], args);
        if self.syncs.len() <= i {
            self.syncs.resize_with(i + 1, || None);
        }
        self.syncs[i] = Some(s);
    }

    pub fn sync(&self, i: usize) -> &NsSync {
        self.syncs[i].as_ref().unwrap()
    }

    fn learn_one(&mut self, i: usize) {
        let text = fact(&self.robots[i].id, self.learned[i]);
        self.dbs[i].learn(&LearnRequest { insight: &text, ..Default::default() }).unwrap();
        self.learned[i] += 1;
    }

    /// Waits until every robot holds what the hub holds and nothing waits to be pushed:
    /// the time it took.
    pub fn converge(&self, secs: u64) -> Duration {
        let t = Instant::now();
        let mut last;
        loop {
            match converged(&self.hub, &self.files) {
                Ok(()) => return t.elapsed(),
                Err(e) => last = e,
            }
            if t.elapsed() > Duration::from_secs(secs) {
                let logs: String = self.syncs.iter().flatten().map(|s| s.log()).collect();
                panic!("{}: no convergence after {secs} s: {last}\n--- sidecar logs:\n{logs}", self.name);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Every robot learns a fact every `every` (and recalls every 4th time) on a thread
    /// of its own while `fault` runs; each learn must succeed. The latencies.
    pub fn during(&mut self, every: Duration, fault: impl FnOnce(&Self)) -> Latency {
        let stop = AtomicBool::new(false);
        let mut lat = Latency::default();
        let counts: Vec<(usize, Latency)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..self.dbs.len())
                .map(|i| {
                    let (db, id, start, stop) = (&self.dbs[i], self.robots[i].id.clone(), self.learned[i], &stop);
                    s.spawn(move || {
                        let mut l = Latency::default();
                        let mut k = start;
                        while !stop.load(Ordering::Relaxed) {
                            let text = fact(&id, k);
                            let t = Instant::now();
                            let r = db.learn(&LearnRequest { insight: &text, ..Default::default() });
                            l.learn.push(t.elapsed().as_secs_f64() * 1e3);
                            r.unwrap_or_else(|e| panic!("{id}: learn during the fault failed: {e:?}"));
                            k += 1;
                            if k % 4 == 0 {
                                let t = Instant::now();
                                let r = db.recall(&RecallRequest {
                                    query: "clearance near the dock",
                                    n: 5,
                                    ..Default::default()
                                });
                                l.recall.push(t.elapsed().as_secs_f64() * 1e3);
                                assert!(!r.unwrap_or_else(|e| panic!("{id}: recall failed: {e:?}")).hits.is_empty());
                            }
                            std::thread::sleep(every);
                        }
                        (k - start, l)
                    })
                })
                .collect();
            fault(self);
            stop.store(true, Ordering::Relaxed);
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (i, (n, l)) in counts.into_iter().enumerate() {
            self.learned[i] += n;
            lat.learn.extend(l.learn);
            lat.recall.extend(l.recall);
        }
        lat
    }

    /// Nothing lost, nothing twice: each robot's facts are one change each in
    /// `fleet.changes` and one row each in `fleet.memories`; every robot holds every
    /// fact of the fleet once.
    pub fn check_counts(&self) {
        let mut c = self.hub.admin();
        for (i, r) in self.robots.iter().enumerate() {
            let changes: i64 =
                c.query_one("SELECT count(*) FROM fleet.changes WHERE writer = $1", &[&r.id]).unwrap().get(0);
            let distinct: i64 = c
                .query_one("SELECT count(DISTINCT content) FROM fleet.changes WHERE writer = $1", &[&r.id])
                .unwrap()
                .get(0);
            let memories: i64 =
                c.query_one("SELECT count(*) FROM fleet.memories WHERE origin = $1", &[&r.id]).unwrap().get(0);
            let want = self.learned[i] as i64;
            assert_eq!(
                (changes, distinct, memories),
                (want, want, want),
                "{}: {}: hub rows (changes, distinct texts, memories)",
                self.name,
                r.id
            );
        }
        let total: usize = self.learned.iter().sum();
        for f in &self.files {
            let db = rusqlite::Connection::open(f).unwrap();
            let (n, distinct): (i64, i64) = db
                .query_row("SELECT count(*), count(DISTINCT content) FROM memories WHERE status = 'active'", [], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .unwrap();
            assert_eq!(
                (n, distinct),
                (total as i64, total as i64),
                "{}: {}: memories held (all, distinct)",
                self.name,
                f.display()
            );
        }
    }

    /// Stops every sidecar (each must exit cleanly); their logs.
    pub fn stop(&mut self) -> Vec<String> {
        self.syncs.iter_mut().filter_map(Option::take).map(NsSync::stop).collect()
    }
}

/// A row of the report: | case | fault | converged after | learns during | learn p50/p95/max | recall | timeouts |
/// The lab (namespaces) and the hub's server for a test, or None (SKIPPED, said
/// by whichever could not be had).
pub fn setup(test: &str) -> Option<(Server, Lab)> {
    let lab = Lab::get(test)?;
    let server = Server::get(test)?;
    Some((server, lab))
}

pub fn row(case: &str, fault: &str, converged: Duration, lat: &mut Latency, timeouts: &str) {
    report(&format!(
        "| {case} | {fault} | {:.1} s | {} | {} | {} | {timeouts} |",
        converged.as_secs_f64(),
        lat.learn.len(),
        lat.learns(),
        lat.recalls()
    ));
}
