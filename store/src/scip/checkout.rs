//! A repository's checkout: the directory its source files are read from, the one reading
//! of a source file under it that an ingest (hashing each document's file) and an answer
//! (showing a cited site's lines) share, and the source files' content hash.
//!
//! Reading never leaves the checkout: the path is refused when it is absolute or has a
//! `..` segment, the file is resolved (symlinks followed) and refused unless it still lies
//! under the checkout's own resolved directory, it is opened without following a last
//! symlink and without blocking (a FIFO does not hang the read), and only a regular file
//! of at most [`SOURCE_MAX_BYTES`] is read, its size from the open file itself.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest source file read: 16 MiB. A larger file is neither hashed nor shown.
pub const SOURCE_MAX_BYTES: u64 = 16 << 20;

/// A checkout directory, resolved (absolute, symlinks followed) when it was opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkout {
    dir: PathBuf,
}

/// Why a source file was not read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SourceRefusal {
    /// The path would leave the checkout: absolute, with a `..` segment, or resolving (a
    /// symlink) to a file outside it.
    #[error("outside the checkout")]
    Outside,
    /// No file is there.
    #[error("no such file in the checkout")]
    Missing,
    /// Something other than a regular file is there: a directory, a FIFO, a device.
    #[error("not a regular file")]
    NotRegular,
    /// The file is larger than [`SOURCE_MAX_BYTES`].
    #[error("larger than {SOURCE_MAX_BYTES} bytes")]
    TooLarge,
    /// The operating system refused (permissions, an I/O error): its message.
    #[error("cannot be read: {0}")]
    Unreadable(String),
}

impl Checkout {
    /// The checkout at `dir`, resolved; an error when it is not a directory.
    pub fn open(dir: &Path) -> std::io::Result<Checkout> {
        let dir = dir.canonicalize()?;
        if !std::fs::metadata(&dir)?.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{} is not a directory", dir.display()),
            ));
        }
        Ok(Checkout { dir })
    }

    /// The checkout a SCIP `metadata.project_root` names, when it is a local `file://`
    /// URL of a directory that exists here.
    pub fn from_project_root(root: &str) -> Option<Checkout> {
        let rest = root.strip_prefix("file://")?;
        let rest = rest.strip_prefix("localhost").unwrap_or(rest);
        if !rest.starts_with('/') {
            return None;
        }
        Checkout::open(Path::new(&percent_decoded(rest)?)).ok()
    }

    /// The resolved directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The bytes of the file at `relative` (`/`-separated) under the checkout, or why they
    /// are not read (see the module's rules).
    pub fn read(&self, relative: &str) -> Result<Vec<u8>, SourceRefusal> {
        if relative.is_empty()
            || relative.starts_with('/')
            || relative.contains('\0')
            || relative.split('/').any(|s| s == "..")
        {
            return Err(SourceRefusal::Outside);
        }
        let resolved = match self.dir.join(relative).canonicalize() {
            Ok(p) => p,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SourceRefusal::Missing);
            }
            Err(e) => return Err(SourceRefusal::Unreadable(e.to_string())),
        };
        if !resolved.starts_with(&self.dir) {
            return Err(SourceRefusal::Outside);
        }
        let file = open_quietly(&resolved).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => SourceRefusal::Missing,
            _ => SourceRefusal::Unreadable(e.to_string()),
        })?;
        let meta = file
            .metadata()
            .map_err(|e| SourceRefusal::Unreadable(e.to_string()))?;
        if !meta.is_file() {
            return Err(SourceRefusal::NotRegular);
        }
        if meta.len() > SOURCE_MAX_BYTES {
            return Err(SourceRefusal::TooLarge);
        }
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        file.take(SOURCE_MAX_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| SourceRefusal::Unreadable(e.to_string()))?;
        if bytes.len() as u64 > SOURCE_MAX_BYTES {
            return Err(SourceRefusal::TooLarge);
        }
        Ok(bytes)
    }

    /// The content hash ([`source_hash`]) of the file at `relative`, if it is read.
    pub fn hash(&self, relative: &str) -> Option<String> {
        self.read(relative).ok().map(|b| source_hash(&b))
    }
}

/// Opens `path` for reading without following a last symlink and without blocking on a
/// FIFO or a device.
fn open_quietly(path: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW);
    }
    o.open(path)
}

/// `%XX` escapes of a URL path decoded; `None` when the result is not UTF-8 or an escape
/// is broken.
fn percent_decoded(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The content hash of a source file, as `source_file(path, hash)` records it: the 128-bit
/// hash of `fresh.rs` (after wyhash: two lanes of folded 64-bit multiplies over 16-byte
/// blocks, fixed by this code, not by a crate) of the file's bytes from seed (0, 0), as 32
/// lowercase hex digits. It tells a changed file from an unchanged one; it is no defence
/// against a file made to collide.
pub fn source_hash(bytes: &[u8]) -> String {
    let [a, b] = super::fresh::stable_hash([0, 0], bytes);
    format!("{a:016x}{b:016x}")
}

/// The `document_hash` of a document whose source file has content hash `source`: the
/// document's own hash (`content_hash`) and the file's, hashed together, so that a
/// replacing read rewrites a document whose file changed even when its index bytes did
/// not (an edit that moves no occurrence). Without a source hash, the document's own.
pub(crate) fn document_hash(document: String, source: Option<&str>) -> String {
    match source {
        None => document,
        Some(s) => {
            let mut both = document.into_bytes();
            both.push(b' ');
            both.extend_from_slice(s.as_bytes());
            source_hash(&both)
        }
    }
}

/// How many of an index's documents had their source file hashed, and where.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceCounts {
    /// The checkouts the files were read from (one per index read with one).
    pub checkouts: Vec<String>,
    /// Documents whose source file was read and hashed.
    pub hashed: u64,
    /// Documents whose source file was missing, not a regular file, too large or
    /// unreadable: not hashed, so their lines are never shown.
    pub unreadable: u64,
}

impl SourceCounts {
    /// Counts one document: hashed or not.
    pub(crate) fn count(&mut self, hashed: bool) {
        if hashed {
            self.hashed += 1;
        } else {
            self.unreadable += 1;
        }
    }

    /// Adds another read's counts.
    pub fn add(&mut self, other: &SourceCounts) {
        self.checkouts.extend(other.checkouts.iter().cloned());
        self.hashed += other.hashed;
        self.unreadable += other.unreadable;
    }
}

/// `, 12 source files hashed (checkout /home/me/src/myrepo)`, then `, 2 not readable`
/// when any; nothing without a checkout.
impl std::fmt::Display for SourceCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.checkouts.is_empty() {
            return Ok(());
        }
        let s = if self.hashed == 1 { "" } else { "s" };
        write!(
            f,
            ", {} source file{s} hashed (checkout {})",
            self.hashed,
            self.checkouts.join(", ")
        )?;
        if self.unreadable > 0 {
            write!(f, ", {} not readable", self.unreadable)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn checkout() -> (tempfile::TempDir, Checkout) {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("repo/src")).unwrap();
        std::fs::write(t.path().join("repo/src/a.py"), "def f():\n    pass\n").unwrap();
        std::fs::write(t.path().join("secret.txt"), "outside\n").unwrap();
        let c = Checkout::open(&t.path().join("repo")).unwrap();
        (t, c)
    }

    #[test]
    fn the_source_hash_is_fixed() {
        // Stored on disk (source_file): a change here makes every source file stale.
        assert_eq!(source_hash(b""), "f13875502eda5c0ef5a3ca8495990b66");
        assert_ne!(source_hash(b"hello"), source_hash(b"hellp"));
    }

    #[test]
    fn issue_32_a_file_under_the_checkout_is_read() {
        let (_t, c) = checkout();
        assert_eq!(c.read("src/a.py").unwrap(), b"def f():\n    pass\n");
        assert_eq!(c.read("src/./a.py").unwrap(), b"def f():\n    pass\n");
        assert_eq!(
            c.hash("src/a.py"),
            Some(source_hash(b"def f():\n    pass\n"))
        );
        assert_eq!(c.read("src/b.py"), Err(SourceRefusal::Missing));
        assert_eq!(c.read("src"), Err(SourceRefusal::NotRegular));
    }

    #[test]
    fn issue_32_dot_dot_and_absolute_paths_are_refused() {
        let (_t, c) = checkout();
        assert_eq!(c.read("../secret.txt"), Err(SourceRefusal::Outside));
        assert_eq!(c.read("src/../../secret.txt"), Err(SourceRefusal::Outside));
        assert_eq!(c.read("src/../a.py"), Err(SourceRefusal::Outside));
        let abs = c.dir().join("src/a.py").display().to_string();
        assert_eq!(c.read(&abs), Err(SourceRefusal::Outside));
        assert_eq!(c.read(""), Err(SourceRefusal::Outside));
        assert_eq!(c.read("a\0b"), Err(SourceRefusal::Outside));
    }

    #[cfg(unix)]
    #[test]
    fn issue_32_a_symlink_out_of_the_checkout_is_refused() {
        let (t, c) = checkout();
        std::os::unix::fs::symlink(t.path().join("secret.txt"), c.dir().join("src/out.py"))
            .unwrap();
        std::os::unix::fs::symlink(t.path(), c.dir().join("up")).unwrap();
        assert_eq!(c.read("src/out.py"), Err(SourceRefusal::Outside));
        assert_eq!(c.read("up/secret.txt"), Err(SourceRefusal::Outside));
        // A symlink that stays inside is followed.
        std::os::unix::fs::symlink(c.dir().join("src/a.py"), c.dir().join("b.py")).unwrap();
        assert_eq!(c.read("b.py").unwrap(), b"def f():\n    pass\n");
    }

    #[cfg(unix)]
    #[test]
    fn issue_32_a_fifo_is_refused_without_blocking() {
        let (_t, c) = checkout();
        let fifo = c.dir().join("src/pipe.py");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success(), "mkfifo {}", fifo.display());
        assert_eq!(c.read("src/pipe.py"), Err(SourceRefusal::NotRegular));
        assert_eq!(c.hash("src/pipe.py"), None);
    }

    #[test]
    fn a_project_root_names_a_local_checkout() {
        let (t, c) = checkout();
        let url = format!("file://{}", t.path().join("repo").display());
        assert_eq!(Checkout::from_project_root(&url), Some(c.clone()));
        assert_eq!(Checkout::from_project_root(&format!("{url}/")), Some(c));
        assert_eq!(
            Checkout::from_project_root("https://example.com/repo"),
            None
        );
        assert_eq!(
            Checkout::from_project_root("file:///no/such/dir/here"),
            None
        );
        assert_eq!(percent_decoded("/a%20b").as_deref(), Some("/a b"));
        assert_eq!(percent_decoded("/a%2"), None);
    }

    #[test]
    fn a_document_hash_folds_in_its_source_hash() {
        let d = "0123".to_owned();
        assert_eq!(document_hash(d.clone(), None), d);
        let a = document_hash(d.clone(), Some("aa"));
        assert_ne!(a, d);
        assert_ne!(a, document_hash(d, Some("ab")));
    }
}
