//! One whole child process, measured from outside: wall time from spawn to reaping, and the
//! peak resident set size and CPU time the kernel reports for it when it is reaped
//! (`wait4`'s `rusage`: `ru_maxrss`, `ru_utime + ru_stime`).

use std::io::Read;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::BenchResult;

/// What one measured run of a child process gave.
#[derive(Clone, Debug)]
pub struct Run {
    /// Wall seconds from spawning the process to reaping it.
    pub wall: f64,
    /// Its peak resident set size in KiB (`ru_maxrss`).
    pub rss_kib: u64,
    /// Its CPU seconds, user and system, all its threads.
    pub cpu: f64,
    /// What it wrote to standard output.
    pub stdout: String,
    /// What it wrote to standard error.
    pub stderr: String,
}

/// Reads a child's pipe to its end on a thread of its own, so a chatty child never blocks.
fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut p) = pipe {
            let mut bytes = Vec::new();
            let _ = p.read_to_end(&mut bytes);
            s = String::from_utf8_lossy(&bytes).into_owned();
        }
        s
    })
}

/// Whether `wait4` reaped the child: its raw status and `rusage`, `None` while it runs.
fn try_reap(pid: libc::pid_t, block: bool) -> BenchResult<Option<(i32, libc::rusage)>> {
    loop {
        let mut status: libc::c_int = 0;
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        let flags = if block { 0 } else { libc::WNOHANG };
        // SAFETY: `wait4` writes an int through the first pointer and a `rusage` through the
        // second; both point to values of those types that live across the call (the
        // `rusage` zeroed, so valid whatever the kernel leaves in it). `pid` is our own
        // child, not reaped yet.
        #[allow(unsafe_code)]
        let (r, usage) = unsafe {
            let r = libc::wait4(pid, &mut status, flags, usage.as_mut_ptr());
            (r, usage.assume_init())
        };
        if r == pid {
            return Ok(Some((status, usage)));
        }
        if r == 0 {
            return Ok(None);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(format!("wait4: {e}").into());
        }
    }
}

/// Runs `cmd` to its end (killing it after `timeout`) and measures it. A process that
/// exits other than with status 0 is an error carrying its standard error.
pub fn run(cmd: &mut Command, timeout: Duration) -> BenchResult<Run> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn()?;
    let pid = libc::pid_t::try_from(child.id())?;
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    // Poll rather than block, to kill a child past its time; finely at first, as the
    // shortest runs take tens of milliseconds.
    let (status, usage) = loop {
        if let Some(done) = try_reap(pid, false)? {
            break done;
        }
        let elapsed = started.elapsed();
        if elapsed > timeout {
            // Not reaped yet, so the pid is still our child's.
            let _ = child.kill();
            let _ = try_reap(pid, true);
            return Err(format!("timed out after {:.0} s", timeout.as_secs_f64()).into());
        }
        let nap = if elapsed < Duration::from_millis(200) {
            100
        } else {
            1000
        };
        std::thread::sleep(Duration::from_micros(nap));
    };
    let wall = started.elapsed().as_secs_f64();
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    if !ok {
        let how = if libc::WIFSIGNALED(status) {
            format!("killed by signal {}", libc::WTERMSIG(status))
        } else {
            format!("exit status {}", libc::WEXITSTATUS(status))
        };
        return Err(format!("{how}: {}", stderr.trim()).into());
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(Run {
        wall,
        rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
        cpu: secs(usage.ru_utime) + secs(usage.ru_stime),
        stdout,
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_a_child_and_reports_failures() -> BenchResult<()> {
        let r = run(
            Command::new("sh").args(["-c", "echo hello; echo note >&2"]),
            Duration::from_secs(30),
        )?;
        assert_eq!(r.stdout.trim(), "hello");
        assert_eq!(r.stderr.trim(), "note");
        assert!(r.wall > 0.0 && r.rss_kib > 0);
        let e = run(
            Command::new("sh").args(["-c", "echo bad >&2; exit 3"]),
            Duration::from_secs(30),
        );
        assert!(e.is_err_and(|e| e.to_string().contains("exit status 3: bad")));
        let t = run(Command::new("sleep").arg("5"), Duration::from_millis(100));
        assert!(t.is_err_and(|e| e.to_string().contains("timed out")));
        Ok(())
    }
}
