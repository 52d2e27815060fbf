//! What the result structs are built from: the arena that owns their strings and
//! arrays, the boxed-result macro, the JSON rendering and the string helpers. Used
//! by every C object's file; uses only [`super::args`].
//!
//! Each public `rm_*_result` struct is the first field of a private `#[repr(C)]`
//! box that also owns the strings and arrays it points to, plus the Rust value
//! for the JSON rendering. Freeing the public pointer frees the whole box.

use std::ffi::{c_char, CString};
use std::ptr;

use serde_json::Value;

use super::args::out_ptr;
use crate::error::Error;

/// CString of text that may (in theory) hold a NUL: NULs become U+FFFD.
pub(crate) fn to_cstring(s: &str) -> CString {
    CString::new(s).unwrap_or_else(|_| CString::new(s.replace('\0', "\u{FFFD}")).expect("no NUL left"))
}

/// Owns C strings and arrays; pointers into it stay valid while it lives.
#[derive(Default)]
pub(crate) struct Arena {
    strings: Vec<CString>,
    lists: Vec<Vec<*const c_char>>,
}

impl Arena {
    pub(crate) fn str(&mut self, s: &str) -> *const c_char {
        let c = to_cstring(s);
        let p = c.as_ptr();
        self.strings.push(c);
        p
    }
    pub(crate) fn opt(&mut self, s: Option<&str>) -> *const c_char {
        s.map_or(ptr::null(), |s| self.str(s))
    }
    pub(crate) fn list(&mut self, items: &[String]) -> (*const *const c_char, usize) {
        let v: Vec<*const c_char> = items.iter().map(|s| self.str(s)).collect();
        let p = if v.is_empty() { ptr::null() } else { v.as_ptr() };
        let n = v.len();
        self.lists.push(v);
        (p, n)
    }
}

/// Pointer to the first element, NULL for an empty slice.
pub(crate) fn slice_ptr<T>(v: &[T]) -> *const T {
    if v.is_empty() {
        ptr::null()
    } else {
        v.as_ptr()
    }
}

/// Declares a boxed result: the public struct first, then what it points into.
macro_rules! owned {
    ($boxed:ident, $public:ty, $rust:ty, { $($extra:ident : $ety:ty),* }) => {
        #[repr(C)]
        pub(crate) struct $boxed {
            public: $public,
            arena: $crate::ffi::arena::Arena,
            rust: $rust,
            $($extra: $ety,)*
        }
        impl $boxed {
            pub(crate) fn into_raw(self) -> *mut $public {
                Box::into_raw(Box::new(self)) as *mut $public
            }
            /// # Safety
            /// `p` is NULL or was returned by `into_raw` and not freed.
            unsafe fn from_raw<'a>(p: *const $public) -> Option<&'a $boxed> {
                (p as *const $boxed).as_ref()
            }
            /// # Safety
            /// As `from_raw`; `p` is not used afterwards.
            unsafe fn free(p: *mut $public) {
                if !p.is_null() {
                    drop(Box::from_raw(p as *mut $boxed));
                }
            }
        }
    };
}
pub(crate) use owned;

/// Writes a boxed result to an optional out pointer (NULL: the result is dropped).
pub(crate) fn put<B, T>(out: *mut *mut T, boxed: B, into_raw: impl FnOnce(B) -> *mut T) {
    if !out.is_null() {
        // SAFETY: checked non-NULL; the caller provides a writable pointer slot.
        unsafe { *out = into_raw(boxed) };
    }
}

/// Writes the JSON rendering of a result to `*out_json` (free with rm_string_free).
/// Runs inside the caller's guard.
pub(crate) fn to_json<T>(
    found: Option<&T>,
    render: impl FnOnce(&T) -> Value,
    out_json: *mut *mut c_char,
) -> Result<(), Error> {
    out_ptr(out_json, "out_json")?;
    let r = found.ok_or_else(|| Error::invalid("result is NULL"))?;
    let text = to_cstring(&render(r).to_string());
    // SAFETY: out_json checked non-NULL.
    unsafe { *out_json = text.into_raw() };
    Ok(())
}
