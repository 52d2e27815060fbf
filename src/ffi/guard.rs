//! The panic boundary, the status codes and the thread's last error.
//!
//! The body of every exported `extern "C"` function is a single call of one of
//! three guards, so that no panic ever unwinds into C (tests/ffi_guard.rs checks
//! the sources for it):
//!
//! - [`guard`] for the functions that return `rm_status`: an error becomes its
//!   status and message, a panic `RM_PANIC`;
//! - [`guard_with`] for the functions that return a value and cannot fail
//!   (`rm_version`, `rm_status_str`, `rm_last_error`): a panic returns a fixed
//!   fallback value;
//! - [`guard_void`] for the functions that return nothing (every `*_free`,
//!   `rm_string_free`): C cannot be told, so a panic is swallowed.
//!
//! After a panic, `rm_last_error()` says "internal panic (please report): …" with
//! the panic's message; the message never names a source file or line (a path of
//! the machine that built the library says nothing to the caller). The guards
//! themselves never panic: the thread-local state is reached with `try_with`
//! (a call from a thread-local destructor finds it gone), and a panic payload is
//! dropped inside a `catch_unwind` of its own.

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
    /// The write would pass a memory budget (rm_open_options.max_memories or
    /// max_memories_json) and only protected memories (constraint, gotcha,
    /// postmortem) could be evicted to make room; nothing was written.
    RM_OVER_BUDGET = 15,
    /// The file is encrypted and the key is missing or wrong, or a key was given
    /// for a plain file (or the build has no encryption: RM_INVALID_ARGUMENT then).
    /// The file was not modified.
    RM_KEY = 16,
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
            Status::OverBudget => RM_OVER_BUDGET,
            Status::Key => RM_KEY,
        }
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    static IN_CALL: Cell<bool> = const { Cell::new(false) };
    static PANIC_MSG: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Sets the calling thread's last error (dropped if the thread-locals are gone).
fn set_last_error(msg: &str) {
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = to_cstring(msg));
}

/// The calling thread's last error, valid until its next rm_ call.
pub(crate) fn last_error_ptr() -> *const c_char {
    LAST_ERROR.try_with(|e| e.borrow().as_ptr()).unwrap_or(c"".as_ptr())
}

/// Panics inside an entry point are recorded for rm_last_error() and not printed;
/// panics elsewhere in the process go to the previous hook unchanged.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    // set_hook panics on a thread that is unwinding (a host's destructor calling a
    // free function during a panic): leave the hook for a later call then.
    if std::thread::panicking() {
        return;
    }
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_CALL.try_with(Cell::get).unwrap_or(false) {
                // The payload only: the location (file, line) is left out.
                let msg = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                let _ = PANIC_MSG.try_with(|p| *p.borrow_mut() = Some(msg));
            } else {
                previous(info);
            }
        }));
    });
}

/// A panic message fit for the caller: words naming a Rust source file
/// ("src/x.rs", "x.rs:12:5") become "<source>".
fn scrub(msg: &str) -> String {
    let is_source = |w: &str| {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '.' && c != '/' && c != ':' && c != '_');
        let file = w.trim_end_matches(|c: char| c.is_ascii_digit() || c == ':');
        file.len() > 3 && file.ends_with(".rs")
    };
    msg.split(' ').map(|w| if is_source(w) { "<source>" } else { w }).collect::<Vec<_>>().join(" ")
}

/// Runs `f` with panics caught; a panic gives its message for rm_last_error().
fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install_panic_hook();
    let outer = IN_CALL.try_with(|c| c.replace(true)).unwrap_or(false);
    let taken = || PANIC_MSG.try_with(|p| p.borrow_mut().take()).ok().flatten();
    let result = catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let msg = taken().unwrap_or_else(|| "panic".into());
        // A payload's destructor is arbitrary code: it must not unwind from here
        // (still inside the call, so its panic is not printed either).
        if let Err(again) = catch_unwind(AssertUnwindSafe(|| drop(payload))) {
            std::mem::forget(again);
            taken();
        }
        format!("internal panic (please report): {}", scrub(&msg))
    });
    let _ = IN_CALL.try_with(|c| c.set(outer));
    result
}

/// Runs the body of a function that returns `rm_status`: maps errors to status
/// codes and the thread's last error message ("" after success), and turns a
/// panic into `RM_PANIC`.
pub(crate) fn guard(f: impl FnOnce() -> Result<(), Error>) -> rm_status {
    match catch(f) {
        Ok(Ok(())) => {
            set_last_error("");
            rm_status::RM_OK
        }
        Ok(Err(e)) => {
            set_last_error(&e.message);
            e.status.into()
        }
        Err(msg) => {
            set_last_error(&msg);
            rm_status::RM_PANIC
        }
    }
}

/// Runs the body of a function that returns a value and cannot fail: its value,
/// or `on_panic` after a panic (whose message rm_last_error() then returns). The
/// last error is left alone otherwise: these functions are not "calls" that clear it.
pub(crate) fn guard_with<T>(on_panic: T, f: impl FnOnce() -> T) -> T {
    catch(f).unwrap_or_else(|msg| {
        set_last_error(&msg);
        on_panic
    })
}

/// Runs the body of a function that returns nothing (the `*_free` functions).
/// A panic cannot be reported to C through a void return: it is swallowed (what
/// was being freed is leaked, never freed twice) and only recorded for
/// rm_last_error(). The last error is left alone otherwise, so freeing a result
/// between a failed call and rm_last_error() keeps the failure's message.
pub(crate) fn guard_void(f: impl FnOnce()) {
    guard_with((), f)
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

    #[test]
    fn a_panic_naming_a_source_file_is_reported_without_it() {
        assert_eq!(guard(|| panic!("bad state at src/ffi/memory.rs:120:9 (see /build/x/lib.rs)")), rm_status::RM_PANIC);
        let msg = last_error();
        assert!(msg.starts_with("internal panic (please report): bad state at"), "{msg}");
        assert!(!msg.contains(".rs") && !msg.contains(":120"), "{msg}");
        assert_eq!(scrub("x.rs"), "<source>");
        assert_eq!(scrub("index 3 out of range; cars.rsvp ok"), "index 3 out of range; cars.rsvp ok");
    }

    #[test]
    fn a_panic_with_any_payload_becomes_rm_panic() {
        assert_eq!(guard(|| std::panic::panic_any(42_u32)), rm_status::RM_PANIC);
        assert_eq!(last_error(), "internal panic (please report): unknown panic");
        assert_eq!(guard(|| Err(Error::invalid("x is NULL"))), rm_status::RM_INVALID_ARGUMENT);
    }

    #[test]
    fn a_panicking_payload_destructor_does_not_escape() {
        struct Bomb;
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("payload destructor");
            }
        }
        assert_eq!(guard(|| std::panic::panic_any(Bomb)), rm_status::RM_PANIC);
        assert_eq!(last_error(), "internal panic (please report): unknown panic");
        assert_eq!(guard(|| Ok(())), rm_status::RM_OK);
    }

    #[test]
    fn guard_with_returns_the_fallback_after_a_panic() {
        assert_eq!(guard_with(-1, || 5), 5);
        assert_eq!(guard(|| Err(Error::not_found("kept"))), rm_status::RM_NOT_FOUND);
        assert_eq!(guard_with(-1, || 6), 6);
        assert_eq!(last_error(), "kept", "a value function leaves the last error alone");
        assert_eq!(guard_with(-1, || panic!("in a getter")), -1);
        assert_eq!(last_error(), "internal panic (please report): in a getter");
    }

    #[test]
    fn guard_void_swallows_a_panic_and_keeps_the_last_error_otherwise() {
        assert_eq!(guard(|| Err(Error::not_found("before the free"))), rm_status::RM_NOT_FOUND);
        let mut ran = false;
        guard_void(|| ran = true);
        assert!(ran);
        assert_eq!(last_error(), "before the free", "a free does not erase the failure's message");
        guard_void(|| panic!("in a free"));
        assert_eq!(last_error(), "internal panic (please report): in a free");
        assert_eq!(guard(|| Ok(())), rm_status::RM_OK, "usable after a panic in a free");
    }

    #[test]
    fn a_guarded_call_from_a_destructor_during_a_panic_does_not_abort() {
        struct FreesOnDrop;
        impl Drop for FreesOnDrop {
            fn drop(&mut self) {
                guard_void(|| ());
                assert_eq!(guard(|| Ok(())), rm_status::RM_OK);
            }
        }
        let unwound = std::panic::catch_unwind(|| {
            let _f = FreesOnDrop;
            panic!("host panic");
        });
        assert!(unwound.is_err());
    }

    /// Child side of `a_caught_panic_prints_nothing`.
    #[test]
    fn panic_child() {
        if std::env::var_os("RM_PANIC_CHILD").is_some() {
            assert_eq!(guard(|| panic!("secret-panic-marker")), rm_status::RM_PANIC);
            guard_void(|| panic!("secret-panic-marker void"));
            assert_eq!(guard_with(0, || panic!("secret-panic-marker value")), 0);
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
