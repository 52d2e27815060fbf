//! `export` / `import`: JSON Lines, one memory per line (docs/EXPORT-FORMAT.md).
//!
//! Export writes to standard output or, with `--out`, to a file that appears
//! whole or not at all (a `.partial` file renamed at the end). Import reads a
//! file or standard input; it reports every bad line with its number and goes
//! on, then exits non-zero (11) if any line was not imported. A progress bar is
//! drawn on stderr only when stderr is a terminal.

use std::fs::File;
use std::io::{BufReader, BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use robotmem::transfer::{ExportOptions, ImportSummary, LineKind, LineOutcome};
use robotmem::{Db, Error, Result, Status};
use serde_json::{json, Value};

/// Bad lines and duplicates listed in `--json` output (the counts are complete).
const LISTED_MAX: usize = 1000;
/// Duplicates named in the text summary.
const TEXT_LISTED: usize = 10;

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Write to FILE (created 0600; written whole or not at all) instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    out: Option<PathBuf>,
    /// Only this collection's memories (and the sessions it and they belong to).
    #[arg(long)]
    collection: Option<String>,
    /// Include each active memory's vector and the model stamp (for an import without re-embedding).
    #[arg(long)]
    vectors: bool,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// A file written by `export`; "-" or nothing reads standard input.
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
}

fn io_error(what: &str, e: std::io::Error) -> Error {
    let status = if e.raw_os_error() == Some(28) { Status::Full } else { Status::Io };
    Error::new(status, format!("{what}: {e}"))
}

/// A progress bar on stderr when it is a terminal, else a bar that draws nothing.
fn progress(len: Option<u64>, template: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = match len {
        Some(n) => ProgressBar::new(n),
        None => ProgressBar::new_spinner(),
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

/// Where an export goes: standard output, or a `.partial` file renamed on success.
struct Sink {
    out: BufWriter<Box<dyn Write>>,
    file: Option<(PathBuf, PathBuf)>,
}

impl Sink {
    fn open(path: Option<&Path>) -> Result<Sink> {
        let Some(path) = path else {
            return Ok(Sink { out: BufWriter::new(Box::new(std::io::stdout().lock())), file: None });
        };
        let mut partial = path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
        let f = o.open(&partial).map_err(|e| io_error(&format!("cannot create {}", partial.display()), e))?;
        Ok(Sink { out: BufWriter::with_capacity(1 << 16, Box::new(f)), file: Some((partial, path.to_path_buf())) })
    }

    fn name(&self) -> String {
        self.file.as_ref().map_or("standard output".into(), |(_, p)| p.display().to_string())
    }

    fn line(&mut self, json: &str) -> Result<()> {
        self.out
            .write_all(json.as_bytes())
            .and_then(|()| self.out.write_all(b"\n"))
            .map_err(|e| io_error(&format!("cannot write to {}", self.name()), e))
    }

    /// Flushes and, for a file, syncs it and gives it its name; on failure the
    /// partial file is removed.
    fn finish(self, ok: bool) -> Result<()> {
        let name = self.name();
        let Sink { out, file } = self;
        let flushed = match out.into_inner() {
            Ok(mut w) => w.flush().map_err(|e| io_error(&format!("cannot write to {name}"), e)),
            Err(e) => Err(io_error(&format!("cannot write to {name}"), e.into_error())),
        };
        let Some((partial, path)) = file else { return flushed };
        let done = flushed.and_then(|()| {
            if !ok {
                return Ok(());
            }
            File::open(&partial)
                .and_then(|f| f.sync_all())
                .map_err(|e| io_error(&format!("cannot sync {}", partial.display()), e))?;
            std::fs::rename(&partial, &path)
                .map_err(|e| io_error(&format!("cannot rename {} to {}", partial.display(), path.display()), e))
        });
        if !ok || done.is_err() {
            let _ = std::fs::remove_file(&partial);
        }
        done
    }
}

pub fn export(db: &Db, a: &ExportArgs, json: bool) -> Result<()> {
    let mut sink = Sink::open(a.out.as_deref())?;
    let bar = progress(Some(0), "exporting {bar:40} {pos}/{len} memories {eta}");
    let opts = ExportOptions { collection: a.collection.as_deref(), vectors: a.vectors };
    let result = db.export_each(&opts, |l| {
        match l.kind {
            LineKind::Header => bar.set_length(l.memories_total),
            LineKind::Memory => bar.inc(1),
            LineKind::Session => {}
        }
        sink.line(l.json)
    });
    bar.finish_and_clear();
    let name = sink.name();
    let to_file = a.out.is_some();
    sink.finish(result.is_ok())?;
    let s = result?;
    let v =
        json!({"memories": s.memories, "sessions": s.sessions, "vectors": s.vectors, "model": s.model, "out": a.out});
    let mut text = format!(
        "exported {} and {} to {name}\n",
        count(s.memories, "memory", "memories"),
        count(s.sessions, "session", "sessions")
    );
    match (a.vectors, &s.model) {
        (true, Some(m)) => text.push_str(&format!("  {} of model {m}\n", count(s.vectors, "vector", "vectors"))),
        (true, None) => text.push_str("  no vectors: this database has no model stamp yet\n"),
        _ => {}
    }
    // The data may be on stdout: the summary then goes to stderr.
    match (to_file, json) {
        (true, true) => println!("{v}"),
        (true, false) => print!("{text}"),
        (false, true) => eprintln!("{v}"),
        (false, false) => eprint!("{text}"),
    }
    Ok(())
}

/// Counts the bytes read for the progress bar.
struct Counted<R> {
    inner: R,
    bar: ProgressBar,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
}

pub fn import(db: &Db, a: &ImportArgs, json: bool) -> Result<()> {
    let (input, len, name): (Box<dyn Read>, Option<u64>, String) =
        match a.file.as_deref().filter(|p| *p != Path::new("-")) {
            None => (Box::new(std::io::stdin().lock()), None, "standard input".into()),
            Some(p) => {
                let f = File::open(p).map_err(|e| io_error(&format!("cannot open {}", p.display()), e))?;
                let len = f.metadata().ok().map(|m| m.len());
                (Box::new(f), len, p.display().to_string())
            }
        };
    let template = match len {
        Some(_) => "importing {bar:40} {bytes}/{total_bytes} {eta}",
        None => "importing {spinner} {bytes}",
    };
    let bar = progress(len, template);
    let reader = BufReader::with_capacity(1 << 16, Counted { inner: input, bar: bar.clone() });
    let (mut errors, mut duplicates) = (Vec::new(), Vec::new());
    let result = db.import_lines(reader, |line, o| match o {
        LineOutcome::Error(e) if !json => bar.suspend(|| eprintln!("robotmem: {}", e.message)),
        LineOutcome::Error(e) if errors.len() < LISTED_MAX => errors.push(json!({"line": line, "message": e.message})),
        LineOutcome::Duplicate { existing_id } if duplicates.len() < LISTED_MAX => {
            duplicates.push(json!({"line": line, "existing_id": existing_id}))
        }
        _ => {}
    });
    bar.finish_and_clear();
    let s = result?;
    if json {
        println!("{}", summary_json(&s, errors, duplicates));
    } else {
        print!("{}", summary_text(&s, &name, &duplicates));
    }
    if s.errors > 0 {
        return Err(Error::invalid(format!(
            "{} of {} lines were not imported (each is reported above with its number); the other lines were",
            s.errors, s.lines
        )));
    }
    Ok(())
}

fn summary_json(s: &ImportSummary, errors: Vec<Value>, duplicates: Vec<Value>) -> Value {
    json!({
        "lines": s.lines, "memories": s.memories, "sessions": s.sessions, "sessions_existing": s.sessions_existing,
        "duplicates": s.duplicates, "errors": s.errors, "vectors": s.vectors, "vectors_dropped": s.vectors_dropped,
        "waiting_for_vector": s.waiting_for_vector, "unresolved_superseded": s.unresolved_superseded,
        "file_model": s.file_model, "db_model": s.db_model,
        "error_lines": errors, "duplicate_lines": duplicates,
    })
}

/// "1 memory", "2 memories".
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn summary_text(s: &ImportSummary, name: &str, duplicates: &[Value]) -> String {
    let mut t = format!(
        "imported {} and {} from {name}\n",
        count(s.memories, "memory", "memories"),
        count(s.sessions, "session", "sessions")
    );
    if s.duplicates > 0 {
        let named: Vec<String> = duplicates
            .iter()
            .take(TEXT_LISTED)
            .map(|d| format!("line {} → #{}", d["line"], d["existing_id"]))
            .collect();
        let more = if s.duplicates as usize > named.len() { ", ..." } else { "" };
        t += &format!(
            "  {} not stored again (already held): {}{more}\n",
            count(s.duplicates, "duplicate", "duplicates"),
            named.join(", ")
        );
    }
    if s.sessions_existing > 0 {
        t += &format!(
            "  {} already present (kept as they are)\n",
            count(s.sessions_existing, "session was", "sessions were")
        );
    }
    if s.vectors > 0 {
        t += &format!(
            "  {} stored (model {})\n",
            count(s.vectors, "vector", "vectors"),
            s.db_model.as_deref().unwrap_or("?")
        );
    }
    if s.vectors_dropped > 0 {
        t += &format!(
            "  {} not kept: the file's model is {}, this database's is {}\n",
            count(s.vectors_dropped, "vector", "vectors"),
            s.file_model.as_deref().unwrap_or("not named"),
            s.db_model.as_deref().unwrap_or("none")
        );
    }
    if s.waiting_for_vector > 0 {
        t += &format!(
            "  {} no vector yet: `robotmem reembed` with a model embeds them\n",
            count(s.waiting_for_vector, "memory has", "memories have")
        );
    }
    if s.unresolved_superseded > 0 {
        t += &format!(
            "  {} at nothing: the replacement was not imported\n",
            count(s.unresolved_superseded, "superseded memory points", "superseded memories point")
        );
    }
    if s.errors > 0 {
        t += &format!("  {} not imported (reported above)\n", count(s.errors, "bad line was", "bad lines were"));
    }
    t
}
