//! C ABI helpers shared by the tests that call the `rm_*` functions directly
//! (included with `#[path]`).

#![allow(dead_code)]

use std::ffi::CStr;
use std::ptr::null_mut;

use robotmem::ffi::*;

/// The calling thread's last error message.
pub fn last_error() -> String {
    // SAFETY: never NULL; valid until the next call on this thread.
    unsafe { CStr::from_ptr(rm_last_error()) }.to_string_lossy().into_owned()
}

/// Options as `rm_open_options_init` makes them, for an in-memory database
/// without the model.
pub fn memory_options() -> rm_open_options {
    let mut o = std::mem::MaybeUninit::<rm_open_options>::uninit();
    // SAFETY: init writes every field.
    let mut o = unsafe {
        assert_eq!(rm_open_options_init(o.as_mut_ptr()), rm_status::RM_OK);
        o.assume_init()
    };
    o.path = c":memory:".as_ptr();
    o.embeddings = false;
    o
}

/// An open in-memory handle without the model (the test fails with the
/// library's message when it cannot be opened).
pub fn open_in_memory() -> *mut rm_db {
    let o = memory_options();
    let mut db = null_mut();
    // SAFETY: valid options and out pointer.
    assert_eq!(unsafe { rm_open(&o, &mut db) }, rm_status::RM_OK, "{}", last_error());
    db
}
