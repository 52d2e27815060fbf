//! `export` / `import`: JSON Lines, one memory per line (docs/EXPORT-FORMAT.md).

use clap::Args;
use robotmem::{Db, Error, Result, Status};

#[derive(Args, Debug)]
pub struct ExportArgs {}

#[derive(Args, Debug)]
pub struct ImportArgs {}

pub fn export(_db: &Db, _a: &ExportArgs, _json: bool) -> Result<()> {
    Err(Error::new(Status::Internal, "export is not implemented yet"))
}

pub fn import(_db: &Db, _a: &ImportArgs, _json: bool) -> Result<()> {
    Err(Error::new(Status::Internal, "import is not implemented yet"))
}
