//! Reading a read's whole lines at once: a `.facts` file's plain lines are recorded
//! straight into the chunk the reading thread fills; any other line is read alone.

use super::recorded::Recorder;
use super::{FactSink, Format, LineReader, PROGRESS_LINES, Result, opens_plainly};

impl<'a> LineReader<'_> {
    /// Reads `block`, whole lines each with its line break (found valid UTF-8 together, and
    /// none longer than the limit), as [`LineReader::line`] reads each alone: the same
    /// facts, in the same order, with the same errors and progress reports.
    pub(super) fn lines(&mut self, block: &'a str, rec: &mut Recorder) -> Result<()> {
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', block.as_bytes()) {
            // A line break is one byte no other character's encoding holds: a cut after one
            // is at a character boundary.
            let line = block.get(start..=end).unwrap_or_default();
            start = end + 1;
            self.line_no += 1;
            let text = self.valid_text(line);
            if !self.plain_fact(text, rec)? {
                self.line(text, rec)?;
            }
            if self.line_no.is_multiple_of(PROGRESS_LINES) {
                rec.progress(self.bytes, self.facts);
            }
        }
        Ok(())
    }

    /// Records the fact of `text` when it is a `.facts` line with nothing for
    /// [`LineReader::line`] to do but read its fields: one that opens with a printing ASCII
    /// character other than `#` (not blank, no space to trim, not a comment), holds no
    /// backslash, and has as many fields as the file's first fact (the first fact itself is
    /// read alone: it fixes the columns). Answers whether it did.
    fn plain_fact(&mut self, text: &str, rec: &mut Recorder) -> Result<bool> {
        let Some(arity) = self.facts_arity else {
            return Ok(false);
        };
        if self.spec.format != Format::Facts || !opens_plainly(text) {
            return Ok(false);
        }
        if !rec.is_open() {
            rec.open(&self.facts_fact(&[]), arity)?;
        }
        if !rec.plain_line(text, self.line_no)? {
            return Ok(false);
        }
        self.facts += 1;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::BufReader;

    use super::*;
    use crate::dump::seen::Lines;
    use crate::dump::{DumpSpec, read_limited};

    /// What reading `text` gives, through reads of `capacity` bytes, with lines of at most
    /// `max` bytes: the sink, and the count or error as text.
    fn read_it(
        text: &str,
        capacity: usize,
        max: usize,
        unit: Option<&str>,
        refuse: u64,
    ) -> (Lines, String) {
        let spec = DumpSpec {
            label: "p.facts".to_owned(),
            format: Format::Facts,
            relation: Some("p".to_owned()),
            unit: unit.map(str::to_owned),
            checkout: None,
        };
        let mut seen = Lines {
            refuse,
            ..Lines::default()
        };
        let input = BufReader::with_capacity(capacity, text.as_bytes());
        let got = match read_limited(input, &spec, &mut seen, max) {
            Ok(n) => n.to_string(),
            Err(e) => e.to_string(),
        };
        (seen, got)
    }

    /// A `.facts` file of `n` lines of every kind a line can be: plain, negative, text,
    /// escaped, absent, blank, comment, CRLF, leading space.
    fn mixed(n: usize) -> String {
        let mut text = String::from("\u{feff}# doc: pairs\n# columns: x, y\n");
        for i in 0..n {
            let line = match i % 23 {
                3 => format!("-{i}\t{i}"),
                5 => format!("a{i}\tb c"),
                7 => format!("{i}\\t\t\\N"),
                9 => String::new(),
                11 => format!("# note {i}"),
                13 => format!("{i}\t{i}\r"),
                15 => format!(" {i}\t{i}"),
                17 => format!("007\t{i}.5"),
                19 => format!("/p/{i}\t\u{e9}"),
                _ => format!("{i}\t{}", i * 7919 % 10_007),
            };
            text.push_str(&line);
            text.push('\n');
        }
        text
    }

    #[test]
    fn lines_read_at_once_read_as_lines_read_alone() {
        let text = mixed(20_000);
        // A limit under a read's size: every line goes alone.
        let alone = read_it(&text, 1 << 16, 64, None, 0);
        assert_eq!(alone.1, "18260");
        assert_eq!(alone.0.progress.len(), 3);
        for capacity in [7, 100, 4096, 1 << 16, 1 << 20] {
            assert_eq!(
                read_it(&text, capacity, 1 << 20, None, 0),
                alone,
                "{capacity}"
            );
        }
        let unit = read_it(&text, 1 << 16, 64, Some("u"), 0);
        assert_eq!(read_it(&text, 1 << 16, 1 << 20, Some("u"), 0), unit);
        // A refusal stops the read where it does alone, every fact before it taken.
        let refused = read_it(&text, 1 << 16, 64, None, 12_345);
        assert_eq!(refused.1, "refused line 12345");
        assert_eq!(read_it(&text, 1 << 16, 1 << 20, None, 12_345), refused);
    }

    #[test]
    fn a_bad_line_among_plain_ones_is_the_error_it_is_alone() {
        let mut text = mixed(5_000);
        text.push_str("1\t2\t3\n4\t5\n");
        let alone = read_it(&text, 1 << 16, 64, None, 0);
        assert!(alone.1.starts_with("p.facts:5003: "), "{}", alone.1);
        assert!(
            alone.1.contains("expected 2 tab-separated fields"),
            "{}",
            alone.1
        );
        assert_eq!(read_it(&text, 1 << 16, 1 << 20, None, 0), alone);
        assert_eq!(read_it(&text, 333, 1 << 20, None, 0), alone);
    }
}
