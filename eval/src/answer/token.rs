//! Page tokens: where the next page starts, and the snapshot the page was read at, so a
//! later page can tell that the data changed in between (each page runs the program again,
//! and a commit between pages would otherwise repeat or skip rows silently).

use std::fmt;
use std::str::FromStr;

/// A page token: `OFFSET@SNAPSHOT`, the offset of the next row and the sequence number of
/// the snapshot the page was read at. A page read at the first snapshot (sequence 1, a
/// database of one batch) or from a base with no snapshots has a plain `OFFSET`, the token
/// of the seed; a plain offset is therefore read as naming snapshot 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageToken {
    /// The offset of the next row.
    pub offset: u64,
    /// The snapshot named (`None`: the first snapshot, or a base with none).
    pub snapshot: Option<u64>,
}

impl PageToken {
    /// The token of the row at `offset` of a page read at snapshot `seq`.
    pub fn new(offset: u64, seq: Option<u64>) -> PageToken {
        PageToken {
            offset,
            snapshot: PageToken::named(seq),
        }
    }

    /// How a token names snapshot `seq`: sequences past the first by number, the first (and
    /// a base with no snapshots) by nothing.
    pub fn named(seq: Option<u64>) -> Option<u64> {
        seq.filter(|&s| s > 1)
    }

    /// Whether a page read at snapshot `seq` reads the snapshot this token names.
    pub fn same_snapshot(&self, seq: Option<u64>) -> bool {
        self.snapshot == PageToken::named(seq)
    }
}

impl fmt::Display for PageToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.snapshot {
            Some(s) => write!(f, "{}@{s}", self.offset),
            None => write!(f, "{}", self.offset),
        }
    }
}

/// A page token that is not `OFFSET` or `OFFSET@SNAPSHOT`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("page_token \"{0}\" is not OFFSET or OFFSET@SNAPSHOT")]
pub struct PageTokenError(pub String);

impl FromStr for PageToken {
    type Err = PageTokenError;

    fn from_str(s: &str) -> Result<PageToken, PageTokenError> {
        let bad = || PageTokenError(s.to_owned());
        let number = |t: &str| {
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            t.parse::<u64>().map_err(|_| bad())
        };
        match s.split_once('@') {
            Some((offset, snapshot)) => Ok(PageToken {
                offset: number(offset)?,
                snapshot: PageToken::named(Some(number(snapshot)?)),
            }),
            None => Ok(PageToken {
                offset: number(s)?,
                snapshot: None,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_name_their_snapshot() {
        for (token, offset, snapshot) in [("2", 2, None), ("2@7", 2, Some(7)), ("0@2", 0, Some(2))]
        {
            let t: PageToken = token.parse().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(t, PageToken { offset, snapshot });
            assert_eq!(t.to_string(), token);
        }
        assert_eq!(PageToken::new(2, Some(1)).to_string(), "2");
        assert_eq!(PageToken::new(2, None).to_string(), "2");
        assert_eq!("2@1".parse::<PageToken>(), Ok(PageToken::new(2, None)));
        for bad in ["", "two", "2@", "@3", "-1", "+2", "2@3@4", "2 @3"] {
            assert!(bad.parse::<PageToken>().is_err(), "{bad}");
        }
        assert!(PageToken::new(2, Some(3)).same_snapshot(Some(3)));
        assert!(!PageToken::new(2, Some(3)).same_snapshot(Some(4)));
        assert!(!PageToken::new(2, None).same_snapshot(Some(4)));
    }
}
