//! Byte accounting: a [`ByteBudget`] is a limit and what has been charged against it. The
//! application fits an answer's text to one (`strata_app`'s `fit`): each row is charged
//! what its rendering costs, and the rows that do not fit are left out, said so. The type
//! knows nothing of answers, so an evaluation's memory budget charges relations' bytes the same way through
//! its concurrent sibling, [`SharedByteBudget`] (one limit, one `charge`, one `fits`), which
//! the engine's worker threads charge at once. [`ByteSize`] reads and writes the sizes a
//! user gives and reads (`512M`, `2G`, `1.5 GiB`).

use std::sync::atomic::{AtomicU64, Ordering};

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

/// A [`ByteBudget`] that several threads charge at once: the limit and an atomic count of
/// the bytes charged. The engine's memory budget is one: workers charge the bytes their
/// outputs grew by, a batch at a time, and after each round the evaluator sets the count to
/// what its relations and witnesses hold ([`SharedByteBudget::set`]).
#[derive(Debug)]
pub struct SharedByteBudget {
    limit: u64,
    used: AtomicU64,
}

impl SharedByteBudget {
    /// A budget of `limit` bytes, nothing charged.
    pub const fn new(limit: u64) -> SharedByteBudget {
        SharedByteBudget {
            limit,
            used: AtomicU64::new(0),
        }
    }

    /// The limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The bytes charged so far.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Charges `bytes` whether or not they fit (they are held already), saying whether the
    /// bytes charged are still within the limit.
    pub fn charge(&self, bytes: u64) -> bool {
        let used = self
            .used
            .fetch_add(bytes, Ordering::Relaxed)
            .saturating_add(bytes);
        used <= self.limit
    }

    /// Sets the bytes charged to `bytes` (what is held now, counted afresh), saying whether
    /// they are within the limit.
    pub fn set(&self, bytes: u64) -> bool {
        self.used.store(bytes, Ordering::Relaxed);
        bytes <= self.limit
    }
}

/// A size in bytes as a user writes it: plain bytes (`1048576`), or a number with a binary
/// unit, `K`, `M`, `G` or `T` (times 1024, 1024^2, ...; `B`, `iB` and lower case allowed, a
/// fraction too: `512M`, `2G`, `1.5GiB`, `64kb`). Shown the way [`ByteSize`]'s `Display`
/// writes it: `512.0 MiB`, `2.0 GiB`, `300 B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

/// Why a text is not a [`ByteSize`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "\"{0}\" is not a size: write bytes (1048576) or a number with a unit K, M, G or T \
     (512M, 2G, 1.5G; binary: 1M is 1048576 bytes)"
)]
pub struct ByteSizeError(pub String);

impl std::str::FromStr for ByteSize {
    type Err = ByteSizeError;

    fn from_str(text: &str) -> Result<ByteSize, ByteSizeError> {
        let bad = || ByteSizeError(text.to_owned());
        let t = text.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (number, unit) = t.split_at(split);
        let unit = unit.trim().to_ascii_lowercase();
        let unit = unit
            .strip_suffix("ib")
            .or_else(|| unit.strip_suffix('b'))
            .unwrap_or(&unit);
        let shift = match unit {
            "" => 0,
            "k" => 10,
            "m" => 20,
            "g" => 30,
            "t" => 40,
            _ => return Err(bad()),
        };
        if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
            return Err(bad());
        }
        if let Ok(whole) = number.parse::<u64>() {
            return whole.checked_mul(1 << shift).map(ByteSize).ok_or_else(bad);
        }
        let value = number.parse::<f64>().map_err(|_| bad())? * (1u64 << shift) as f64;
        if shift == 0 || !value.is_finite() || value >= u64::MAX as f64 {
            return Err(bad());
        }
        Ok(ByteSize(value.round() as u64))
    }
}

impl std::fmt::Display for ByteSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
        let mut unit = None;
        let mut value = self.0 as f64;
        for u in UNITS {
            if value < 1024.0 {
                break;
            }
            value /= 1024.0;
            unit = Some(u);
        }
        match unit {
            None => write!(f, "{} B", self.0),
            Some(u) => write!(f, "{value:.1} {u}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_and_write() {
        let read = |t: &str| t.parse::<ByteSize>().map(|b| b.0);
        assert_eq!(read("512M"), Ok(512 << 20));
        assert_eq!(read("2G"), Ok(2 << 30));
        assert_eq!(read("2gib"), Ok(2 << 30));
        assert_eq!(read(" 64 kB "), Ok(64 << 10));
        assert_eq!(read("1.5G"), Ok(3 << 29));
        assert_eq!(read("1048576"), Ok(1 << 20));
        for bad in [
            "",
            "M",
            "12X",
            "1.5",
            "-1G",
            "1..5G",
            ".5G",
            "99999999999T",
            "5 G G",
        ] {
            assert!(read(bad).is_err(), "{bad:?}");
        }
        assert!(
            read("lots")
                .unwrap_err()
                .to_string()
                .contains("\"lots\" is not a size")
        );
        assert_eq!(ByteSize(300).to_string(), "300 B");
        assert_eq!(ByteSize(512 << 20).to_string(), "512.0 MiB");
        assert_eq!(ByteSize(3 << 29).to_string(), "1.5 GiB");
    }

    #[test]
    fn a_shared_budget_counts_every_charge_and_is_reset() {
        let b = SharedByteBudget::new(10);
        assert!(b.charge(6));
        assert!(!b.charge(5));
        assert_eq!(b.used(), 11);
        assert!(b.set(4));
        assert!(!b.set(11));
        assert_eq!((b.limit(), b.used()), (10, 11));
    }

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
