//! The deadline of a whole frame, for every socket a server reads from a client (the ingest
//! socket's batches, the MCP socket's messages): besides any idle timeout (no byte for a
//! while), a client must deliver at a rate. A [`FrameClock`] gives it the frame deadline for
//! its first `unit` bytes, and the deadline again for every further `unit` bytes delivered,
//! so a whole frame of the largest size always has the deadline to arrive in, while a client
//! trickling a byte at a time (a slow-loris holding a connection, a slot, a session) runs out
//! of it and loses its connection, with a message.
//!
//! [`Deadlined`] applies a clock to a blocking Unix stream (the ingest socket's threads); the
//! MCP socket's framing (async) reads under the same clock with a timer.

use std::time::{Duration, Instant};

/// How long a client has by default for a frame's first [`FRAME_UNIT`] bytes, and for each
/// further [`FRAME_UNIT`] (at least 140 KB a second), before it loses its connection.
pub const DEFAULT_FRAME_TIMEOUT: Duration = Duration::from_secs(120);

/// The bytes each frame deadline is earned for: the largest frame of the ingest socket and
/// the largest message of the MCP socket (16 MiB).
pub const FRAME_UNIT: u64 = 16 << 20;

/// The deadline of a frame being received: `frame` for the first `unit` bytes, counted from
/// [`FrameClock::start`], and `frame` more for each whole `unit` received.
#[derive(Clone, Copy, Debug)]
pub struct FrameClock {
    started: Instant,
    frame: Duration,
    unit: u64,
    received: u64,
}

impl FrameClock {
    /// A clock started now, giving `frame` for each `unit` bytes (a `unit` of 0 counts as 1).
    pub fn start(frame: Duration, unit: u64) -> FrameClock {
        FrameClock {
            started: Instant::now(),
            frame,
            unit: unit.max(1),
            received: 0,
        }
    }

    /// Counts `n` more bytes received.
    pub fn received(&mut self, n: u64) {
        self.received = self.received.saturating_add(n);
    }

    /// The frame deadline this clock gives for each unit.
    pub fn frame(&self) -> Duration {
        self.frame
    }

    /// When the bytes received so far must be followed by the next ones: the deadline once
    /// for the start and once for each whole unit received.
    pub fn deadline(&self) -> Instant {
        let earned = 1 + self.received / self.unit;
        let window = self
            .frame
            .saturating_mul(u32::try_from(earned).unwrap_or(u32::MAX));
        self.started
            .checked_add(window)
            .unwrap_or_else(|| self.started + Duration::from_secs(u32::MAX.into()))
    }

    /// How long until the deadline (zero once it has passed).
    pub fn left(&self) -> Duration {
        self.deadline().saturating_duration_since(Instant::now())
    }

    /// Whether the deadline has passed.
    pub fn passed(&self) -> bool {
        self.deadline() <= Instant::now()
    }
}

/// The error a read under a [`FrameClock`] answers once its deadline has passed (inside an
/// `io::Error` of kind `TimedOut`: [`past_deadline_error`]).
#[derive(Debug, thiserror::Error)]
#[error("past the frame deadline")]
pub struct PastDeadline;

/// The `io::Error` of a read past its frame deadline.
pub fn past_deadline_error() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::TimedOut, PastDeadline)
}

/// Whether `e` is a read's [`PastDeadline`].
pub fn past_deadline(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|i| i.is::<PastDeadline>())
}

/// A blocking Unix stream read under an idle timeout and a [`FrameClock`] started when it
/// is made.
#[cfg(unix)]
pub struct Deadlined {
    stream: std::os::unix::net::UnixStream,
    idle: Duration,
    clock: FrameClock,
}

#[cfg(unix)]
impl Deadlined {
    /// `stream`, read with `idle` between bytes at most and `frame` for each `unit` bytes
    /// (the first counted from now).
    pub fn new(
        stream: std::os::unix::net::UnixStream,
        idle: Duration,
        frame: Duration,
        unit: u64,
    ) -> Deadlined {
        Deadlined {
            stream,
            idle,
            clock: FrameClock::start(frame, unit),
        }
    }
}

#[cfg(unix)]
impl std::io::Read for Deadlined {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.clock.left();
        if left.is_zero() {
            return Err(past_deadline_error());
        }
        // A read timeout of zero means none: at least a millisecond.
        let wait = left.min(self.idle).max(Duration::from_millis(1));
        self.stream.set_read_timeout(Some(wait))?;
        match self.stream.read(buf) {
            Ok(n) => {
                self.clock.received(n as u64);
                Ok(n)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) && self.clock.passed() =>
            {
                Err(past_deadline_error())
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn issue_30_deadline_is_earned_per_frame_received() {
        let mut c = FrameClock::start(Duration::from_secs(10), FRAME_UNIT);
        let start = c.started;
        assert_eq!(c.deadline(), start + Duration::from_secs(10));
        c.received(FRAME_UNIT - 1);
        assert_eq!(c.deadline(), start + Duration::from_secs(10));
        c.received(1);
        assert_eq!(c.deadline(), start + Duration::from_secs(20));
        c.received(4 * FRAME_UNIT + 7);
        assert_eq!(c.deadline(), start + Duration::from_secs(60));
        c.received(u64::MAX);
        assert!(c.deadline() > start + Duration::from_secs(60));
    }

    #[cfg(unix)]
    #[test]
    fn issue_30_a_read_past_the_deadline_says_so() {
        use std::io::{Read, Write};
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut d = Deadlined::new(a, Duration::from_secs(30), Duration::ZERO, FRAME_UNIT);
        b.write_all(b"x").unwrap();
        let e = d.read(&mut [0u8; 4]).unwrap_err();
        assert!(past_deadline(&e), "{e}");
        let other = std::io::Error::new(std::io::ErrorKind::TimedOut, "idle");
        assert!(!past_deadline(&other));
    }
}
