//! The stdio framing: lines read from standard input are checked before rmcp sees them.
//! rmcp drops a line that is not JSON, and one past its length limit, without a word, and
//! the client waits forever; here such a line is answered with a JSON-RPC error instead
//! (-32700 for what is not JSON, -32600 for a message past [`MAX_STDIO_MESSAGE_BYTES`],
//! with the message's id when it can be found in its first bytes); a request whose params
//! do not fit its method is answered -32602 with its id, naming the member at fault
//! ([`crate::protocol::invalid_params`]), and one of a method of an extension the server
//! does not declare -32601 with the method in `data`
//! ([`crate::protocol::undeclared_method`]).

use std::time::Duration;

use rmcp::ErrorData as McpError;
use serde_json::{Value, json};
use strata_app::deadline::{FRAME_UNIT, FrameClock, past_deadline_error};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;

/// The largest message read from standard input, in bytes (without its newline).
pub const MAX_STDIO_MESSAGE_BYTES: usize = 16 << 20;

/// How much of an oversized message is kept to find its id.
const ID_PREFIX_BYTES: usize = 4096;

/// The size of the in-process pipes between the framing and rmcp.
const PIPE_BYTES: usize = 1 << 20;

/// The ends rmcp reads and writes, and the tasks that carry lines between them and the
/// process's standard streams. The writer task ends once rmcp's output and the input
/// task are both done, after writing everything.
pub(super) struct Framed {
    pub(super) to_rmcp: DuplexStream,
    pub(super) from_rmcp: DuplexStream,
    pub(super) writer: tokio::task::JoinHandle<()>,
}

/// Frames `input` and `output` for rmcp with a message limit of `max` bytes and, with
/// `deadline`, a frame deadline for each message ([`read_messages`]).
pub(super) fn frame<R, W>(input: R, output: W, max: usize, deadline: Option<Duration>) -> Framed
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_rmcp, mut rmcp_in) = tokio::io::duplex(PIPE_BYTES);
    let (from_rmcp, rmcp_out) = tokio::io::duplex(PIPE_BYTES);
    let (lines, mut out) = mpsc::channel::<Vec<u8>>(64);
    // rmcp's answers, line by line.
    {
        let lines = lines.clone();
        tokio::spawn(async move {
            let mut r = tokio::io::BufReader::new(rmcp_out);
            loop {
                let mut line = Vec::new();
                match r.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if lines.send(line).await.is_err() {
                            break;
                        }
                    }
                }
            }
        });
    }
    // The client's messages: checked, then handed to rmcp or answered here.
    tokio::spawn(async move {
        let mut input = input;
        let _ = read_messages(&mut input, &mut rmcp_in, &lines, max, deadline).await;
        // The end of input: rmcp sees it and ends the session.
        let _ = rmcp_in.shutdown().await;
    });
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(line) = out.recv().await {
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    Framed {
        to_rmcp,
        from_rmcp,
        writer,
    }
}

/// Reads lines of at most `max` bytes from `input`: JSON goes on to `rmcp`, anything else
/// is answered on `answers`. With `deadline`, each message must arrive whole within it from
/// its first byte (and the deadline again for each further [`FRAME_UNIT`] bytes of it, as
/// on the ingest socket): a client that trickles a message is answered a JSON-RPC error
/// and its input ends, which ends its session. Between messages a client may wait as long
/// as it likes.
async fn read_messages<R: AsyncBufRead + Unpin>(
    input: &mut R,
    rmcp: &mut DuplexStream,
    answers: &mpsc::Sender<Vec<u8>>,
    max: usize,
    deadline: Option<Duration>,
) -> std::io::Result<()> {
    let mut line = Vec::new();
    // The first bytes of a line past `max`, and its length so far.
    let mut oversized: Option<(Vec<u8>, usize)> = None;
    // The deadline of the message being read, from its first byte.
    let mut clock: Option<FrameClock> = None;
    loop {
        let buf = match &clock {
            None => input.fill_buf().await?,
            Some(c) => {
                let until = tokio::time::Instant::from_std(c.deadline());
                match tokio::time::timeout_at(until, input.fill_buf()).await {
                    Ok(buf) => buf?,
                    Err(_) => {
                        let prefix = match &oversized {
                            Some((prefix, _)) => prefix.as_slice(),
                            None => line.as_slice(),
                        };
                        let _ = answers.send(too_slow(prefix, c.frame())).await;
                        eprintln!(
                            "strata: a client was too slow sending a message (the frame \
                             deadline is {} s): its connection is closed",
                            c.frame().as_secs_f64()
                        );
                        return Err(past_deadline_error());
                    }
                }
            }
        };
        if buf.is_empty() {
            return Ok(());
        }
        if clock.is_none()
            && let Some(d) = deadline
        {
            clock = Some(FrameClock::start(d, FRAME_UNIT));
        }
        let (chunk, ended) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], true),
            None => (buf, false),
        };
        match &mut oversized {
            Some((_, n)) => *n += chunk.len(),
            None if line.len() + chunk.len() > max => {
                let n = line.len() + chunk.len();
                line.extend_from_slice(&chunk[..chunk.len().min(ID_PREFIX_BYTES)]);
                line.truncate(ID_PREFIX_BYTES);
                oversized = Some((std::mem::take(&mut line), n));
            }
            None => line.extend_from_slice(chunk),
        }
        let used = chunk.len() + usize::from(ended);
        input.consume(used);
        if !ended {
            if let Some(c) = &mut clock {
                c.received(used as u64);
            }
            continue;
        }
        // The message is whole: the next one's deadline starts with its first byte.
        clock = None;
        if let Some((prefix, n)) = oversized.take() {
            let answer = error_line(
                id_in_prefix(&prefix),
                &McpError::invalid_request(
                    format!(
                        "Invalid Request: the message has more than {max} bytes ({n} read), \
                         the stdio limit; it was not read"
                    ),
                    None,
                ),
            );
            eprintln!(
                "strata: a message of {n} bytes on standard input passes the {max}-byte limit"
            );
            if answers.send(answer).await.is_err() {
                return Ok(());
            }
            continue;
        }
        let text = line.strip_suffix(b"\r").unwrap_or(&line);
        if text.iter().all(u8::is_ascii_whitespace) {
            line.clear();
            continue;
        }
        match serde_json::from_slice::<Value>(text) {
            Ok(v) => match refusal(&v, text) {
                Some(error) => {
                    let id = v.get("id").cloned().unwrap_or(Value::Null);
                    if answers.send(error_line(id, &error)).await.is_err() {
                        return Ok(());
                    }
                }
                None => {
                    rmcp.write_all(text).await?;
                    rmcp.write_all(b"\n").await?;
                }
            },
            Err(e) => {
                let answer = error_line(
                    Value::Null,
                    &McpError::parse_error(
                        format!("Parse error: the line is not JSON ({e})"),
                        None,
                    ),
                );
                if answers.send(answer).await.is_err() {
                    return Ok(());
                }
            }
        }
        line.clear();
    }
}

/// Why a request is answered here rather than by rmcp: params that do not fit the method
/// (-32602), a method of an extension the server does not declare (-32601 with the method
/// in `data`, which rmcp would answer with the bare name), or a request rmcp cannot read
/// at all (-32600), which it would answer with no id. `None` for what rmcp reads (answers
/// and notifications included).
fn refusal(message: &Value, text: &[u8]) -> Option<McpError> {
    if let Some(why) = crate::protocol::invalid_params(message) {
        return Some(McpError::invalid_params(why, None));
    }
    if let Some(e) = crate::protocol::undeclared_method(message) {
        return Some(e);
    }
    if message.get("id").is_none() || message.get("method").is_none() {
        return None;
    }
    serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(text)
        .err()
        .map(|e| {
            McpError::invalid_request(
                format!("Invalid Request: not a JSON-RPC request this server reads ({e})"),
                None,
            )
        })
}

/// The answer to a message that did not arrive within the frame deadline `deadline`: an
/// Invalid Request with the message's id when its first bytes (`prefix`) show it.
fn too_slow(prefix: &[u8], deadline: Duration) -> Vec<u8> {
    error_line(
        id_in_prefix(&prefix[..prefix.len().min(ID_PREFIX_BYTES)]),
        &McpError::invalid_request(
            format!(
                "Invalid Request: the message did not arrive whole within {} s (the server's \
                 frame deadline for each {} MiB of a message); the connection is closed",
                deadline.as_secs_f64(),
                FRAME_UNIT >> 20
            ),
            None,
        ),
    )
}

/// One JSON-RPC error answer, as a line.
fn error_line(id: Value, error: &McpError) -> Vec<u8> {
    let mut line = json!({"jsonrpc": "2.0", "id": id, "error": error})
        .to_string()
        .into_bytes();
    line.push(b'\n');
    line
}

/// The id of a message from its first bytes: the value of an `"id"` member that comes
/// right after the opening brace or a comma, before any `"params"`, when it is a number or
/// a string without escapes. Null when there is none.
fn id_in_prefix(prefix: &[u8]) -> Value {
    let text = String::from_utf8_lossy(prefix);
    let params = text.find("\"params\"").unwrap_or(text.len());
    let mut from = 0;
    while let Some(at) = text[from..].find("\"id\"").map(|i| i + from) {
        from = at + 4;
        if at > params {
            break;
        }
        let before = text[..at].trim_end();
        if !(before.ends_with('{') || before.ends_with(',')) {
            continue;
        }
        let Some(rest) = text[from..].trim_start().strip_prefix(':') else {
            continue;
        };
        let rest = rest.trim_start();
        let end = if let Some(s) = rest.strip_prefix('"') {
            match s.find(['"', '\\']) {
                Some(i) if s[i..].starts_with('"') => i + 2,
                _ => continue,
            }
        } else {
            rest.find(|c: char| !(c.is_ascii_digit() || c == '-'))
                .unwrap_or(rest.len())
        };
        if let Ok(v @ (Value::Number(_) | Value::String(_))) = serde_json::from_str(&rest[..end]) {
            return v;
        }
    }
    Value::Null
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn ids_are_found_in_a_prefix() {
        assert_eq!(
            id_in_prefix(br#"{"jsonrpc":"2.0","id":42,"method":"x","#),
            json!(42)
        );
        assert_eq!(id_in_prefix(br#"{"id": "a-1", "method""#), json!("a-1"));
        assert_eq!(
            id_in_prefix(br#"{"method":"x","params":{"id":5},"id":6"#),
            Value::Null
        );
        assert_eq!(
            id_in_prefix(br#"{"jsonrpc":"2.0","method":"x""#),
            Value::Null
        );
        assert_eq!(id_in_prefix(br#"{"xid":3,"#), Value::Null);
    }
}
