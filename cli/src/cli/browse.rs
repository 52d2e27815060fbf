//! `list`, `stats`, `sessions`, `doctor`: looking into a memory file.

use clap::Args;
use robotmem::{Db, Error, Result, Status};

#[derive(Args, Debug)]
pub struct ListArgs {}

#[derive(Args, Debug)]
pub struct SessionsArgs {}

pub fn list(_db: &Db, _a: &ListArgs, _json: bool) -> Result<()> {
    Err(Error::new(Status::Internal, "list is not implemented yet"))
}

pub fn stats(_db: &Db, _json: bool) -> Result<()> {
    Err(Error::new(Status::Internal, "stats is not implemented yet"))
}

pub fn sessions(_db: &Db, _a: &SessionsArgs, _json: bool) -> Result<()> {
    Err(Error::new(Status::Internal, "sessions is not implemented yet"))
}

pub fn doctor(_db: &Db, _json: bool) -> Result<()> {
    Err(Error::new(Status::Internal, "doctor is not implemented yet"))
}
