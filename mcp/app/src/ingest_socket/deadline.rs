//! The deadline of a connection's bytes: besides the idle timeout (no byte for a while), a
//! client must deliver its batch at a rate: it has the frame deadline for its header line
//! and its first [`MAX_FRAME_BYTES`], and earns the deadline again for every further
//! [`MAX_FRAME_BYTES`] it delivers, so a whole frame of the largest size always has the
//! deadline to arrive in. A client trickling a byte at a time (a slow-loris holding one of
//! the [`MAX_CONNECTIONS`] slots) runs out of it and loses its slot, with a message.

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::time::Instant;

use super::*;

/// The error a [`Deadlined`] read answers once its deadline has passed (inside an
/// `io::Error` of kind `TimedOut`).
#[derive(Debug, thiserror::Error)]
#[error("past the frame deadline")]
pub(super) struct PastDeadline;

/// Whether `e` is a [`Deadlined`] read's [`PastDeadline`].
pub(super) fn past_deadline(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|i| i.is::<PastDeadline>())
}

/// A connection read under the idle timeout and the frame deadline.
pub(super) struct Deadlined {
    stream: UnixStream,
    idle: Duration,
    frame: Duration,
    started: Instant,
    received: u64,
}

impl Deadlined {
    /// `stream`, read with `idle` between bytes at most and `frame` for each
    /// [`MAX_FRAME_BYTES`] (the first counted from now).
    pub(super) fn new(stream: UnixStream, idle: Duration, frame: Duration) -> Deadlined {
        Deadlined {
            stream,
            idle,
            frame,
            started: Instant::now(),
            received: 0,
        }
    }

    /// When the bytes received so far must be followed by the next ones: the deadline once
    /// for the start and once for each whole [`MAX_FRAME_BYTES`] received.
    fn deadline(&self) -> Instant {
        let earned = 1 + self.received / MAX_FRAME_BYTES;
        let window = self
            .frame
            .saturating_mul(u32::try_from(earned).unwrap_or(u32::MAX));
        self.started
            .checked_add(window)
            .unwrap_or_else(|| self.started + Duration::from_secs(u32::MAX.into()))
    }
}

impl Read for Deadlined {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let past = || std::io::Error::new(std::io::ErrorKind::TimedOut, PastDeadline);
        let left = self.deadline().saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(past());
        }
        // A read timeout of zero means none: at least a millisecond.
        let wait = left.min(self.idle).max(Duration::from_millis(1));
        self.stream.set_read_timeout(Some(wait))?;
        match self.stream.read(buf) {
            Ok(n) => {
                self.received += n as u64;
                Ok(n)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) && self.deadline() <= Instant::now() =>
            {
                Err(past())
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
        let (a, _b) = UnixStream::pair().unwrap();
        let mut d = Deadlined::new(a, Duration::from_secs(30), Duration::from_secs(10));
        let start = d.started;
        assert_eq!(d.deadline(), start + Duration::from_secs(10));
        d.received = MAX_FRAME_BYTES - 1;
        assert_eq!(d.deadline(), start + Duration::from_secs(10));
        d.received = MAX_FRAME_BYTES;
        assert_eq!(d.deadline(), start + Duration::from_secs(20));
        d.received = 5 * MAX_FRAME_BYTES + 7;
        assert_eq!(d.deadline(), start + Duration::from_secs(60));
    }

    #[test]
    fn issue_30_a_read_past_the_deadline_says_so() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut d = Deadlined::new(a, Duration::from_secs(30), Duration::ZERO);
        b.write_all(b"x").unwrap();
        let e = d.read(&mut [0u8; 4]).unwrap_err();
        assert!(past_deadline(&e), "{e}");
        let other = std::io::Error::new(std::io::ErrorKind::TimedOut, "idle");
        assert!(!past_deadline(&other));
    }
}
