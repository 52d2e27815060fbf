//! Build script: generates the C header with the pinned cbindgen (into OUT_DIR; a
//! test compares it with the committed include/robotmem.h) and sets the SONAME.

use std::env;
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let major: u32 = env::var("CARGO_PKG_VERSION_MAJOR").unwrap().parse().unwrap();
    let minor: u32 = env::var("CARGO_PKG_VERSION_MINOR").unwrap().parse().unwrap();
    let patch: u32 = env::var("CARGO_PKG_VERSION_PATCH").unwrap().parse().unwrap();

    // SONAME: the ABI may change with the minor version while the major is 0.
    let soname_version = if major == 0 { format!("0.{minor}") } else { major.to_string() };
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librobotmem.so.{soname_version}");
    }

    let mut config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    config.header = Some(header_comment());
    config.after_includes = Some(format!(
        "\n#define RM_VERSION_MAJOR {major}\n#define RM_VERSION_MINOR {minor}\n#define RM_VERSION_PATCH {patch}\n\
         #define RM_VERSION_STRING \"{major}.{minor}.{patch}\"\n"
    ));
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("robotmem.h");
    cbindgen::Builder::new()
        .with_crate(&dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate the header")
        .write_to_file(&out);

    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=src");
}

fn header_comment() -> String {
    r#"/*
 * robotmem — long-term memory engine for robots. C API.
 *
 * Conventions that hold for every function below:
 *  - Strings are NUL-terminated UTF-8. Input strings and option structs are only
 *    read during the call (the library keeps copies where it needs them).
 *  - Fallible functions return rm_status. RM_OK (0) means success; any other value
 *    is an error, and rm_last_error() gives a message naming the failing field.
 *  - Outputs are written only when the call returns RM_OK.
 *  - NULL, invalid UTF-8, oversize text and malformed JSON give RM_INVALID_ARGUMENT,
 *    never a crash. A panic inside the library is caught and returned as RM_PANIC.
 *  - Results are allocated by the library and owned by the caller: each result type
 *    has its own free function (NULL accepted); JSON strings are freed with
 *    rm_string_free(). Results stay valid after the handle is closed.
 *  - Thread-safety: an rm_db handle may be shared by any number of threads (e.g. the
 *    threads of a ROS executor); calls are synchronised internally and readers do not
 *    wait for writers. Results may be read from any thread. Several processes may
 *    open the same database file (SQLite WAL, busy timeout, bounded retries).
 *  - Functions that cannot fail (the *_free functions, rm_version, rm_status_str,
 *    rm_last_error) return their value directly.
 *  - A closed handle is never dereferenced: calls with it return RM_CLOSED.
 */"#
    .to_string()
}
