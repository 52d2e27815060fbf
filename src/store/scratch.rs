//! A private directory for a database robotmem makes for itself (a view as of
//! a past time, `db::history`): `robotmem-view-<pid>-<random>` under the
//! system's temporary directory (`$TMPDIR`), mode 0700, removed with everything
//! in it when dropped. A process that dies leaves it behind (as any temporary
//! file); nothing reads it again.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result, Status};

pub(crate) struct ScratchDir(PathBuf);

impl ScratchDir {
    pub(crate) fn new(prefix: &str) -> Result<ScratchDir> {
        let path = std::env::temp_dir().join(format!("{prefix}-{}-{}", std::process::id(), uuid::Uuid::new_v4()));
        let mut b = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(&path).map_err(|e| {
            Error::new(
                Status::Io,
                format!("cannot create a temporary directory in {}: {e}", std::env::temp_dir().display()),
            )
        })?;
        Ok(ScratchDir(path))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
