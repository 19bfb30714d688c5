//! Opening a file of the database directory that the application reads (the pack, the
//! modules, the find index) as what it must be: a regular file of a sane size. The file is
//! opened through [`strata_eval::open_regular`] (`O_NONBLOCK`, then `fstat`), so a FIFO with
//! no writer answers at once instead of hanging the call; this module words its refusals.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// The most a pack or a module may hold.
pub(crate) const MAX_TEXT: u64 = 16 << 20;

/// Opens `path` for reading when it is a regular file of at most `max_len` bytes; answers
/// the file and its length. A FIFO, a device or a directory is an error of kind
/// `InvalidInput` that says what it is; a missing file is the usual `NotFound`.
pub(crate) fn open(path: &Path, max_len: u64) -> std::io::Result<(File, u64)> {
    let invalid = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, what);
    strata_eval::open_regular(path, max_len).map_err(|e| match e {
        strata_eval::RegularFileError::Io(e) => e,
        strata_eval::RegularFileError::NotRegular { what } => {
            invalid(format!("{} is {what}, not a regular file", path.display()))
        }
        strata_eval::RegularFileError::TooLong { len, .. } => invalid(format!(
            "{} is {len} bytes long, more than the {max_len} such a file may hold",
            path.display()
        )),
    })
}

/// Reads a text file of the database directory (the pack, a module) through [`open`].
pub(crate) fn read_text(path: &Path) -> std::io::Result<String> {
    let (file, len) = open(path, MAX_TEXT)?;
    let mut text = String::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(MAX_TEXT).read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn issue_30_a_fifo_or_a_directory_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = read_text(&fifo).unwrap_err().to_string();
            assert!(e.ends_with("f is a FIFO, not a regular file"), "{e}");
        }
        let e = read_text(dir.path()).unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
        let f = dir.path().join("t");
        std::fs::write(&f, "text").unwrap();
        assert_eq!(read_text(&f).unwrap(), "text");
        assert!(open(&f, 3).is_err());
    }
}
