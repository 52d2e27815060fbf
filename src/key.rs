//! The encryption key of a database file (docs/ENCRYPTION.md): 256 raw bits,
//! from bytes or a key file. Used by the open options and by the store, which
//! gives it to SQLCipher (`store::cipher`).
//!
//! Keys are raw keys, not passphrases: no key derivation runs (SQLCipher's
//! PBKDF2 takes ~0.3 s on a desktop core and seconds on a Cortex-A53, for every
//! connection a handle opens), so a robot provisions a random key file
//! (`head -c 32 /dev/urandom`). A key file holds exactly 32 bytes, or 64 hex
//! digits and an optional newline, and must not be readable by group or others
//! (as ssh requires of its keys).

use std::path::Path;

use crate::error::{Error, Result};

/// A 256-bit key. Its bytes never appear in `Debug` output or messages, and
/// are overwritten when it is dropped.
#[derive(Clone, PartialEq, Eq)]
pub struct Key([u8; 32]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        for b in self.0.iter_mut() {
            // SAFETY: a valid, aligned `u8` of this array; volatile so the
            // overwrite of a value about to be freed is not optimised away.
            unsafe { std::ptr::write_volatile(b, 0) };
        }
    }
}

impl Key {
    /// The key of 32 raw bytes; `InvalidArgument` for any other length.
    pub fn from_bytes(bytes: &[u8]) -> Result<Key> {
        let raw: [u8; 32] = bytes
            .try_into()
            .map_err(|_| Error::invalid(format!("an encryption key is 32 bytes (256 bits), not {}", bytes.len())))?;
        Ok(Key(raw))
    }

    /// A new random key (the operating system's random source, through UUIDv4:
    /// 244 random bits), for a file robotmem makes and drops itself.
    pub(crate) fn random() -> Key {
        let mut raw = [0u8; 32];
        raw[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        raw[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        Key(raw)
    }

    /// The key in a key file: 32 bytes, or 64 hex digits and an optional
    /// newline. The file must be a regular file readable by its owner only.
    pub fn from_file(path: &Path) -> Result<Key> {
        let shown = path.display();
        let meta =
            std::fs::metadata(path).map_err(|e| Error::invalid(format!("cannot read the key file {shown}: {e}")))?;
        if !meta.is_file() {
            return Err(Error::invalid(format!("the key file {shown} is not a regular file")));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            if meta.permissions().mode() & 0o077 != 0 {
                return Err(Error::invalid(format!(
                    "the key file {shown} is readable by group or others: chmod 600 it"
                )));
            }
        }
        if meta.len() > 128 {
            return Err(Error::invalid(format!("the key file {shown} is not a key (more than 128 bytes)")));
        }
        let bytes =
            std::fs::read(path).map_err(|e| Error::invalid(format!("cannot read the key file {shown}: {e}")))?;
        let text = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        if bytes.len() == 32 {
            return Key::from_bytes(&bytes);
        }
        if text.len() == 64 && text.iter().all(u8::is_ascii_hexdigit) {
            let mut raw = [0u8; 32];
            for (i, pair) in text.chunks_exact(2).enumerate() {
                let hex = std::str::from_utf8(pair).expect("ASCII hex digits");
                raw[i] = u8::from_str_radix(hex, 16).expect("hex digits");
            }
            return Ok(Key(raw));
        }
        Err(Error::invalid(format!("the key file {shown} holds neither 32 bytes nor 64 hex digits")))
    }

    /// SQLCipher's raw-key literal, `"x'<64 hex digits>'"`.
    #[cfg_attr(not(feature = "encryption"), allow(dead_code))]
    pub(crate) fn literal(&self) -> String {
        let mut s = String::with_capacity(67);
        s.push_str("\"x'");
        for b in self.0 {
            s.push_str(&format!("{b:02x}"));
        }
        s.push_str("'\"");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Status;

    #[test]
    fn key_files_take_raw_or_hex_keys_owned_by_one_user() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("robotmem-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, bytes: &[u8], mode: u32| {
            let p = dir.join(name);
            std::fs::write(&p, bytes).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            p
        };
        let raw: Vec<u8> = (0..32u8).collect();
        let hex: String = raw.iter().map(|b| format!("{b:02X}")).collect();
        let want = Key::from_bytes(&raw).unwrap();
        assert_eq!(Key::from_file(&write("raw", &raw, 0o600)).unwrap(), want);
        assert_eq!(Key::from_file(&write("hex", hex.as_bytes(), 0o400)).unwrap(), want);
        assert_eq!(Key::from_file(&write("hexnl", format!("{hex}\n").as_bytes(), 0o600)).unwrap(), want);
        for (name, bytes, mode, says) in [
            ("open", &raw[..], 0o644, "chmod 600"),
            ("short", &raw[..31], 0o600, "neither"),
            ("odd", b"zz".repeat(32).as_slice(), 0o600, "neither"),
            ("big", &[7u8; 4096][..], 0o600, "more than 128"),
        ] {
            let e = Key::from_file(&write(name, bytes, mode)).unwrap_err();
            assert_eq!(e.status, Status::InvalidArgument, "{name}");
            assert!(e.message.contains(says), "{name}: {}", e.message);
        }
        assert!(Key::from_file(&dir).unwrap_err().message.contains("not a regular file"));
        assert!(Key::from_file(&dir.join("missing")).is_err());
        assert!(Key::from_bytes(&raw[..16]).unwrap_err().message.contains("32 bytes"));
        assert_eq!(format!("{want:?}"), "Key(..)", "a key never prints");
        assert_eq!(want.literal(), format!("\"x'{}'\"", hex.to_lowercase()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
