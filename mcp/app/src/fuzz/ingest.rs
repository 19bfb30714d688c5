//! The ingest socket's server side as a fuzz target: a connection's bytes read by the
//! daemon's own functions, up to the commit.

use std::io::{BufReader, Read};
use std::time::Duration;

use strata_store::BatchOptions;

use crate::ingest_socket::{self, DatabaseId, MAX_FRAME_BYTES, Request, RequestError};

/// The database the ingest target's daemon serves; a request must name it (`dev` 1, `ino`
/// 2) to be taken.
pub fn database() -> DatabaseId {
    DatabaseId {
        dev: 1,
        ino: 2,
        path: "/fuzz/db".to_owned(),
    }
}

/// What a connection's bytes asked the daemon for, read as it reads them.
#[derive(Debug)]
pub enum Received {
    /// A read of the command line's (answered over the application; not here).
    Read,
    /// A retraction of these units (committed by the store; not here).
    Retract(Vec<String>),
    /// A batch, every file received: its bytes, and the batch's options.
    Batch {
        /// Each file's bytes, in order.
        files: Vec<Vec<u8>>,
        /// The options the batch commits with.
        options: BatchOptions,
    },
}

/// A reader handing out at most `step` bytes a read, as a socket does.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.step).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Reads `data` as a connection's bytes the way the daemon does (its header line, then each
/// file's frames, through the same functions), stopping before anything is committed: the
/// request received, or the error the client is answered. The bytes arrive a few at a time
/// (how many by `data`'s length), so frames and lines are split across reads.
pub fn ingest_outcome(data: &[u8]) -> Result<Received, RequestError> {
    let step = 1 + data.len() % 13 * 700;
    let mut reader = BufReader::with_capacity(1 << 16, Trickle { data, step });
    let timeout = crate::deadline::DEFAULT_FRAME_TIMEOUT;
    let line = ingest_socket::read_line(&mut reader, ingest_socket::MAX_HEADER_BYTES, timeout)?;
    let batch = match ingest_socket::parse_request(&line, &database())? {
        Request::Read(_) => return Ok(Received::Read),
        Request::Retract(r) => return Ok(Received::Retract(r.retract)),
        Request::Batch(batch) => batch,
    };
    let mut files = Vec::with_capacity(batch.specs.len().min(64));
    for spec in &batch.specs {
        let mut bytes = Vec::new();
        let n = ingest_socket::receive_frames(
            &mut reader,
            &spec.label,
            Duration::from_secs(30),
            timeout,
            &mut bytes,
        )?;
        assert_eq!(n, bytes.len() as u64);
        files.push(bytes);
    }
    Ok(Received::Batch {
        files,
        options: batch.options,
    })
}

/// One file's bytes as frames: each part a frame (its `u64` little-endian length, then its
/// bytes), then the frame of length 0 that ends the file.
pub fn frames(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        out.extend_from_slice(&(p.len() as u64).to_le_bytes());
        out.extend_from_slice(p);
    }
    out.extend_from_slice(&0u64.to_le_bytes());
    out
}

/// The files a batch's frames hold, decoded by the protocol's rules directly (the model
/// [`ingest_request`] checks the daemon's reading against): `None` where the daemon must
/// refuse them.
fn model_frames(mut rest: &[u8], files: usize) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    for _ in 0..files {
        let mut file = Vec::new();
        loop {
            let (len, after) = rest.split_first_chunk::<8>()?;
            let len = u64::from_le_bytes(*len);
            if len > MAX_FRAME_BYTES {
                return None;
            }
            rest = after;
            if len == 0 {
                break;
            }
            let len = usize::try_from(len).ok()?;
            file.extend_from_slice(rest.get(..len)?);
            rest = &rest[len..];
        }
        out.push(file);
    }
    Some(out)
}

/// The ingest socket's server side on `data` ([`ingest_outcome`]), checked: a refusal is a
/// message of its own, not longer than a few times what the client sent; a batch received
/// holds exactly the files its frames encode (decoded by the protocol's rules directly), its
/// buffer capped; a batch refused for its frames is one whose frames the protocol does not
/// read either.
pub fn ingest_request(data: &[u8]) {
    let line = data.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
    match ingest_outcome(data) {
        Err(e) => {
            let message = e.to_string();
            assert!(!message.is_empty());
            assert!(
                message.len() <= 4 * data.len() + 1024,
                "a {}-byte answer to {} bytes",
                message.len(),
                data.len()
            );
            if let RequestError::Frames { .. } = e {
                let files = count_files(&data[..line]);
                assert!(
                    model_frames(&data[line..], files).is_none(),
                    "frames refused that the protocol reads: {message}"
                );
            }
        }
        Ok(Received::Read | Received::Retract(_)) => {}
        Ok(Received::Batch { files, options }) => {
            let model = model_frames(&data[line..], files.len());
            assert_eq!(model.as_ref(), Some(&files), "the frames read otherwise");
            assert!((1..=ingest_socket::MAX_BUFFER_FACTS).contains(&options.buffer_facts));
        }
    }
}

/// How many files a header line names (0 when it is not one).
fn count_files(line: &[u8]) -> usize {
    #[derive(serde::Deserialize)]
    struct Files {
        files: Vec<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Files>(line).map_or(0, |f| f.files.len())
}
