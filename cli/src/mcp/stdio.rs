//! stdin/stdout for the SDK, with one addition: a line that is not JSON at all
//! gets a JSON-RPC "Parse error" (-32700, id null) instead of silence (rmcp
//! drops such lines without an answer; well-formed JSON that is no message it
//! answers itself with "Invalid Request"). Lines are relayed whole, so the
//! SDK's responses and these errors never interleave within a line.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Longest line accepted (the SDK's own limit).
const MAX_LINE: usize = 16 * 1024 * 1024;
const PIPE: usize = 64 * 1024;

fn parse_error(detail: &str) -> Vec<u8> {
    let v = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("Parse error: {detail}")}});
    let mut line = v.to_string().into_bytes();
    line.push(b'\n');
    line
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
            match (&mut input).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if line.len() > MAX_LINE && line.last() != Some(&b'\n') {
                // Skip the rest of the oversized line, then answer once.
                let mut rest = Vec::new();
                loop {
                    rest.clear();
                    match (&mut input).take(PIPE as u64).read_until(b'\n', &mut rest).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) if rest.last() == Some(&b'\n') => break,
                        Ok(_) => {}
                    }
                }
                let _ = err_tx.send(parse_error(&format!("line longer than {MAX_LINE} bytes")));
                continue;
            }
            let body = line.strip_suffix(b"\n").unwrap_or(&line);
            let body = body.strip_suffix(b"\r").unwrap_or(body);
            if body.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
                Ok(_) => {
                    if to_sdk.write_all(body).await.is_err() || to_sdk.write_all(b"\n").await.is_err() {
                        break;
                    }
                }
                Err(e) => {
                    let _ = err_tx.send(parse_error(&e.to_string()));
                }
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
