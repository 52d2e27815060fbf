//! The operating system's page cache of a database file (and its WAL): how much
//! of it is resident, reading it in, evicting it. A recall reads rows (contexts,
//! texts) at random: whether their pages are cached or on the disk moves its
//! latency more than most code changes, so the hybrid phase states and sets it.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The database file and its WAL, where present.
fn files(db: &Path) -> Vec<PathBuf> {
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    [db.to_path_buf(), wal].into_iter().filter(|p| p.exists()).collect()
}

/// (resident MiB, total MiB) of the files' pages in the page cache (`mincore`
/// over a read-only mapping; nothing is read).
pub(super) fn resident(db: &Path) -> (f64, f64) {
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let (mut res, mut total) = (0usize, 0usize);
    for p in files(db) {
        let Ok(f) = File::open(&p) else { continue };
        let len = f.metadata().map(|m| m.len() as usize).unwrap_or(0);
        if len == 0 {
            continue;
        }
        total += len;
        // SAFETY: a read-only mapping of a file we opened, unmapped below;
        // mincore only reads the page tables.
        unsafe {
            let map = libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd(), 0);
            if map == libc::MAP_FAILED {
                continue;
            }
            let mut vec = vec![0u8; len.div_ceil(page)];
            if libc::mincore(map, len, vec.as_mut_ptr()) == 0 {
                res += vec.iter().filter(|&&b| b & 1 == 1).count() * page;
            }
            libc::munmap(map, len);
        }
    }
    (res.min(total) as f64 / 1048576.0, total as f64 / 1048576.0)
}

/// Bytes this process has read from storage so far (`read_bytes` of
/// /proc/self/io: what the page cache did not hold); 0 where not reported.
pub(super) fn disk_read() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines().find_map(|l| l.strip_prefix("read_bytes: ")).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// Reads the files once, so that their pages are cached (a robot whose database
/// was in use before).
pub(super) fn warm(db: &Path) {
    let mut buf = vec![0u8; 1 << 20];
    for p in files(db) {
        if let Ok(mut f) = File::open(&p) {
            while f.read(&mut buf).is_ok_and(|n| n > 0) {}
        }
    }
}

/// Drops the files' pages from the page cache (written back first), as after a
/// reboot; `posix_fadvise(DONTNEED)` needs no privilege.
pub(super) fn evict(db: &Path) {
    for p in files(db) {
        if let Ok(f) = File::open(&p) {
            let _ = f.sync_all();
            // SAFETY: an advice on a descriptor we own; no memory is touched.
            unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
    }
}
