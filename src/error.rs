//! Status codes and the crate's error type.
//!
//! Every failure carries a [`Status`] (the same numbers the C ABI returns) and a
//! human-readable message that names the offending field or resource.

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
}

impl Status {
    /// Static, stable name of the status (e.g. `"RM_NOT_FOUND"`).
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "RM_OK",
            Status::InvalidArgument => "RM_INVALID_ARGUMENT",
            Status::NotFound => "RM_NOT_FOUND",
            Status::Duplicate => "RM_DUPLICATE",
            Status::Busy => "RM_BUSY",
            Status::Io => "RM_IO",
            Status::Corrupt => "RM_CORRUPT",
            Status::EmbeddingUnavailable => "RM_EMBEDDING_UNAVAILABLE",
            Status::Full => "RM_FULL",
            Status::InvalidState => "RM_INVALID_STATE",
            Status::SchemaTooNew => "RM_SCHEMA_TOO_NEW",
            Status::Closed => "RM_CLOSED",
            Status::ReadOnly => "RM_READ_ONLY",
            Status::Internal => "RM_INTERNAL",
            Status::Panic => "RM_PANIC",
        }
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

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ffi::ErrorCode as C;
        let status = match &e {
            rusqlite::Error::SqliteFailure(f, _) => match f.code {
                C::DatabaseBusy | C::DatabaseLocked => Status::Busy,
                C::DatabaseCorrupt | C::NotADatabase => Status::Corrupt,
                C::DiskFull => Status::Full,
                C::ReadOnly => Status::ReadOnly,
                C::CannotOpen | C::SystemIoFailure | C::PermissionDenied | C::FileLockingProtocolFailed => {
                    Status::Io
                }
                C::TooBig => Status::InvalidArgument,
                _ => Status::Internal,
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
