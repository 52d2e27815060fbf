//! The panic boundary, the status codes and the thread's last error.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

use super::arena::to_cstring;
use crate::error::{Error, Status};

/// Status code returned by every fallible function. `RM_OK` is 0; every other
/// value is an error whose message `rm_last_error()` returns.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum rm_status {
    /// Success.
    RM_OK = 0,
    /// A parameter is NULL, empty, too long, out of range, not UTF-8 or malformed JSON.
    RM_INVALID_ARGUMENT = 1,
    /// The memory or session does not exist.
    RM_NOT_FOUND = 2,
    /// The operation would create a second active memory with the same content.
    RM_DUPLICATE = 3,
    /// Another process held the write lock past the busy timeout (after retries).
    RM_BUSY = 4,
    /// The file or its directory cannot be opened, read or written.
    RM_IO = 5,
    /// The file is not an SQLite/robotmem database or is damaged.
    RM_CORRUPT = 6,
    /// Embeddings were required but no embedding model is loaded.
    RM_EMBEDDING_UNAVAILABLE = 7,
    /// The disk or the database size limit is full; nothing was written.
    RM_FULL = 8,
    /// The memory exists but its state forbids the operation (e.g. already forgotten).
    RM_INVALID_STATE = 9,
    /// The database was created by a newer robotmem; the file was not modified.
    RM_SCHEMA_TOO_NEW = 10,
    /// The handle was closed, or is not a handle returned by rm_open().
    RM_CLOSED = 11,
    /// The database is read-only.
    RM_READ_ONLY = 12,
    /// Internal error (a bug); see rm_last_error().
    RM_INTERNAL = 13,
    /// A panic was caught inside the library (a bug); the handle remains usable.
    RM_PANIC = 14,
}

impl From<Status> for rm_status {
    fn from(s: Status) -> Self {
        use rm_status::*;
        match s {
            Status::Ok => RM_OK,
            Status::InvalidArgument => RM_INVALID_ARGUMENT,
            Status::NotFound => RM_NOT_FOUND,
            Status::Duplicate => RM_DUPLICATE,
            Status::Busy => RM_BUSY,
            Status::Io => RM_IO,
            Status::Corrupt => RM_CORRUPT,
            Status::EmbeddingUnavailable => RM_EMBEDDING_UNAVAILABLE,
            Status::Full => RM_FULL,
            Status::InvalidState => RM_INVALID_STATE,
            Status::SchemaTooNew => RM_SCHEMA_TOO_NEW,
            Status::Closed => RM_CLOSED,
            Status::ReadOnly => RM_READ_ONLY,
            Status::Internal => RM_INTERNAL,
            Status::Panic => RM_PANIC,
        }
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    static IN_CALL: Cell<bool> = const { Cell::new(false) };
    static PANIC_MSG: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn set_last_error(msg: &str) {
    LAST_ERROR.with(|e| *e.borrow_mut() = to_cstring(msg));
}

/// The calling thread's last error, valid until its next rm_ call.
pub(crate) fn last_error_ptr() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// Panics inside an entry point are recorded for rm_last_error() and not printed;
/// panics elsewhere in the process go to the previous hook unchanged. The message
/// never names a source file: a path of the machine that built the library says
/// nothing to the caller (and is none of its business).
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_CALL.with(Cell::get) {
                let msg = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                PANIC_MSG.with(|p| *p.borrow_mut() = Some(msg));
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs an entry point body: maps errors to status codes and the thread's last
/// error message, and turns panics into `RM_PANIC`.
pub(crate) fn guard(f: impl FnOnce() -> Result<(), Error>) -> rm_status {
    install_panic_hook();
    let outer = IN_CALL.with(|c| c.replace(true));
    let result = catch_unwind(AssertUnwindSafe(f));
    IN_CALL.with(|c| c.set(outer));
    match result {
        Ok(Ok(())) => {
            set_last_error("");
            rm_status::RM_OK
        }
        Ok(Err(e)) => {
            set_last_error(&e.message);
            e.status.into()
        }
        Err(_) => {
            let msg = PANIC_MSG.with(|p| p.borrow_mut().take()).unwrap_or_else(|| "panic".into());
            set_last_error(&format!("internal panic (please report): {msg}"));
            rm_status::RM_PANIC
        }
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use super::*;

    fn last_error() -> String {
        // SAFETY: last_error_ptr never returns NULL and the string lives until the next call.
        unsafe { CStr::from_ptr(last_error_ptr()) }.to_str().unwrap().to_string()
    }

    #[test]
    fn a_panic_becomes_rm_panic_and_the_boundary_stays_usable() {
        assert_eq!(guard(|| panic!("boom {}", 7)), rm_status::RM_PANIC);
        let msg = last_error();
        assert!(msg.contains("boom 7") && msg.contains("internal panic"), "{msg}");
        assert!(!msg.contains(".rs") && !msg.contains('/'), "a panic message names no source path: {msg}");
        assert_eq!(guard(|| Ok(())), rm_status::RM_OK);
        assert_eq!(last_error(), "", "success clears the message");
        assert_eq!(guard(|| Err(Error::not_found("memory #9 does not exist"))), rm_status::RM_NOT_FOUND);
        assert_eq!(last_error(), "memory #9 does not exist");
    }

    /// Child side of `a_caught_panic_prints_nothing`.
    #[test]
    fn panic_child() {
        if std::env::var_os("RM_PANIC_CHILD").is_some() {
            assert_eq!(guard(|| panic!("secret-panic-marker")), rm_status::RM_PANIC);
        }
    }

    #[test]
    fn a_caught_panic_prints_nothing() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["ffi::guard::tests::panic_child", "--exact", "--nocapture", "--test-threads=1"])
            .env("RM_PANIC_CHILD", "1")
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap();
        assert!(out.status.success());
        let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(all.contains("1 passed"), "{all}");
        assert!(!all.contains("secret-panic-marker") && !all.contains("panicked"), "panic text leaked: {all}");
    }
}
