//! A fault-injecting TCP proxy on the robot's side of its link: it listens on the
//! robot's own loopback (its sockets are made in the robot's namespace) and forwards to
//! the hub over the robot's veth. Each direction is a delay line (bytes read now are
//! written at now + delay ± jitter, in order). Modes: pass, delay with jitter, stalled
//! (bytes are read and held, nothing is forwarded, nothing is closed), and down (every
//! connection reset, new ones reset at once). Only the kernel can make a link silent to
//! TCP itself (keepalives are answered by the proxy's side): that is the blackhole route
//! of netns.rs.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    Pass,
    /// One-way delay: base ± jitter (uniform), so the round trip is twice base.
    Delay {
        base_ms: u64,
        jitter_ms: u64,
    },
    /// Read and hold, forward nothing, close nothing.
    Stalled,
    /// Reset every connection, and new ones as they come.
    Down,
}

struct Conn {
    killed: AtomicBool,
}

struct State {
    mode: Mutex<Mode>,
    conns: Mutex<Vec<Arc<Conn>>>,
    stop: AtomicBool,
    pub resets: AtomicU64,
    pub accepted: AtomicU64,
    seed: AtomicU64,
}

pub struct Proxy {
    pub port: u16,
    state: Arc<State>,
}

/// RST instead of FIN when the socket is closed.
fn linger0(s: &TcpStream) {
    let l = libc::linger { l_onoff: 1, l_linger: 0 };
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &l as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

/// Moves this thread into the named network namespace.
fn enter(ns: &str) {
    let f = std::fs::File::open(format!("/run/netns/{ns}")).expect("open netns");
    let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(r, 0, "setns {ns}: {}", std::io::Error::last_os_error());
}

impl Proxy {
    /// A proxy listening on 127.0.0.1 of namespace `ns`, forwarding to `upstream`.
    pub fn start(ns: &str, upstream: SocketAddr) -> Proxy {
        let state = Arc::new(State {
            mode: Mutex::new(Mode::Pass),
            conns: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            resets: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            seed: AtomicU64::new(0x9e37_79b9_7f4a_7c15),
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let (st, ns) = (state.clone(), ns.to_string());
        std::thread::spawn(move || {
            // Threads started from here inherit the namespace; sockets made here live in it.
            enter(&ns);
            let l = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
            l.set_nonblocking(true).unwrap();
            tx.send(l.local_addr().unwrap().port()).unwrap();
            while !st.stop.load(Ordering::Relaxed) {
                let Ok((down, _)) = l.accept() else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                down.set_nonblocking(false).unwrap();
                linger0(&down);
                st.accepted.fetch_add(1, Ordering::Relaxed);
                if *st.mode.lock().unwrap() == Mode::Down {
                    st.resets.fetch_add(1, Ordering::Relaxed);
                    continue; // dropped: RST
                }
                let Ok(up) = TcpStream::connect_timeout(&upstream, Duration::from_secs(5)) else { continue };
                linger0(&up);
                let _ = (down.set_nodelay(true), up.set_nodelay(true));
                let c = Arc::new(Conn { killed: AtomicBool::new(false) });
                st.conns.lock().unwrap().push(c.clone());
                for (from, to) in [(down.try_clone().unwrap(), up.try_clone().unwrap()), (up, down)] {
                    pipe(st.clone(), c.clone(), from, to);
                }
            }
        });
        let port = rx.recv_timeout(Duration::from_secs(5)).expect("proxy port");
        Proxy { port, state }
    }

    pub fn set(&self, mode: Mode) {
        *self.state.mode.lock().unwrap() = mode;
        if mode == Mode::Down {
            for c in self.state.conns.lock().unwrap().drain(..) {
                if !c.killed.swap(true, Ordering::Relaxed) {
                    self.state.resets.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Connections reset so far (open ones at a down edge, and new ones while down).
    pub fn resets(&self) -> u64 {
        self.state.resets.load(Ordering::Relaxed)
    }

    pub fn accepted(&self) -> u64 {
        self.state.accepted.load(Ordering::Relaxed)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::Relaxed);
        self.set(Mode::Down);
    }
}

fn rand(st: &State) -> u64 {
    // xorshift64*, shared: the jitter only needs to vary.
    let mut x = st.seed.load(Ordering::Relaxed);
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    st.seed.store(x, Ordering::Relaxed);
    x.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// One direction: a reader that stamps each chunk with its delivery time, a writer
/// that writes it then (or holds it while stalled). Either ends the pair on an error,
/// EOF or a reset; dropping the last clone of a socket then sends RST (SO_LINGER 0).
fn pipe(st: Arc<State>, c: Arc<Conn>, mut from: TcpStream, mut to: TcpStream) {
    let queue = Arc::new((Mutex::new((VecDeque::<(Instant, Vec<u8>)>::new(), false)), Condvar::new()));
    let (q, st2, c2) = (queue.clone(), st.clone(), c.clone());
    from.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 16384];
        let mut last = Instant::now();
        loop {
            if c2.killed.load(Ordering::Relaxed) || st2.stop.load(Ordering::Relaxed) {
                break;
            }
            match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let at = match *st2.mode.lock().unwrap() {
                        Mode::Delay { base_ms, jitter_ms } => {
                            let j = if jitter_ms == 0 { 0 } else { rand(&st2) % (2 * jitter_ms + 1) };
                            Instant::now() + Duration::from_millis((base_ms + j).saturating_sub(jitter_ms))
                        }
                        _ => Instant::now(),
                    };
                    last = last.max(at);
                    let (m, cv) = &*q;
                    m.lock().unwrap().0.push_back((last, buf[..n].to_vec()));
                    cv.notify_one();
                }
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
        }
        c2.killed.store(true, Ordering::Relaxed);
        let (m, cv) = &*q;
        m.lock().unwrap().1 = true;
        cv.notify_one();
    });
    std::thread::spawn(move || {
        let (m, cv) = &*queue;
        loop {
            let mut g = m.lock().unwrap();
            if c.killed.load(Ordering::Relaxed) && (g.0.is_empty() || *st.mode.lock().unwrap() == Mode::Down) {
                break;
            }
            let stalled = *st.mode.lock().unwrap() == Mode::Stalled;
            match g.0.front() {
                Some((at, _)) if !stalled && *at <= Instant::now() => {
                    let (_, data) = g.0.pop_front().unwrap();
                    drop(g);
                    if to.write_all(&data).is_err() {
                        c.killed.store(true, Ordering::Relaxed);
                        break;
                    }
                }
                Some((at, _)) if !stalled => {
                    let wait = at.saturating_duration_since(Instant::now()).min(Duration::from_millis(50));
                    let _ = cv.wait_timeout(g, wait).unwrap();
                }
                _ => {
                    let _ = cv.wait_timeout(g, Duration::from_millis(50)).unwrap();
                }
            }
        }
        c.killed.store(true, Ordering::Relaxed);
    });
}
