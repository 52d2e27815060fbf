//! CPU contention for the learn phase: child processes (this bench binary run
//! again with `--real-text --spin DUTY PARENT`) that busy-loop on
//! `std::hint::spin_loop` for DUTY of every 10 ms and sleep the rest, until they
//! are killed or their parent is gone. `--contention 1.5` starts two children of
//! duty 0.75 (ceil(C) children, each C / ceil(C)).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PERIOD: Duration = Duration::from_millis(10);

/// The children; killed and reaped on drop (also when the bench panics).
pub struct Spinners {
    children: Vec<Child>,
    started: Instant,
    pub duty: f64,
}

impl Spinners {
    /// `cores` worth of busy loops (0: none).
    pub fn start(cores: f64) -> Spinners {
        let count = cores.ceil() as usize;
        let duty = if count == 0 { 0.0 } else { cores / count as f64 };
        let exe = std::env::current_exe().expect("current_exe");
        let children = (0..count)
            .map(|_| {
                Command::new(&exe)
                    .args(["--real-text", "--spin", &duty.to_string(), &std::process::id().to_string()])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("spawn spinner")
            })
            .collect();
        Spinners { children, started: Instant::now(), duty }
    }

    pub fn count(&self) -> usize {
        self.children.len()
    }

    /// CPU cores the children used since they started (utime + stime of
    /// /proc/PID/stat, in USER_HZ = 100 ticks per second).
    pub fn cores_used(&self) -> f64 {
        let ticks: u64 = self
            .children
            .iter()
            .map(|c| {
                let stat = std::fs::read_to_string(format!("/proc/{}/stat", c.id())).unwrap_or_default();
                let after = stat.rsplit_once(')').map(|x| x.1).unwrap_or("");
                let f: Vec<u64> = after.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
                f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)
            })
            .sum();
        ticks as f64 / 100.0 / self.started.elapsed().as_secs_f64().max(1e-9)
    }
}

impl Drop for Spinners {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The child: `--spin DUTY PARENT` (the arguments after `--spin`).
pub fn child(args: &[String]) -> ! {
    let duty: f64 = args.first().and_then(|d| d.parse().ok()).unwrap_or(1.0_f64).clamp(0.0, 1.0);
    let parent: u32 = args.get(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    let busy = PERIOD.mul_f64(duty);
    loop {
        if std::os::unix::process::parent_id() != parent {
            std::process::exit(0);
        }
        let t = Instant::now();
        while t.elapsed() < busy {
            std::hint::spin_loop();
        }
        if busy < PERIOD {
            std::thread::sleep(PERIOD - busy);
        }
    }
}
