//! The ONNX Runtime shared library: found, loaded and initialised once per process.
//!
//! ONNX Runtime allows one environment per process, so the first handle that
//! needs it loads the library (from the open options, `ROBOTMEM_ORT_LIBRARY`, or
//! `libonnxruntime.so` next to librobotmem) and every later handle shares it. A
//! failed load is remembered too: the process keeps running BM25 only, and every
//! open reports the same reason.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::{unavailable, ENV_RUNTIME};
use crate::error::Result;

/// The process's environment and the library it came from. Only success is
/// kept: after a failed load a later open may name a working library.
static ENV: OnceLock<(ort::environment::Environment, PathBuf)> = OnceLock::new();
static INIT: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// The shared environment, loading the runtime on first use. A later call that
/// names a different library gets the one already loaded (there can be only one).
pub fn environment(explicit: Option<&Path>) -> Result<&'static ort::environment::Environment> {
    if let Some((env, _)) = ENV.get() {
        return Ok(env);
    }
    let _one_at_a_time = INIT.lock();
    if let Some((env, _)) = ENV.get() {
        return Ok(env);
    }
    let path = locate(explicit).map_err(unavailable)?;
    disable_telemetry();
    let builder =
        ort::init_from(&path).map_err(|e| unavailable(format!("cannot load ONNX Runtime: {e}; BM25 only")))?;
    let quiet: ort::logging::LoggerFunction = std::sync::Arc::new(|_, _, _, _, _| {});
    let env = builder
        .with_name("robotmem")
        .with_telemetry(false)
        .with_logger(quiet)
        .build()
        .map_err(|e| unavailable(format!("cannot start ONNX Runtime from {}: {e}; BM25 only", path.display())))?;
    Ok(&ENV.get_or_init(|| (env, path)).0)
}

/// The variable ONNX Runtime reads to keep its telemetry off.
pub const TELEMETRY_ENV: &str = "ORT_DISABLE_TELEMETRY";

/// No network, no files outside the database: ONNX Runtime 1.31 on Linux starts a
/// telemetry client when its environment is created (it writes a device id and an
/// event store under `~/.cache/Microsoft/` and, about 9 s later, looks up and posts
/// to a Microsoft collector), and the API call that turns telemetry off
/// (`DisableTelemetryEvents`, made by `with_telemetry(false)` below) comes too late
/// to stop it. Only `ORT_DISABLE_TELEMETRY=1` in the process environment, read when
/// the runtime starts, does. So it is set here, once, before the library is loaded
/// (under the loading lock), unless it already says 1.
///
/// Setting a variable is not thread-safe against C code reading the environment at
/// the same moment (glibc's setenv/getenv); it happens once per process, at the first
/// open that loads a model. A host that wants no setenv at all sets
/// `ORT_DISABLE_TELEMETRY=1` itself before starting threads (README, "Promises").
fn disable_telemetry() {
    if std::env::var_os(TELEMETRY_ENV).is_none_or(|v| v != "1") {
        std::env::set_var(TELEMETRY_ENV, "1");
    }
}

/// Path of the loaded runtime library, if one is loaded.
pub fn loaded_path() -> Option<&'static Path> {
    ENV.get().map(|(_, p)| p.as_path())
}

fn locate(explicit: Option<&Path>) -> std::result::Result<PathBuf, String> {
    if let Some(p) = explicit {
        return existing(p.to_path_buf(), "ort_library option");
    }
    if let Some(p) = std::env::var_os(ENV_RUNTIME).filter(|v| !v.is_empty()) {
        return existing(PathBuf::from(p), ENV_RUNTIME);
    }
    if let Some(dir) = own_dir() {
        let p = dir.join("libonnxruntime.so");
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(format!(
        "no ONNX Runtime library: set the ort_library option or {ENV_RUNTIME}, or put libonnxruntime.so next to \
         librobotmem; BM25 only"
    ))
}

fn existing(p: PathBuf, source: &str) -> std::result::Result<PathBuf, String> {
    if p.is_file() {
        Ok(p)
    } else {
        Err(format!("ONNX Runtime library {} (from {source}) does not exist; BM25 only", p.display()))
    }
}

/// Directory of the shared object (or executable) this code was linked into.
fn own_dir() -> Option<PathBuf> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address and fills `info`.
    let ok = unsafe { libc::dladdr(own_dir as *const libc::c_void, &mut info) };
    if ok == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the loader.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    let path = PathBuf::from(std::ffi::OsStr::new(&*name.to_string_lossy()));
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    path.parent().map(Path::to_path_buf)
}
