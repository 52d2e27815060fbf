//! stdin/stdout for the SDK, with every line judged first by [`gate`]: what
//! the SDK would drop without a word or misread gets its JSON-RPC error here,
//! so every line but a notification is answered, and stdout carries nothing
//! but protocol lines. A line is read up to [`gate::MAX_LINE`] bytes; the rest
//! of a longer one is skipped unread. Lines are relayed whole, so the SDK's
//! responses and these errors never interleave within a line.

use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::gate::{self, Verdict, MAX_LINE};

const PIPE: usize = 64 * 1024;

/// Skips the input up to and including the next newline (or EOF), holding
/// nothing: what is buffered is dropped as it comes.
async fn skip_line(input: &mut (impl AsyncBufRead + Unpin)) -> std::io::Result<()> {
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            return Ok(());
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                input.consume(i + 1);
                return Ok(());
            }
            None => {
                let n = buf.len();
                input.consume(n);
            }
        }
    }
}

/// The transport halves for the SDK, and the task writing stdout, which ends
/// (flushed) once the SDK has closed its side.
pub fn relay<R, W>(input: R, output: W) -> ((DuplexStream, DuplexStream), JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (sdk_in, mut to_sdk) = tokio::io::duplex(PIPE);
    let (from_sdk, sdk_out) = tokio::io::duplex(PIPE);
    let (err_tx, mut err_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let reader = tokio::spawn(async move {
        let mut input = BufReader::new(input);
        let mut line = Vec::new();
        loop {
            line.clear();
            match (&mut input).take(MAX_LINE as u64).read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if line.len() == MAX_LINE && line.last() != Some(&b'\n') {
                // Answered at once; the rest of the line is never held.
                let _ = err_tx.send(gate::oversized());
                line = Vec::new();
                if skip_line(&mut input).await.is_err() {
                    break;
                }
                continue;
            }
            let body = line.strip_suffix(b"\n").unwrap_or(&line);
            let body = body.strip_suffix(b"\r").unwrap_or(body);
            match gate::judge(body) {
                Verdict::Forward => {
                    if to_sdk.write_all(body).await.is_err() || to_sdk.write_all(b"\n").await.is_err() {
                        break;
                    }
                }
                Verdict::Answer(e) => {
                    let _ = err_tx.send(e);
                }
                Verdict::Ignore(note) => eprintln!("robotmem mcp: {note}"),
            }
            if line.capacity() > PIPE {
                line = Vec::new();
            }
        }
        // Dropping `to_sdk` is the SDK's EOF.
    });
    let writer = tokio::spawn(async move {
        let mut output = output;
        let mut from_sdk = BufReader::new(from_sdk);
        let mut line = Vec::new();
        let mut sdk_open = true;
        let mut errors_open = true;
        while sdk_open {
            tokio::select! {
                n = from_sdk.read_until(b'\n', &mut line), if sdk_open => {
                    match n {
                        Ok(0) | Err(_) => {
                            sdk_open = false;
                            // Parse errors already queued still get out.
                            while let Ok(e) = err_rx.try_recv() {
                                if output.write_all(&e).await.is_err() {
                                    return;
                                }
                            }
                            let _ = output.flush().await;
                        }
                        Ok(_) => {
                            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                                return;
                            }
                            line.clear();
                        }
                    }
                }
                e = err_rx.recv(), if errors_open => {
                    match e {
                        None => errors_open = false,
                        Some(e) => {
                            if output.write_all(&e).await.is_err() || output.flush().await.is_err() {
                                return;
                            }
                        }
                    }
                }
            }
        }
    });
    // The reader may stay blocked on stdin (after a signal): nobody waits for it.
    drop(reader);
    ((sdk_in, sdk_out), writer)
}
