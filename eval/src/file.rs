//! Opening a file as what it must be: a regular file of a sane size ([`open_regular`]).
//! Every crate that reads a file of a database directory (the store's files and stamps, the
//! application's pack and find index, the modules read here) opens it through this one
//! function, so a FIFO, a device or a directory in its place is refused at once, with what
//! it is, instead of hanging the open or the read.
//!
//! The file is opened with `O_NONBLOCK` (so opening a FIFO with no writer returns at once)
//! and then `fstat`ed: what is open is what is checked, with no window for a swap between
//! the check and the open.

use std::fs::File;
use std::path::Path;

/// `O_NONBLOCK` of the platform (std exposes the flag word, not the constant).
#[cfg(any(target_os = "linux", target_os = "android"))]
const O_NONBLOCK: i32 = 0o4000;
#[cfg(all(unix, not(any(target_os = "linux", target_os = "android"))))]
const O_NONBLOCK: i32 = 0x0004;

/// Why [`open_regular`] did not give a file; each caller words it for its own error.
#[derive(Debug, thiserror::Error)]
pub enum RegularFileError {
    /// Opening or `fstat`ing it failed (a missing file is `NotFound`).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// It is not a regular file: `a directory`, `a FIFO`, `a socket`, `a device`.
    #[error("{what}, not a regular file")]
    NotRegular {
        /// What it is.
        what: &'static str,
    },
    /// It is longer than the caller allows.
    #[error("{len} bytes long, more than {max}")]
    TooLong {
        /// Its length.
        len: u64,
        /// The most allowed.
        max: u64,
    },
}

/// Opens `path` for reading when it is a regular file of at most `max_len` bytes; answers
/// the file and its length.
pub fn open_regular(path: &Path, max_len: u64) -> Result<(File, u64), RegularFileError> {
    let mut how = std::fs::OpenOptions::new();
    how.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        how.custom_flags(O_NONBLOCK);
    }
    let file = how.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(RegularFileError::NotRegular { what: kind(&meta) });
    }
    if meta.len() > max_len {
        return Err(RegularFileError::TooLong {
            len: meta.len(),
            max: max_len,
        });
    }
    Ok((file, meta.len()))
}

/// What a file that is not a regular file is, for a message.
fn kind(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
    }
    "not a regular file"
}
