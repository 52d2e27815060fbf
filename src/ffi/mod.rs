//! The C ABI. Conventions (also stated at the top of `include/robotmem.h`):
//!
//! - every entry point runs inside `catch_unwind`: a panic becomes `RM_PANIC`
//!   (a function that returns no status swallows it; see `guard.rs`);
//! - every pointer is checked; NULL, invalid UTF-8, oversize text and malformed
//!   JSON return `RM_INVALID_ARGUMENT` with a message from `rm_last_error()`;
//! - outputs are written only when the call returns `RM_OK`;
//! - handles are looked up in a registry, so a closed (or never opened) handle
//!   returns `RM_CLOSED` instead of touching freed memory, and a handle closed
//!   while another thread is inside a call stays alive until that call returns.
//!
//! One file per C object, each with its functions and its result's free / JSON
//! functions; they use the leaves (`args`, `arena`, `guard`) and the files
//! of the objects they contain, never the other way round:
//!
//! | file | C objects |
//! |------|-----------|
//! | `guard.rs` | `rm_status`, the panic guard, the thread's last error |
//! | `args.rs` | reading strings, output pointers and tag arrays |
//! | `arena.rs` | what results are built from: arena, boxed results, JSON |
//! | `handle.rs` | `rm_db`, `rm_open_options`, open / close / flush, version, status names, last error, string free |
//! | `embedding.rs` | embedding status, rm_reembed, rm_learn_batch |
//! | `history.rs` | rm_memory_history and its result, rm_open_as_of |
//! | `memory.rs` | `rm_memory`; rm_learn, rm_get_memory, rm_forget, rm_update and their results |
//! | `perception.rs` | rm_save_perception, its options and result |
//! | `recall.rs` | rm_recall, its options, hits and result |
//! | `retention.rs` | rm_purge and its result |
//! | `session.rs` | rm_start_session, rm_end_session and their results |
//!
//! cbindgen writes the header's functions in the order it parses them: this
//! file's module order is the header's order.

#![allow(non_camel_case_types)]
// The safety contract of every entry point is the header's: pointers are NULL or valid
// for the call, strings NUL-terminated. Each function checks what it can (NULL, UTF-8).
#![allow(clippy::missing_safety_doc)]

// Leaves: no C functions, used by every object file below.
mod arena;
mod args;
mod guard;

// The handle and the library-level functions come first in the header.
mod handle;

mod embedding;
mod history;
mod memory;
mod perception;
mod recall;
mod retention;
mod session;

pub use embedding::*;
pub use guard::rm_status;
pub use handle::*;
pub use history::*;
pub use memory::*;
pub use perception::*;
pub use recall::*;
pub use retention::*;
pub use session::*;
