//! Opening a file of the database directory as what it must be: a regular file of a sane
//! size. Every file the store reads from the directory (the base and tier files, their
//! stamps) is opened here first, so a FIFO, a device or a directory in its place is refused
//! with its name instead of hanging the open or the read.
//!
//! The file is opened by [`strata_eval::open_regular`] (`O_NONBLOCK`, then `fstat`: what
//! is open is what is checked); this module words its refusals as the store's errors.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use strata_eval::RegularFileError;

use crate::error::OpenError;

/// Opens `path` for reading when it is a regular file of at most `max_len` bytes; a
/// missing file is `Ok(None)`.
pub(crate) fn open(path: &Path, max_len: u64) -> Result<Option<File>, OpenError> {
    match strata_eval::open_regular(path, max_len) {
        Ok((file, _)) => Ok(Some(file)),
        Err(RegularFileError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(RegularFileError::Io(source)) => Err(OpenError::Io {
            path: path.to_owned(),
            source,
        }),
        Err(RegularFileError::NotRegular { what }) => Err(OpenError::NotARegularFile {
            path: path.to_owned(),
            what: what.to_owned(),
        }),
        Err(RegularFileError::TooLong { len, max }) => Err(OpenError::NotARegularFile {
            path: path.to_owned(),
            what: format!("{len} bytes long (more than {max})"),
        }),
    }
}

/// Checks that `path` is a regular file (or missing), without keeping it open: for files
/// another library opens by name right after (redb's).
pub(crate) fn check(path: &Path) -> Result<(), OpenError> {
    open(path, u64::MAX).map(drop)
}

/// Reads a small text file of the directory (a stamp): `None` when it is missing, not a
/// regular file, longer than `max_len` or not UTF-8.
pub(crate) fn read_small(path: &Path, max_len: u64) -> Option<String> {
    let file = open(path, max_len).ok()??;
    let mut text = String::new();
    file.take(max_len).read_to_string(&mut text).ok()?;
    Some(text)
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
            let e = open(&fifo, 10).unwrap_err().to_string();
            assert!(e.contains("is a FIFO, not a regular file"), "{e}");
            assert_eq!(read_small(&fifo, 10), None);
        }
        let e = check(dir.path()).unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
        let small = dir.path().join("s");
        std::fs::write(&small, "0123456789x").unwrap();
        assert_eq!(read_small(&small, 11).as_deref(), Some("0123456789x"));
        assert_eq!(read_small(&small, 10), None);
        assert!(open(&dir.path().join("none"), 1).unwrap().is_none());
    }
}
