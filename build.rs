//! Build script: generates the C header with the pinned cbindgen (into OUT_DIR; a
//! test compares it with the committed include/robotmem.h) and sets the SONAME.

use std::env;
use std::path::PathBuf;

fn main() {
    sqlite_vec::build();
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
 *  - Threads the library starts: with a model, rm_open loads it on a thread of its own
 *    (while the calling thread loads the indexes), joined before rm_open returns.
 *    rm_recall embeds the query on a thread the handle keeps ("robotmem-overlap": at
 *    most 4 per handle, started when first needed, idle between recalls, joined by
 *    rm_close) while the calling thread makes the BM25 list; the recall waits for it.
 *    rm_learn_batch and rm_reembed embed on up to embed_threads threads of their own,
 *    joined before they return.
 *  - Functions that cannot fail (the *_free functions, rm_version, rm_status_str,
 *    rm_last_error) return their value directly.
 *  - A closed handle is never dereferenced: calls with it return RM_CLOSED.
 */"#
    .to_string()
}

/// sqlite-vec, compiled here (not by its crate, whose build enables no SIMD): the
/// C source of the pinned crate (Cargo.lock pins its checksum; the sha256 below
/// pins the file), built once portable and, on x86_64, once more with AVX. Every
/// global symbol gets a prefix so the two copies coexist and a static link into
/// a firmware image cannot clash with names like `bitmap_new`; the engine picks
/// the AVX copy at run time only when the CPU has AVX. aarch64 gets NEON (always
/// present there), from a copy with two faults corrected (`neon_source`).
mod sqlite_vec {
    use std::path::{Path, PathBuf};

    const VERSION: &str = "0.1.9";
    const SHA256: &str = "ba081a47fa02eadc3cf6b16c314b695b84081269349aac722b4efa338fe8fd85";
    /// Global symbols of sqlite-vec.c at SHA256 (`nm`), renamed per copy.
    const GLOBALS: &str = "
    _cmp array_append array_cleanup array_init bitmap_and_inplace bitmap_clear bitmap_copy
    bitmap_fill bitmap_get bitmap_new bitmap_new_from bitmap_set ensure_vector_match
    fvec_cleanup_noop is_alpha is_digit is_whitespace merge_sorted_lists min_idx
    npy_scanner_init npy_scanner_next npy_token_next parse_npy_buffer parse_npy_file
    parse_npy_header sbe_query_knn_data_clear sqlite3_vec_init sqlite3_vec_numpy_init
    sqlite3_vec_static_blobs_init type_name vec0Filter_fullscan vec0Filter_knn
    vec0Filter_knn_chunks_iter vec0Filter_point vec0Update_Delete
    vec0Update_Delete_ClearMetadata vec0Update_Delete_ClearRowid vec0Update_Delete_ClearValidity
    vec0Update_Delete_ClearVectors vec0Update_Delete_DeleteAux
    vec0Update_Delete_DeleteChunkIfEmpty vec0Update_Delete_DeleteRowids vec0Update_Insert
    vec0Update_InsertNextAvailableStep vec0Update_InsertRowidStep
    vec0Update_InsertWriteFinalStep vec0Update_Update vec0Update_UpdateAuxColumn
    vec0Update_UpdateVectorColumn vec0_chunks_iter vec0_column_distance_idx
    vec0_column_idx_is_auxiliary vec0_column_idx_is_metadata vec0_column_idx_is_partition
    vec0_column_idx_is_vector vec0_column_idx_to_auxiliary_idx vec0_column_idx_to_metadata_idx
    vec0_column_idx_to_partition_idx vec0_column_idx_to_vector_idx vec0_column_k_idx
    vec0_cursor_clear vec0_free vec0_free_resources vec0_get_auxiliary_value_for_rowid
    vec0_get_chunk_position vec0_get_id_value_from_rowid vec0_get_latest_chunk_rowid
    vec0_get_metadata_text_long_value vec0_get_partition_value_for_rowid vec0_get_vector_data
    vec0_metadata_chunk_size vec0_metadata_filter_text vec0_new_chunk
    vec0_num_defined_user_columns vec0_parse_auxiliary_column_definition
    vec0_parse_metadata_column_definition vec0_parse_partition_key_definition
    vec0_parse_primary_key_definition vec0_parse_table_option vec0_parse_vector_column
    vec0_query_fullscan_data_clear vec0_query_knn_data_clear vec0_query_point_data_clear
    vec0_result_id vec0_result_metadata_value_for_rowid vec0_rowid_from_id vec0_rowids_insert_id
    vec0_rowids_insert_rowid vec0_rowids_update_position vec0_scanner_init vec0_scanner_next
    vec0_set_metadata_filter_bitmap vec0_token_next vec0_write_metadata_value vec_type_name
    vector_byte_size vector_cleanup_noop vector_column_byte_size vector_from_value
    vector_subtype_name vtab_set_error";

    pub fn build() {
        let dir = source_dir();
        let src = dir.join("sqlite-vec.c");
        let bytes = std::fs::read(&src).unwrap_or_else(|e| panic!("cannot read {}: {e}", src.display()));
        let got = sha256_hex(&bytes);
        assert_eq!(got, SHA256, "{} is not the pinned sqlite-vec {VERSION} source", src.display());
        println!("cargo:rerun-if-changed={}", src.display());
        let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
        compile(&dir, "rm_vec_", "robotmem_vec", &[]);
        match arch.as_str() {
            "x86_64" => {
                compile(&dir, "rm_vecavx_", "robotmem_vec_avx", &["SQLITE_VEC_ENABLE_AVX"]);
                println!("cargo:rustc-cfg=robotmem_vec_avx");
            }
            "aarch64" => {
                compile(&dir, "rm_vecneon_", "robotmem_vec_neon", &["SQLITE_VEC_ENABLE_NEON"]);
                println!("cargo:rustc-cfg=robotmem_vec_neon");
            }
            _ => {}
        }
        println!("cargo:rustc-check-cfg=cfg(robotmem_vec_avx)");
        println!("cargo:rustc-check-cfg=cfg(robotmem_vec_neon)");
        println!("cargo:rerun-if-env-changed=ROBOTMEM_SQLITE_VEC_SRC");
    }

    fn compile(dir: &Path, prefix: &str, lib: &str, defines: &[&str]) {
        let mut b = cc::Build::new();
        let file =
            if defines.contains(&"SQLITE_VEC_ENABLE_NEON") { neon_source(dir) } else { dir.join("sqlite-vec.c") };
        b.file(file).include(dir).define("SQLITE_CORE", None).define("SQLITE_VEC_OMIT_FS", None).warnings(false);
        for d in defines {
            b.define(d, None);
            if *d == "SQLITE_VEC_ENABLE_AVX" {
                b.flag("-mavx");
            }
        }
        for s in GLOBALS.split_whitespace() {
            b.define(s, Some(format!("{prefix}{s}").as_str()));
        }
        b.compile(lib);
    }

    /// The NEON build's source: the pinned file with two faults of its NEON code
    /// corrected (a type error, and an overflow below), written to OUT_DIR. `l1_int8_neon` hands the `int8x16_t` of
    /// `vabdq_s8` to `vpaddlq_u8` and adds the resulting `uint32x4_t` to an
    /// `int32x4_t`, which GCC refuses ("incompatible type for argument 1") unless
    /// `-flax-vector-conversions` hides it for the whole file. The intent is clear:
    /// the absolute difference of two int8 lanes is 0..=255, which only fits read
    /// as u8, and the widened sums are non-negative. So the five accumulations get
    /// the two reinterpret casts they mean (a bitwise no-op, what clang does
    /// implicitly), and nothing else changes. A unit test of src/store/vectors.rs
    /// checks this copy's distances against the portable copy's over the whole
    /// int8 range (run under qemu by scripts/aarch64-test.sh).
    fn neon_source(dir: &Path) -> PathBuf {
        let src = std::fs::read_to_string(dir.join("sqlite-vec.c")).expect("sqlite-vec.c");
        let (mut out, mut fixed) = (String::with_capacity(src.len() + 512), 0);
        for line in src.split_inclusive('\n') {
            let t = line.trim_start();
            match (t.find("vpaddlq_u16(vpaddlq_u8("), t.strip_suffix(")));\n")) {
                (Some(at), Some(body)) if t.starts_with("acc") => {
                    let diff = &body[at + "vpaddlq_u16(vpaddlq_u8(".len()..];
                    let head = &t[..at];
                    let indent = &line[..line.len() - t.len()];
                    out.push_str(&format!(
                        "{indent}{head}vreinterpretq_s32_u32(vpaddlq_u16(vpaddlq_u8(vreinterpretq_u8_s8({diff})))));\n"
                    ));
                    fixed += 1;
                }
                _ => out.push_str(line),
            }
        }
        assert_eq!(fixed, 5, "sqlite-vec {VERSION}: expected the five l1_int8_neon accumulations to correct");
        // `l2_sqr_int8_neon` squares the int16 differences in int16: a difference
        // above 181 in magnitude (up to 255) overflows, and the distance comes out
        // wrong (the unit test found 671.6 for 987.6). Square with widening
        // multiplies into int32 instead, as the scalar path does.
        let (square, widened) = (
            "int16x8_t squared_diff = vmulq_s16(diff, diff);\n    int32x4_t sum = vpaddlq_s16(squared_diff);",
            "int32x4_t sum = vaddq_s32(vmull_s16(vget_low_s16(diff), vget_low_s16(diff)), vmull_high_s16(diff, diff));",
        );
        assert_eq!(out.matches(square).count(), 1, "sqlite-vec {VERSION}: expected l2_sqr_int8_neon's int16 square");
        let out = out.replace(square, widened);
        let path = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("sqlite-vec-neon.c");
        std::fs::write(&path, out).expect("write sqlite-vec-neon.c");
        path
    }

    /// The crate's unpacked source: ROBOTMEM_SQLITE_VEC_SRC, else Cargo's registry
    /// cache (the crate is a build-dependency, so Cargo has fetched and unpacked it).
    fn source_dir() -> PathBuf {
        if let Some(d) = std::env::var_os("ROBOTMEM_SQLITE_VEC_SRC") {
            return PathBuf::from(d);
        }
        let home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
            .expect("CARGO_HOME or HOME");
        let name = format!("sqlite-vec-{VERSION}");
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(home.join("registry").join("src"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join(&name))
            .filter(|p| p.join("sqlite-vec.c").is_file())
            .collect();
        dirs.sort();
        dirs.into_iter().next().unwrap_or_else(|| {
            panic!(
                "sqlite-vec {VERSION} source not found under {}/registry/src; set ROBOTMEM_SQLITE_VEC_SRC",
                home.display()
            )
        })
    }

    fn sha256_hex(bytes: &[u8]) -> String {
        use sha2::Digest;
        sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
    }
}
