//! Byte accounting: a [`ByteBudget`] is a limit and what has been charged against it. An
//! answer is fitted to one ([`crate::Answer::fit`]): each row is charged what its rendering
//! costs, and the rows that do not fit are left out, said so. The type knows nothing of
//! answers, so an evaluation's memory budget can charge relations' bytes to one the same
//! way and share the accounting (one limit, one `charge`, one `fits`).

/// The answer budget's default, and the most a server lets a call ask for: 80,000 bytes of
/// text, under 25,000 tokens at about 3.2 bytes a token (the cap on a tool result of the
/// common MCP clients, Claude Code's among them).
pub const ANSWER_BYTES: u64 = 80_000;

/// The least answer budget a call may ask for: room for the header, one row cut to fit and
/// the line that says what was left out.
pub const ANSWER_BYTES_MIN: u64 = 1_024;

/// A limit in bytes and the bytes charged against it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteBudget {
    limit: u64,
    used: u64,
}

impl ByteBudget {
    /// A budget of `limit` bytes, nothing charged.
    pub const fn new(limit: u64) -> ByteBudget {
        ByteBudget { limit, used: 0 }
    }

    /// The limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The bytes charged so far.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// The bytes left before the limit.
    pub fn remaining(&self) -> u64 {
        self.limit.saturating_sub(self.used)
    }

    /// Whether `bytes` more fit.
    pub fn fits(&self, bytes: u64) -> bool {
        bytes <= self.remaining()
    }

    /// Charges `bytes` if they fit, saying whether they did (nothing is charged if not).
    pub fn try_charge(&mut self, bytes: u64) -> bool {
        let fits = self.fits(bytes);
        if fits {
            self.used += bytes;
        }
        fits
    }

    /// Charges `bytes` whether or not they fit (what must be spent anyway: a header).
    pub fn charge(&mut self, bytes: u64) {
        self.used = self.used.saturating_add(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_only_what_fits() {
        let mut b = ByteBudget::new(10);
        assert!(b.try_charge(6));
        assert!(!b.try_charge(5));
        assert_eq!((b.used(), b.remaining()), (6, 4));
        b.charge(7);
        assert_eq!((b.used(), b.remaining()), (13, 0));
        assert!(!b.fits(1));
        assert!(b.fits(0));
    }
}
