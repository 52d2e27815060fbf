//! Reading the caller's arguments: strings, output pointers, tag arrays. A leaf of
//! the ffi modules (it uses none of them).

use std::ffi::{c_char, CStr};

use crate::error::Error;

/// A required NUL-terminated UTF-8 string.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string valid for the call.
pub(crate) unsafe fn req_str<'a>(p: *const c_char, field: &str) -> Result<&'a str, Error> {
    opt_str(p, field)?.ok_or_else(|| Error::invalid(format!("{field} is NULL")))
}

/// An optional NUL-terminated UTF-8 string (NULL → None).
///
/// # Safety
/// As [`req_str`].
pub(crate) unsafe fn opt_str<'a>(p: *const c_char, field: &str) -> Result<Option<&'a str>, Error> {
    if p.is_null() {
        return Ok(None);
    }
    CStr::from_ptr(p).to_str().map(Some).map_err(|_| Error::invalid(format!("{field} is not valid UTF-8")))
}

/// The expiry fields of an options struct: a time to live in seconds (0: not
/// given) and an RFC 3339 time (NULL or "": not given); validated by the engine.
///
/// # Safety
/// As [`req_str`].
pub(crate) unsafe fn expiry<'a>(
    ttl_seconds: f64,
    expires_at: *const c_char,
    field: &str,
) -> Result<(Option<f64>, Option<&'a str>), Error> {
    let name = if field.is_empty() { "expires_at".to_string() } else { format!("{field}.expires_at") };
    let at = opt_str(expires_at, &name)?.filter(|s| !s.is_empty());
    Ok(((ttl_seconds != 0.0).then_some(ttl_seconds), at))
}

/// Checks an output pointer before any work is done.
pub(crate) fn out_ptr<T>(p: *mut T, field: &str) -> Result<(), Error> {
    if p.is_null() {
        Err(Error::invalid(format!("{field} is NULL")))
    } else {
        Ok(())
    }
}

/// Reads a caller's tag array.
///
/// # Safety
/// `tags` is NULL or points to `count` string pointers valid for the call.
pub(crate) unsafe fn tag_list<'a>(tags: *const *const c_char, count: usize) -> Result<Vec<&'a str>, Error> {
    if count > crate::limits::MAX_USER_TAGS {
        return Err(Error::invalid(format!("tag_count {count} exceeds {}", crate::limits::MAX_USER_TAGS)));
    }
    if tags.is_null() {
        return if count == 0 { Ok(Vec::new()) } else { Err(Error::invalid("tags is NULL but tag_count is not 0")) };
    }
    (0..count).map(|i| req_str(*tags.add(i), &format!("tags[{i}]"))).collect()
}
