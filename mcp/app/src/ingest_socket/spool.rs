//! The daemon's spool: a batch's files received into an unlinked file in the database
//! directory before the database's writer is taken, so a slow producer holds up only
//! itself.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::AtomicU64;

use super::*;

/// Spool files created by this process so far (for unique names).
static SPOOLED: AtomicU64 = AtomicU64::new(0);

/// A batch's files, received: their bytes one after another in `file`, `lengths` each.
pub(super) struct Spool {
    file: File,
    lengths: Vec<u64>,
}

impl Spool {
    /// An empty spool in `dir`: a file created owner-only and unlinked at once, so nothing
    /// is left behind whatever happens to the process.
    pub(super) fn create(dir: &Path) -> Result<Spool, RequestError> {
        let n = SPOOLED.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".strata-spool-{}-{n}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(RequestError::Spool)?;
        std::fs::remove_file(&path).map_err(RequestError::Spool)?;
        Ok(Spool {
            file,
            lengths: Vec::new(),
        })
    }

    /// Receives the next file's frames from `reader` (`label` names it in messages); see
    /// [`receive_frames`].
    pub(super) fn receive(
        &mut self,
        reader: &mut impl BufRead,
        label: &str,
        idle: Duration,
        deadline: Duration,
    ) -> Result<(), RequestError> {
        let mut out = BufWriter::with_capacity(1 << 16, &self.file);
        let length = receive_frames(reader, label, idle, deadline, &mut out)?;
        out.flush().map_err(RequestError::Spool)?;
        self.lengths.push(length);
        Ok(())
    }

    /// The files received, in order, each a reader of its bytes.
    pub(super) fn files(&mut self) -> Result<Vec<impl BufRead + '_>, RequestError> {
        (&self.file)
            .seek(SeekFrom::Start(0))
            .map_err(RequestError::Spool)?;
        Ok(self
            .lengths
            .iter()
            .map(|&n| BufReader::with_capacity(1 << 16, (&self.file).take(n)))
            .collect())
    }
}

/// Copies the next file's frames from `reader` to `out` (`label` names it in messages),
/// answering its length. A read past the frame deadline (`deadline`) is
/// [`RequestError::TooSlow`]; one that times out otherwise (the socket's read timeout,
/// `idle`) is [`RequestError::Stalled`]; a frame longer than [`MAX_FRAME_BYTES`] or a
/// request that ends before the file's last frame is [`RequestError::Frames`]. Nothing is
/// allocated after what a frame claims: its bytes are copied as they come.
pub(crate) fn receive_frames(
    reader: &mut impl BufRead,
    label: &str,
    idle: Duration,
    deadline: Duration,
    out: &mut impl Write,
) -> Result<u64, RequestError> {
    let mut frames = Frames {
        inner: reader,
        left: 0,
        done: false,
    };
    let mut length = 0u64;
    loop {
        let chunk = match frames.fill_buf() {
            Ok([]) => break,
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if crate::deadline::past_deadline(&e) => {
                return Err(RequestError::TooSlow {
                    label: label.to_owned(),
                    deadline,
                });
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(RequestError::Stalled {
                    label: label.to_owned(),
                    timeout: idle,
                });
            }
            Err(source) => {
                return Err(RequestError::Frames {
                    label: label.to_owned(),
                    source,
                });
            }
        };
        out.write_all(chunk).map_err(RequestError::Spool)?;
        let n = chunk.len();
        length += n as u64;
        frames.consume(n);
    }
    Ok(length)
}
