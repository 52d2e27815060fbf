// robotmem C++17 wrapper: implementation details (not part of the API; may change).
//
// JSON text writing without a JSON library, NUL-terminated copies of
// std::string_view inputs and tag arrays, the failure record shared by the Db
// methods, and the throwing / non-throwing runners built on it.
#ifndef ROBOTMEM_DETAIL_HPP
#define ROBOTMEM_DETAIL_HPP

#include <robotmem.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#if defined(__has_include)
#if __has_include(<version>)
#include <version>
#endif
#endif

#include "error.hpp"

namespace robotmem {
namespace detail {

/// Status and message of a failed call, filled by the *_into functions.
struct Failure {
    Status status = Status::Ok;
    std::string message;

    /// Records `status` with rm_last_error(), copied at once (it is thread-local
    /// and overwritten by the next rm_ call on this thread). Returns false.
    /// Throws std::bad_alloc only.
    bool from_c(rm_status status_code, const char* context = nullptr) {
        status = static_cast<Status>(status_code);
        message = context ? std::string(context) + rm_last_error() : std::string(rm_last_error());
        return false;
    }
    /// Records a failure detected by the wrapper itself. Returns false.
    bool set(Status s, std::string msg) {
        status = s;
        message = std::move(msg);
        return false;
    }
};

/// Appends `s` as a JSON string literal: quotes, backslashes and control
/// characters (U+0000-U+001F, NUL included) are escaped; other bytes, UTF-8
/// included, are copied unchanged (the library rejects invalid UTF-8).
inline void append_json_string(std::string& out, std::string_view s) {
    static const char hex[] = "0123456789abcdef";
    out.reserve(out.size() + s.size() + 2);
    out.push_back('"');
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
        case '"': out.append("\\\""); break;
        case '\\': out.append("\\\\"); break;
        case '\b': out.append("\\b"); break;
        case '\f': out.append("\\f"); break;
        case '\n': out.append("\\n"); break;
        case '\r': out.append("\\r"); break;
        case '\t': out.append("\\t"); break;
        default:
            if (c < 0x20) {
                out.append("\\u00");
                out.push_back(hex[c >> 4]);
                out.push_back(hex[c & 0xf]);
            } else {
                out.push_back(ch);
            }
        }
    }
    out.push_back('"');
}

/// Appends a finite double as the shortest JSON number that reads back to the
/// same value, independent of the C locale. Returns false (appending nothing)
/// for NaN and infinities, which JSON cannot represent.
inline bool append_json_number(std::string& out, double v) {
    if (!std::isfinite(v)) return false;
    char buf[64];
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, static_cast<std::size_t>(r.ptr - buf));
#else
    const int n = std::snprintf(buf, sizeof buf, "%.17g", v);
    for (int i = 0; i < n; ++i) {  // a locale may write the decimal point as ','
        const char c = buf[i];
        out.push_back((c >= '0' && c <= '9') || c == '-' || c == '+' || c == 'e' || c == 'E' ? c : '.');
    }
#endif
    return true;
}

/// Appends an integer as a JSON number.
template <class Int>
inline void append_json_integer(std::string& out, Int v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, static_cast<std::size_t>(r.ptr - buf));
}

/// "<field> contains a NUL byte at offset N; ..." (C strings end at the first NUL).
inline std::string nul_message(const char* field, std::size_t offset) {
    return std::string(field) + " contains a NUL byte at offset " + std::to_string(offset) +
           " (C strings cannot hold it; the text would be truncated)";
}

/// Fails with Status::InvalidArgument when `s` holds a NUL byte.
inline bool check_no_nul(std::string_view s, const char* field, Failure& f) {
    const auto at = s.find('\0');
    if (at == std::string_view::npos) return true;
    return f.set(Status::InvalidArgument, nul_message(field, at));
}

/// NULL for an empty std::string (option fields: empty means "not set"), else
/// its c_str(); fails on an embedded NUL. No copy is made.
inline bool opt_c_str(const std::string& s, const char* field, const char*& out, Failure& f) {
    if (!check_no_nul(s, field, f)) return false;
    out = s.empty() ? nullptr : s.c_str();
    return true;
}

/// A NUL-terminated copy of a std::string_view. Strings shorter than the inline
/// buffer (the common insight / query) need no heap allocation.
class CString {
public:
    CString() noexcept { small_[0] = '\0'; }
    CString(const CString&) = delete;
    CString& operator=(const CString&) = delete;

    /// Copies `s`; fails with Status::InvalidArgument naming `field` when it
    /// holds a NUL byte. Throws std::bad_alloc only.
    bool assign(std::string_view s, const char* field, Failure& f) {
        if (!check_no_nul(s, field, f)) return false;
        if (s.size() < sizeof small_) {
            if (!s.empty()) std::memcpy(small_, s.data(), s.size());
            small_[s.size()] = '\0';
            ptr_ = small_;
        } else {
            large_.assign(s.data(), s.size());
            ptr_ = large_.c_str();
        }
        return true;
    }
    /// As assign(), but an empty `s` gives NULL (an optional C argument).
    bool assign_optional(std::string_view s, const char* field, Failure& f) {
        if (s.empty()) {
            ptr_ = nullptr;
            return true;
        }
        return assign(s, field, f);
    }
    /// The copy (NULL after assign_optional of an empty string).
    const char* get() const noexcept { return ptr_; }

private:
    char small_[256];
    std::string large_;
    const char* ptr_ = small_;
};

/// A std::string copy of `s`, or "" when even that allocation fails.
inline std::string safe_string(const char* s) noexcept {
#if ROBOTMEM_EXCEPTIONS
    try {
        return std::string(s);
    } catch (...) {
        return std::string();
    }
#else
    return std::string(s);
#endif
}

/// Runs `body(out, failure)`; returns `out` or throws Error(failure).
template <class T, class Body>
T run(Body&& body) {
    T out;
    Failure f;
    if (!body(out, f)) raise(f.status, f.message);
    return out;
}

/// Runs `body(out, failure)` without letting any exception out.
template <class T, class Body>
Result<T> try_run(Body&& body) noexcept {
#if ROBOTMEM_EXCEPTIONS
    try {
#endif
        T out;
        Failure f;
        if (!body(out, f)) return Result<T>(f.status, std::move(f.message));
        return Result<T>(std::move(out));
#if ROBOTMEM_EXCEPTIONS
    } catch (const std::bad_alloc&) {
        return Result<T>(Status::Internal, safe_string("robotmem C++ wrapper: out of memory (std::bad_alloc)"));
    } catch (const std::exception& e) {
        return Result<T>(Status::Internal, safe_string(e.what()));
    } catch (...) {
        return Result<T>(Status::Internal, safe_string("robotmem C++ wrapper: unknown exception"));
    }
#endif
}

/// The `const char* const*` tag array of an option struct: on the stack up to
/// 20 tags (the library's limit per memory), on the heap beyond (the library
/// then reports the error).
class TagArray {
public:
    /// Fails with Status::InvalidArgument when a tag holds a NUL byte.
    bool set(const std::vector<std::string>& tags, Failure& f) {
        size_ = tags.size();
        const char** dst = small_.data();
        if (size_ > small_.size()) {
            large_.resize(size_);
            dst = large_.data();
        }
        for (std::size_t i = 0; i < size_; ++i) {
            const auto at = tags[i].find('\0');
            if (at != std::string::npos)
                return f.set(Status::InvalidArgument,
                             nul_message(("opts.tags[" + std::to_string(i) + "]").c_str(), at));
            dst[i] = tags[i].c_str();
        }
        data_ = size_ ? dst : nullptr;
        return true;
    }
    const char* const* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }

private:
    std::array<const char*, 20> small_{};
    std::vector<const char*> large_;
    const char** data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace detail
}  // namespace robotmem

#endif  // ROBOTMEM_DETAIL_HPP
