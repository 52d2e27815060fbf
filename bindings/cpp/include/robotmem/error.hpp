// robotmem C++17 wrapper: status codes, the Error exception and Result<T>.
//
// Part of the header-only wrapper over the C ABI in <robotmem.h>; include
// <robotmem/robotmem.hpp> rather than this file.
#ifndef ROBOTMEM_ERROR_HPP
#define ROBOTMEM_ERROR_HPP

#include <robotmem.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

// Exceptions: the wrapper also builds with exceptions disabled (-fno-exceptions).
// Then every place that would throw robotmem::Error — the plain Db methods,
// Result::value() on a failure, to_json() without Json::Render, the render_*
// helpers — prints the error to stderr and calls std::abort(): use the try_*
// methods and check Result::ok(). Define ROBOTMEM_EXCEPTIONS to 0 or 1 to override
// the detection.
#ifndef ROBOTMEM_EXCEPTIONS
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define ROBOTMEM_EXCEPTIONS 1
#else
#define ROBOTMEM_EXCEPTIONS 0
#endif
#endif

namespace robotmem {

/// Status of a call, mirroring rm_status value for value (Status::Ok is 0).
enum class Status : std::int32_t {
    Ok = RM_OK,
    InvalidArgument = RM_INVALID_ARGUMENT,  ///< NULL/blank/oversize/non-UTF-8 input, malformed JSON, embedded NUL
    NotFound = RM_NOT_FOUND,                ///< the memory or session does not exist
    Duplicate = RM_DUPLICATE,               ///< would create a second active memory with the same content
    Busy = RM_BUSY,                         ///< another process held the write lock past the busy timeout
    Io = RM_IO,                             ///< the file or its directory cannot be opened, read or written
    Corrupt = RM_CORRUPT,                   ///< not an SQLite/robotmem database, or damaged
    EmbeddingUnavailable = RM_EMBEDDING_UNAVAILABLE,
    Full = RM_FULL,                  ///< disk or database size limit full; nothing was written
    InvalidState = RM_INVALID_STATE, ///< e.g. memory already forgotten, session already ended
    SchemaTooNew = RM_SCHEMA_TOO_NEW,
    Closed = RM_CLOSED,              ///< the Db is closed or moved-from
    ReadOnly = RM_READ_ONLY,
    Internal = RM_INTERNAL,          ///< a bug, or the wrapper ran out of memory in a try_* call
    Panic = RM_PANIC,                ///< a panic was caught inside the library (a bug)
    OverBudget = RM_OVER_BUDGET,     ///< a memory budget only protected memories could make room in; nothing was written
    Key = RM_KEY,                    ///< encrypted file: key missing or wrong, or a key for a plain file
};

/// Static name of a status ("RM_OK", "RM_NOT_FOUND", ...; "RM_UNKNOWN" for values
/// outside the enum), from rm_status_str(). Never NULL, never throws. Thread-safe.
inline const char* status_name(Status s) noexcept { return rm_status_str(static_cast<std::int32_t>(s)); }

/// Version of the loaded library, e.g. "0.3.0" (rm_version(); static storage).
/// Compare with RM_VERSION_STRING, the version of the header compiled against.
/// Never throws. Thread-safe.
inline const char* version() noexcept { return rm_version(); }

/// Whether the loaded library opens encrypted files (rm_encryption_available()).
inline bool encryption_available() noexcept { return rm_encryption_available(); }

/// Exception thrown by the throwing methods of robotmem::Db.
///
/// code() is the status; message() is the text of rm_last_error() copied right
/// after the failing C call (or a message of the wrapper itself, e.g. for an
/// embedded NUL in an input string). what() is "<STATUS_NAME>: <message>".
/// Copying an Error never throws (it shares the message like std::runtime_error).
class Error : public std::runtime_error {
public:
    /// Throws std::bad_alloc if the message cannot be stored.
    Error(Status code, const std::string& message)
        : std::runtime_error(std::string(status_name(code)) + ": " + message),
          code_(code),
          prefix_(std::char_traits<char>::length(status_name(code)) + 2) {}

    /// The status of the failed call (never Status::Ok).
    Status code() const noexcept { return code_; }

    /// The message without the status-name prefix. Valid as long as this Error.
    const char* message() const noexcept { return what() + prefix_; }

private:
    Status code_;
    std::size_t prefix_;
};

namespace detail {
/// Throws robotmem::Error(code, message); with exceptions disabled, prints it
/// and aborts.
[[noreturn]] inline void raise(Status code, const std::string& message) {
#if ROBOTMEM_EXCEPTIONS
    throw Error(code, message);
#else
    std::fprintf(stderr, "robotmem: %s: %s (exceptions are disabled: use the try_* methods)\n",
                 status_name(code), message.c_str());
    std::abort();
#endif
}
}  // namespace detail

namespace detail {
/// Status and message shared by Result<T> and Result<void>.
class ResultBase {
public:
    /// True on success.
    bool ok() const noexcept { return status_ == Status::Ok; }
    /// Same as ok().
    explicit operator bool() const noexcept { return ok(); }
    /// Status::Ok on success, else the failure status.
    Status status() const noexcept { return status_; }
    /// "" on success, else the failure message.
    const std::string& message() const noexcept { return message_; }
    /// The failure as an exception object (to throw or log). Precondition: !ok().
    /// Throws std::bad_alloc if the message cannot be copied.
    Error error() const { return Error(status_, message_); }

protected:
    ResultBase() noexcept = default;
    /// A failure. `status` must not be Status::Ok (it is turned into Internal).
    ResultBase(Status status, std::string message) noexcept
        : status_(status == Status::Ok ? Status::Internal : status), message_(std::move(message)) {}
    /// Throws robotmem::Error(status(), message()) when !ok().
    void check() const {
        if (!ok()) raise(status_, message_);
    }

private:
    Status status_ = Status::Ok;
    std::string message_;
};
}  // namespace detail

template <class T = void>
class Result;

/// Outcome of a non-throwing try_* call: either a value (ok()) or a failure
/// status with its message. The message is copied from rm_last_error() right
/// after the failing C call, so it stays valid whatever runs next on the thread.
///
/// A Result is a value type: movable, copyable when T is. It is marked
/// [[nodiscard]]: ignoring the status of a call is a compile-time warning.
///
///     auto r = db.try_recall("grasp mug", opts);
///     if (!r) { log(r.status(), r.message()); return; }
///     for (const auto& hit : r->hits) { ... }
///
/// Thread-safety: like any value, one Result may be read from several threads.
template <class T>
class [[nodiscard]] Result : public detail::ResultBase {
public:
    /// A success holding `value`.
    Result(T value) noexcept(std::is_nothrow_move_constructible<T>::value)  // NOLINT: implicit on purpose
        : value_(std::move(value)) {}

    /// A failure. `status` must not be Status::Ok (it is turned into Internal).
    Result(Status status, std::string message) noexcept : ResultBase(status, std::move(message)) {}

    /// The value. Throws robotmem::Error(status(), message()) when !ok().
    T& value() & {
        check();
        return *value_;
    }
    /// The value. Throws robotmem::Error(status(), message()) when !ok().
    const T& value() const& {
        check();
        return *value_;
    }
    /// The value, moved out. Throws robotmem::Error(status(), message()) when !ok().
    T&& value() && {
        check();
        return std::move(*value_);
    }

    /// Unchecked access: the behaviour is undefined unless ok().
    T& operator*() & noexcept { return *value_; }
    const T& operator*() const& noexcept { return *value_; }
    T&& operator*() && noexcept { return std::move(*value_); }
    T* operator->() noexcept { return &*value_; }
    const T* operator->() const noexcept { return &*value_; }

private:
    std::optional<T> value_;
};

/// Outcome of a non-throwing call that produces no value (flush, close).
template <>
class [[nodiscard]] Result<void> : public detail::ResultBase {
public:
    /// A success.
    Result() noexcept = default;
    /// A failure. `status` must not be Status::Ok (it is turned into Internal).
    Result(Status status, std::string message) noexcept : ResultBase(status, std::move(message)) {}
    /// Throws robotmem::Error(status(), message()) when !ok(); does nothing on success.
    void value() const { check(); }
};

}  // namespace robotmem

#endif  // ROBOTMEM_ERROR_HPP
