//! Where the socket is and whose it is: a socket path too long for `sockaddr_un` is reached
//! through the database directory's descriptor, and the database a socket serves is named
//! by its directory's device and inode.

use std::os::unix::fs::MetadataExt;

use super::*;

/// The longest socket path bound or connected to as it is (`sun_path` holds 108 bytes on
/// Linux, 104 on the BSDs, with the terminating NUL).
const MAX_DIRECT_PATH: usize = 100;

/// Runs `f` with a path that reaches `DB/strata.sock` and fits a socket address. A path
/// longer than [`MAX_DIRECT_PATH`] bytes is reached as `/proc/self/fd/N/strata.sock`, `N`
/// a descriptor of the database directory held open while `f` runs (Linux); elsewhere a
/// long path is an error that says so.
pub(super) fn with_socket_path<T>(
    db: &Path,
    f: impl FnOnce(&Path) -> std::io::Result<T>,
) -> std::io::Result<T> {
    let path = socket_path(db);
    if path.as_os_str().len() <= MAX_DIRECT_PATH {
        return f(&path);
    }
    short_path(db, &path, f)
}

#[cfg(target_os = "linux")]
fn short_path<T>(
    db: &Path,
    _path: &Path,
    f: impl FnOnce(&Path) -> std::io::Result<T>,
) -> std::io::Result<T> {
    use std::os::fd::AsRawFd;
    let dir = std::fs::File::open(db)?;
    let short = PathBuf::from(format!("/proc/self/fd/{}/{SOCKET_FILE}", dir.as_raw_fd()));
    let r = f(&short);
    drop(dir);
    r
}

#[cfg(not(target_os = "linux"))]
fn short_path<T>(
    _db: &Path,
    path: &Path,
    _f: impl FnOnce(&Path) -> std::io::Result<T>,
) -> std::io::Result<T> {
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "{}: a socket path longer than {MAX_DIRECT_PATH} bytes is not supported on this \
             system; move the database to a shorter path",
            path.display()
        ),
    ))
}

/// Connects to the socket of the database in `db`, however long its path.
pub(super) fn connect(db: &Path) -> std::io::Result<UnixStream> {
    with_socket_path(db, |p| UnixStream::connect(p))
}

/// Whether the socket file at `path` is owned by the user this process runs as (Linux:
/// the owner of `/proc/self`); elsewhere, whether it is owned by the owner of the
/// database directory holding it.
pub(super) fn owned_by_me(path: &Path) -> bool {
    let Ok(socket) = std::fs::metadata(path) else {
        return false;
    };
    let me = if cfg!(target_os = "linux") {
        std::fs::metadata("/proc/self")
    } else {
        std::fs::metadata(path.parent().unwrap_or(Path::new(".")))
    };
    me.is_ok_and(|m| m.uid() == socket.uid())
}

/// Binds the socket of the database in `db`, however long its path.
pub(super) fn bind(db: &Path) -> std::io::Result<UnixListener> {
    with_socket_path(db, |p| UnixListener::bind(p))
}

/// Which database a directory holds, as the header carries it: the directory's device and
/// inode (the same however the directory is reached: symbolic links, `..`, bind mounts),
/// and its path for messages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseId {
    /// The device of the database directory.
    pub dev: u64,
    /// The inode of the database directory.
    pub ino: u64,
    /// The directory as the sender names it (for messages only).
    pub path: String,
}

impl DatabaseId {
    /// The identity of the database directory `db`.
    pub fn of(db: &Path) -> std::io::Result<DatabaseId> {
        let m = std::fs::metadata(db)?;
        Ok(DatabaseId {
            dev: m.dev(),
            ino: m.ino(),
            path: db.display().to_string(),
        })
    }

    /// Whether `self` and `other` name the same directory.
    pub fn same_as(&self, other: &DatabaseId) -> bool {
        (self.dev, self.ino) == (other.dev, other.ino)
    }
}
