//! Opening a file of the database directory as what it must be: a regular file of a sane
//! size. Every file the store reads from the directory (the base and tier files, their
//! stamps) is opened here first, so a FIFO, a device or a directory in its place is refused
//! with its name instead of hanging the open or the read.
//!
//! The file is opened with `O_NONBLOCK` (so opening a FIFO with no writer returns at once)
//! and then `fstat`ed: what is open is what is checked, with no window for a swap between
//! the check and the open.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::error::OpenError;

/// `O_NONBLOCK` of the platform (std exposes the flag word, not the constant).
#[cfg(any(target_os = "linux", target_os = "android"))]
const O_NONBLOCK: i32 = 0o4000;
#[cfg(all(unix, not(any(target_os = "linux", target_os = "android"))))]
const O_NONBLOCK: i32 = 0x0004;

/// Opens `path` for reading (and writing when `write`) when it is a regular file of at
/// most `max_len` bytes; a missing file is `Ok(None)`.
pub(crate) fn open(path: &Path, write: bool, max_len: u64) -> Result<Option<File>, OpenError> {
    let mut how = std::fs::OpenOptions::new();
    how.read(true).write(write);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        how.custom_flags(O_NONBLOCK);
    }
    let file = match how.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(OpenError::Io {
                path: path.to_owned(),
                source,
            });
        }
    };
    let meta = file.metadata().map_err(|source| OpenError::Io {
        path: path.to_owned(),
        source,
    })?;
    if !meta.is_file() {
        return Err(OpenError::NotARegularFile {
            path: path.to_owned(),
            what: kind(&meta).to_owned(),
        });
    }
    if meta.len() > max_len {
        return Err(OpenError::NotARegularFile {
            path: path.to_owned(),
            what: format!("{} bytes long (more than {max_len})", meta.len()),
        });
    }
    Ok(Some(file))
}

/// Checks that `path` is a regular file (or missing), without keeping it open: for files
/// another library opens by name right after (redb's).
pub(crate) fn check(path: &Path) -> Result<(), OpenError> {
    open(path, false, u64::MAX).map(drop)
}

/// Reads a small text file of the directory (a stamp): `None` when it is missing, not a
/// regular file, longer than `max_len` or not UTF-8.
pub(crate) fn read_small(path: &Path, max_len: u64) -> Option<String> {
    let file = open(path, false, max_len).ok()??;
    let mut text = String::new();
    file.take(max_len).read_to_string(&mut text).ok()?;
    Some(text)
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_or_a_directory_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = open(&fifo, false, 10).unwrap_err().to_string();
            assert!(e.contains("is a FIFO, not a regular file"), "{e}");
            assert_eq!(read_small(&fifo, 10), None);
        }
        let e = check(dir.path()).unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
        let small = dir.path().join("s");
        std::fs::write(&small, "0123456789x").unwrap();
        assert_eq!(read_small(&small, 11).as_deref(), Some("0123456789x"));
        assert_eq!(read_small(&small, 10), None);
        assert!(open(&dir.path().join("none"), false, 1).unwrap().is_none());
    }
}
