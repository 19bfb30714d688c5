//! Splitting a dump into lines: each line is handed over in place in the input's buffer
//! when it lies within it, and gathered into a buffer of its own only when it spans two
//! reads (no copy a line, as reading each line into a buffer cost).

use std::io::BufRead;

/// What [`each_line`] hands over.
pub(super) enum Line<'a> {
    /// A line, its line break included when it has one.
    Text(&'a [u8]),
    /// A line found valid UTF-8 with the lines around it, its line break included.
    Valid(&'a str),
    /// Whole lines, each with its line break, found valid UTF-8 together and no longer than
    /// the limit: all the whole lines of one read, handed over at once so that the caller
    /// can gather their facts before handing them on.
    Lines(&'a str),
    /// A line longer than the limit before its line break (the walk ends with it).
    TooLong,
}

/// Calls `f` with each line of `input`, in order; a line of more than `max` bytes before
/// its line break is handed over as [`Line::TooLong`], and ends the walk. An error from
/// `f` ends it too; a failed read is turned into one by `read_error`, given how many
/// lines were handed over before it.
pub(super) fn each_line<E>(
    input: &mut impl BufRead,
    max: usize,
    mut f: impl FnMut(Line<'_>) -> Result<(), E>,
    read_error: impl Fn(std::io::Error, u64) -> E,
) -> Result<(), E> {
    // A line begun in an earlier read.
    let mut carry: Vec<u8> = Vec::new();
    let mut lines = 0u64;
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_error(e, lines)),
        };
        if buf.is_empty() {
            if !carry.is_empty() {
                f(Line::Text(&carry))?;
            }
            return Ok(());
        }
        let mut pos = 0;
        if !carry.is_empty() {
            let Some(i) = memchr::memchr(b'\n', buf) else {
                if carry.len() + buf.len() > max {
                    return f(Line::TooLong);
                }
                carry.extend_from_slice(buf);
                let n = buf.len();
                input.consume(n);
                continue;
            };
            if carry.len() + i > max {
                return f(Line::TooLong);
            }
            carry.extend_from_slice(&buf[..=i]);
            lines += 1;
            f(Line::Text(&carry))?;
            carry.clear();
            pos = i + 1;
        }
        let from = pos;
        // The whole lines of this read, checked as UTF-8 at once when they all are: a line's
        // own check costs more to start than its few bytes take (a tenth of reading 10M
        // pairs). A line break is a byte no other character's encoding holds, so each line
        // is a slice of them at character boundaries.
        let valid = memchr::memrchr(b'\n', &buf[from..])
            .and_then(|i| std::str::from_utf8(&buf[from..=from + i]).ok());
        // No line of the read can be over the limit when all of them together are not (a
        // read holds 64 KiB, the limit is 1 MiB): they go over at once.
        if let Some(block) = valid.filter(|b| b.len() - 1 <= max) {
            f(Line::Lines(block))?;
            lines += memchr::memchr_iter(b'\n', block.as_bytes()).count() as u64;
            pos = from + block.len();
        }
        let rest = pos;
        for i in memchr::memchr_iter(b'\n', &buf[rest..]) {
            let end = rest + i + 1;
            if end - pos - 1 > max {
                return f(Line::TooLong);
            }
            lines += 1;
            let line = valid
                .and_then(|v| v.get(pos - from..end - from))
                .map_or(Line::Text(&buf[pos..end]), Line::Valid);
            f(line)?;
            pos = end;
        }
        if buf.len() - pos > max {
            return f(Line::TooLong);
        }
        carry.extend_from_slice(&buf[pos..]);
        let n = buf.len();
        input.consume(n);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::{BufReader, Read};

    use super::*;

    /// The lines `each_line` hands over from `data` read `capacity` bytes at a time, and
    /// whether it ended with a line too long.
    fn walk(data: &[u8], capacity: usize, max: usize) -> (Vec<Vec<u8>>, bool) {
        let mut input = BufReader::with_capacity(capacity, data);
        let mut lines = Vec::new();
        let mut too_long = false;
        each_line(
            &mut input,
            max,
            |l| {
                match l {
                    Line::Text(t) => lines.push(t.to_vec()),
                    Line::Valid(t) => lines.push(t.as_bytes().to_vec()),
                    Line::Lines(t) => lines.extend(t.split_inclusive('\n').map(|l| l.into())),
                    Line::TooLong => too_long = true,
                }
                Ok::<(), String>(())
            },
            |e, _| e.to_string(),
        )
        .unwrap();
        (lines, too_long)
    }

    #[test]
    fn every_line_comes_whole_however_the_reads_cut_it() {
        let data = b"a\tb\n\nlong line here\r\nx\n1234567\nlast without break";
        let want: Vec<Vec<u8>> = data
            .split_inclusive(|&b| b == b'\n')
            .map(<[u8]>::to_vec)
            .collect();
        for capacity in 1..=data.len() + 1 {
            assert_eq!(
                walk(data, capacity, 100),
                (want.clone(), false),
                "{capacity}"
            );
        }
        assert_eq!(walk(b"", 4, 100), (Vec::new(), false));
    }

    #[test]
    fn lines_come_checked_as_utf8_unless_their_read_holds_a_bad_byte() {
        let mut data = "é\tb\n".as_bytes().to_vec();
        data.extend_from_slice(b"x\xff\ny\n");
        data.extend_from_slice("\u{feff}z\n".as_bytes());
        for capacity in 1..=data.len() + 1 {
            let mut input = BufReader::with_capacity(capacity, data.as_slice());
            let (mut got, mut checked) = (Vec::new(), 0);
            each_line(
                &mut input,
                100,
                |l| {
                    match l {
                        Line::Text(t) => got.push(t.to_vec()),
                        Line::Valid(t) => {
                            checked += 1;
                            got.push(t.as_bytes().to_vec());
                        }
                        Line::Lines(t) => {
                            for l in t.split_inclusive('\n') {
                                checked += 1;
                                got.push(l.as_bytes().to_vec());
                            }
                        }
                        Line::TooLong => unreachable!(),
                    }
                    Ok::<(), String>(())
                },
                |e, _| e.to_string(),
            )
            .unwrap();
            let want: Vec<Vec<u8>> = data
                .split_inclusive(|&b| b == b'\n')
                .map(<[u8]>::to_vec)
                .collect();
            assert_eq!(got, want, "{capacity}");
            // Read whole, every line shares the bad byte's read; read 8 bytes at a time, the
            // two lines after it come in a read of their own, checked.
            if capacity > data.len() {
                assert_eq!(checked, 0);
            } else if capacity == 8 {
                assert_eq!(checked, 2);
            }
        }
    }

    #[test]
    fn a_line_over_the_limit_ends_the_walk_wherever_it_is_cut() {
        // "1234567" is 7 bytes before its break: at the limit 7 it passes, at 6 it ends the
        // walk after the lines before it; so does an unbroken last line over the limit.
        let data = b"ab\n1234567\ncd\n";
        for capacity in 1..=data.len() + 1 {
            let (lines, long) = walk(data, capacity, 7);
            assert_eq!((lines.len(), long), (3, false), "{capacity}");
            let (lines, long) = walk(data, capacity, 6);
            assert_eq!((lines, long), (vec![b"ab\n".to_vec()], true), "{capacity}");
            let (lines, long) = walk(b"ab\n1234567", capacity, 6);
            assert_eq!((lines.len(), long), (1, true), "{capacity}");
        }
    }

    /// Fails every read after the first `ok` bytes.
    struct Failing<'a> {
        data: &'a [u8],
        ok: usize,
    }

    impl Read for Failing<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.ok == 0 {
                return Err(std::io::Error::other("disk gone"));
            }
            let n = buf.len().min(self.ok).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            self.ok -= n;
            Ok(n)
        }
    }

    #[test]
    fn a_failed_read_names_the_line_it_stopped_in() {
        let data = b"one\ntwo\nthree\n";
        let mut input = BufReader::with_capacity(4, Failing { data, ok: 9 });
        let mut seen = 0;
        let err = each_line(
            &mut input,
            100,
            |_| {
                seen += 1;
                Ok(())
            },
            |e, lines| format!("line {}: {e}", lines + 1),
        )
        .unwrap_err();
        assert_eq!((seen, err.as_str()), (2, "line 3: disk gone"));
    }
}
