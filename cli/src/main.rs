//! `robotmem`: the command-line way into a robot's memory file.
//!
//! One module per surface: [`cli`] (subcommands over the library's API) and
//! [`web`] (the web console and its REST API, `robotmem web`), [`mcp`] (a
//! Model Context Protocol server over stdio for agents, `robotmem mcp`) and
//! [`sync`] (the fleet: `robotmem sync` with a PostgreSQL hub, `robotmem hub`). The
//! library does the work; this crate parses arguments, opens the handle and
//! prints — human text by default, the library's JSON renderings with `--json`.
//!
//! Exit codes: 0 success; 2 a usage error (clap); 10 + the library status for a
//! failed call (11 invalid argument, 12 not found, 13 duplicate, 14 busy, 15 I/O,
//! 16 corrupt, 17 embedding unavailable, 18 full, 19 invalid state, 20 schema
//! too new, 22 read-only, 23 internal, 25 over budget); 70 an internal error of the command
//! itself. Messages name the field at fault; no panic message or backtrace is
//! ever printed.

mod cli;
mod mcp;
mod request;
mod sync;
mod web;

use std::process::ExitCode;

use clap::Parser;

/// Exit code of an unexpected failure of the command itself.
const EXIT_INTERNAL: u8 = 70;

fn main() -> ExitCode {
    // A bug must not print a source path or a backtrace: one line, exit 70.
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        eprintln!("robotmem: internal error (a bug; please report it): {what}");
    }));
    let args = cli::Args::parse();
    let json = args.json;
    match std::panic::catch_unwind(move || cli::run(args)) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            cli::print_error(&e, json);
            ExitCode::from(10 + e.status as u8)
        }
        Err(_) => ExitCode::from(EXIT_INTERNAL),
    }
}
