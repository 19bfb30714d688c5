//! The [`Stamp`]: what a redb file looked like when this database last closed it cleanly, or
//! last verified it, kept beside it as `FILE.stamp`. redb reads its B-tree pages without
//! checking their checksums (only an open with `check_integrity` does), so a byte changed in
//! a key or a branch page outside redb could be read as a different, wrong answer. Opening
//! with [`Verify::Changed`] (the default) checks every page of a file whose stamp is missing
//! or differs from the file: any write to it by anything but this database's own clean close
//! changes its length, modification or change time, or inode, and the change time cannot be
//! set back by a user. A stamp is a cache of "this file was verified or written by us": a
//! missing, unreadable or stale one only costs one verification.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// When to check the checksum of every page of a file as it is opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verify {
    /// Every open verifies every file it opens (what `strata check` does).
    Always,
    /// A file is verified when it is not as this database's last clean close or last
    /// verification left it (its stamp says how it was): a file copied, restored, edited or
    /// damaged outside Strata, or left by a crash. Otherwise it opens at once.
    #[default]
    Changed,
    /// No file is verified: damage outside redb's own checks is read as it is.
    Never,
}

/// A file's identity and times, as `stat` gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

/// A number as [`Stamp::render`] writes it, and only so (no sign, no leading zero): a stamp
/// is trusted only as this database wrote it.
fn canonical<T: std::str::FromStr + ToString>(s: &str) -> Option<T> {
    let n: T = s.parse().ok()?;
    (n.to_string() == s).then_some(n)
}

impl Stamp {
    /// The stamp of the file at `path` as it is now.
    pub(crate) fn of(path: &Path) -> std::io::Result<Stamp> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path)?;
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Ok(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime_ns: ns(m.mtime(), m.mtime_nsec()),
            ctime_ns: ns(m.ctime(), m.ctime_nsec()),
        })
    }

    /// Where the stamp of the file at `path` is kept.
    pub(crate) fn path_for(path: &Path) -> PathBuf {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(".stamp");
        path.with_file_name(name)
    }

    pub(crate) fn render(&self) -> String {
        format!(
            "strata-stamp 1 dev {} ino {} len {} mtime {} ctime {}\n",
            self.dev, self.ino, self.len, self.mtime_ns, self.ctime_ns
        )
    }

    fn parse(text: &str) -> Option<Stamp> {
        let f: Vec<&str> = text.split_ascii_whitespace().collect();
        match f.as_slice() {
            [
                "strata-stamp",
                "1",
                "dev",
                dev,
                "ino",
                ino,
                "len",
                len,
                "mtime",
                m,
                "ctime",
                c,
            ] => Some(Stamp {
                dev: canonical(dev)?,
                ino: canonical(ino)?,
                len: canonical(len)?,
                mtime_ns: canonical(m)?,
                ctime_ns: canonical(c)?,
            }),
            _ => None,
        }
    }

    /// Whether the file at `path` is as its stamp says (false when either is missing or
    /// unreadable).
    pub(crate) fn matches(path: &Path) -> bool {
        // A stamp is one short line; anything else (a FIFO, a huge file) is no stamp.
        let Some(text) = crate::regular::read_small(&Stamp::path_for(path), 4096) else {
            return false;
        };
        match (Stamp::parse(&text), Stamp::of(path)) {
            (Some(kept), Ok(now)) => kept == now,
            _ => false,
        }
    }

    /// Records the file at `path` as it is now (through a temporary file and a rename, so a
    /// stamp is whole or absent). A failure leaves the file unstamped: it is verified when
    /// next opened, which is safe.
    pub(crate) fn record(path: &Path) {
        let Ok(stamp) = Stamp::of(path) else {
            return;
        };
        let target = Stamp::path_for(path);
        let mut tmp = target.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        // Whatever is at the temporary name (a FIFO would block the write) is replaced by a
        // new file.
        let _ = std::fs::remove_file(&tmp);
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .and_then(|mut f| std::io::Write::write_all(&mut f, stamp.render().as_bytes()));
        if written.is_err() || std::fs::rename(&tmp, &target).is_err() {
            let _ = std::fs::remove_file(&tmp);
            let _ = std::fs::remove_file(&target);
        }
    }

    /// Removes the stamp of the file at `path`, so that it is verified when next opened.
    pub(crate) fn remove(path: &Path) {
        let _ = std::fs::remove_file(Stamp::path_for(path));
    }
}

/// Stamps a file when it is closed, if the file was trusted (verified, or unchanged since
/// the last stamp) and nothing since made it doubtful. It is the last field of
/// [`crate::db::File`], so it is dropped after the redb database, whose close writes the
/// file one last time.
#[derive(Debug)]
pub(crate) struct Stamper {
    path: PathBuf,
    trusted: AtomicBool,
}

impl Stamper {
    /// A stamper for the file at `path`; `trusted` says whether the open verified it or found
    /// it as stamped.
    pub(crate) fn new(path: &Path, trusted: bool) -> Stamper {
        if !trusted {
            Stamp::remove(path);
        }
        Stamper {
            path: path.to_owned(),
            trusted: AtomicBool::new(trusted),
        }
    }

    /// The file is no longer known to be as its writes left it (a commit failed, or it is
    /// being removed): no stamp is written on close, and any present is removed.
    pub(crate) fn distrust(&self) {
        self.trusted.store(false, Ordering::SeqCst);
        Stamp::remove(&self.path);
    }

    /// Whether the file is stamped when closed.
    pub(crate) fn trusted(&self) -> bool {
        self.trusted.load(Ordering::SeqCst)
    }
}

impl Drop for Stamper {
    fn drop(&mut self) {
        if self.trusted() {
            Stamp::record(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_reads_back_and_any_write_breaks_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.redb");
        std::fs::write(&file, b"abc").unwrap();
        assert!(!Stamp::matches(&file), "no stamp yet");
        Stamp::record(&file);
        assert!(Stamp::matches(&file));
        let text = std::fs::read_to_string(Stamp::path_for(&file)).unwrap();
        assert_eq!(Stamp::parse(&text), Stamp::of(&file).ok());
        // A write in place of the same length, the time set back as it was: the change
        // time still moves.
        let before = std::fs::metadata(&file).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&file, b"abd").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(before)
            .unwrap();
        assert!(!Stamp::matches(&file), "an edit in place is seen");
        std::fs::write(Stamp::path_for(&file), "strata-stamp 1 dev x").unwrap();
        assert!(!Stamp::matches(&file), "a damaged stamp trusts nothing");
    }
}
