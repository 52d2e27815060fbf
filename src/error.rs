//! Status codes and the crate's error type.
//!
//! Every failure carries a [`Status`] (the same numbers the C ABI returns) and a
//! human-readable message that names the offending field or resource.

use std::ffi::CStr;
use std::fmt;

/// Outcome class of an operation. The numeric values are part of the C ABI
/// (`rm_status`) and never change meaning once released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Status {
    Ok = 0,
    /// A parameter is NULL, empty, too long, out of range or malformed.
    InvalidArgument = 1,
    /// The memory or session id does not exist.
    NotFound = 2,
    /// The write would create an exact duplicate of an active memory.
    Duplicate = 3,
    /// The database stayed locked by another process past the busy timeout.
    Busy = 4,
    /// The file could not be opened, read or written.
    Io = 5,
    /// The file is not a robotmem/SQLite database or is damaged.
    Corrupt = 6,
    /// Vector search or embedding was requested but no embedder is loaded.
    EmbeddingUnavailable = 7,
    /// The disk (or the configured size limit) is full.
    Full = 8,
    /// The target exists but is in a state that forbids the operation
    /// (e.g. forgetting a memory that is already forgotten).
    InvalidState = 9,
    /// The database was written by a newer robotmem (schema version too new).
    SchemaTooNew = 10,
    /// The handle was closed (or never opened).
    Closed = 11,
    /// The database was opened read-only, or the file is not writable.
    ReadOnly = 12,
    /// An unexpected internal error (a bug): the message has details.
    Internal = 13,
    /// A panic was caught at the API boundary (a bug); the handle stays usable.
    Panic = 14,
    /// The write would pass a memory budget (`max_memories`, per database or per
    /// collection) and only protected memories could make room: nothing changed.
    OverBudget = 15,
    /// The file is encrypted and the key is missing or wrong, or a key was
    /// given for a plain file; the file was not modified.
    Key = 16,
}

impl Status {
    /// Every status, in numeric order (the index is the value).
    pub const ALL: [Status; 17] = [
        Status::Ok,
        Status::InvalidArgument,
        Status::NotFound,
        Status::Duplicate,
        Status::Busy,
        Status::Io,
        Status::Corrupt,
        Status::EmbeddingUnavailable,
        Status::Full,
        Status::InvalidState,
        Status::SchemaTooNew,
        Status::Closed,
        Status::ReadOnly,
        Status::Internal,
        Status::Panic,
        Status::OverBudget,
        Status::Key,
    ];

    /// The status with this numeric value.
    pub fn from_code(code: i32) -> Option<Status> {
        usize::try_from(code).ok().and_then(|i| Self::ALL.get(i).copied())
    }

    /// Static, stable name of the status as a C string (e.g. `"RM_NOT_FOUND"`).
    pub fn c_name(self) -> &'static CStr {
        match self {
            Status::Ok => c"RM_OK",
            Status::InvalidArgument => c"RM_INVALID_ARGUMENT",
            Status::NotFound => c"RM_NOT_FOUND",
            Status::Duplicate => c"RM_DUPLICATE",
            Status::Busy => c"RM_BUSY",
            Status::Io => c"RM_IO",
            Status::Corrupt => c"RM_CORRUPT",
            Status::EmbeddingUnavailable => c"RM_EMBEDDING_UNAVAILABLE",
            Status::Full => c"RM_FULL",
            Status::InvalidState => c"RM_INVALID_STATE",
            Status::SchemaTooNew => c"RM_SCHEMA_TOO_NEW",
            Status::Closed => c"RM_CLOSED",
            Status::ReadOnly => c"RM_READ_ONLY",
            Status::Internal => c"RM_INTERNAL",
            Status::Panic => c"RM_PANIC",
            Status::OverBudget => c"RM_OVER_BUDGET",
            Status::Key => c"RM_KEY",
        }
    }

    /// Static, stable name of the status (e.g. `"RM_NOT_FOUND"`).
    pub fn name(self) -> &'static str {
        self.c_name().to_str().expect("ASCII")
    }
}

#[cfg(test)]
mod tests {
    use super::Status;

    #[test]
    fn codes_round_trip() {
        for (i, s) in Status::ALL.iter().enumerate() {
            assert_eq!(*s as i32, i as i32);
            assert_eq!(Status::from_code(i as i32), Some(*s));
        }
        assert_eq!(Status::from_code(-1), None);
        assert_eq!(Status::from_code(17), None);
    }
}

/// The crate's error: a status plus a message naming what went wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub status: Status,
    pub message: String,
}

impl Error {
    pub fn new(status: Status, message: impl Into<String>) -> Self {
        Error { status, message: message.into() }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::new(Status::InvalidArgument, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Error::new(Status::NotFound, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Error::new(Status::Internal, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status.name(), self.message)
    }
}

impl std::error::Error for Error {}

impl From<rusqlite::types::FromSqlError> for Error {
    /// A column of an unexpected type: the file is not what this version wrote.
    fn from(e: rusqlite::types::FromSqlError) -> Self {
        Error::new(Status::Corrupt, format!("unexpected column type: {e}"))
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ffi::ErrorCode as C;
        let status = match &e {
            rusqlite::Error::SqliteFailure(f, _) => match f.code {
                C::DatabaseBusy | C::DatabaseLocked => Status::Busy,
                C::DatabaseCorrupt | C::NotADatabase => Status::Corrupt,
                C::DiskFull => Status::Full,
                C::ReadOnly => Status::ReadOnly,
                C::CannotOpen | C::SystemIoFailure | C::PermissionDenied | C::FileLockingProtocolFailed => Status::Io,
                C::TooBig => Status::InvalidArgument,
                _ => Status::Internal,
            },
            // A column that is not what this version wrote: the file was damaged or changed.
            rusqlite::Error::Utf8Error(..)
            | rusqlite::Error::InvalidColumnType(..)
            | rusqlite::Error::IntegralValueOutOfRange(..) => Status::Corrupt,
            rusqlite::Error::FromSqlConversionFailure(_, _, inner) => match inner.downcast_ref::<Error>() {
                Some(ours) => return ours.clone(),
                None => Status::Corrupt,
            },
            _ => Status::Internal,
        };
        Error::new(status, format!("sqlite: {e}"))
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::internal(format!("json: {e}"))
    }
}

pub type Result<T> = std::result::Result<T, Error>;
