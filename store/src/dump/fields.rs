//! Cutting a line of a tab-separated dump into its fields, and reading each field's value.

use std::borrow::Cow;

use super::Field;

/// The tab-separated fields of a line: what `text.split('\t')` gives, found by the byte in
/// a plain loop (`str::split` by a char compares its encoding with `memcmp` at each
/// candidate, and `memchr` costs more to start than a field of a few bytes takes to scan).
/// A tab is one byte that no other character's encoding holds, so every cut is at a
/// character boundary and `get` always answers.
pub(super) fn tab_fields(text: &str) -> impl Iterator<Item = &str> {
    let mut from = Some(0);
    std::iter::from_fn(move || {
        let start = from?;
        let rest = &text.as_bytes()[start..];
        match rest.iter().position(|&b| b == b'\t') {
            Some(i) => {
                from = Some(start + i + 1);
                text.get(start..start + i)
            }
            None => {
                from = None;
                text.get(start..)
            }
        }
    })
}

/// The most digits a field read in [`plain_fields`]'s one pass may have: every integer of
/// at most 15 digits is exact in an `f64`, as [`strata_eval::canonical_number`] reads it.
const MAX_DIGITS: usize = 15;

/// Hands each field of `text` to `push`, read as [`Field::from_tsv`] reads it, and answers
/// true; or answers false when the line holds a backslash (an escape, which the caller
/// unescapes field by field first), having handed over some of its fields or none: the
/// caller drops them.
///
/// One pass over the bytes finds the tabs and the backslash and reads a field of digits as
/// it goes: for a dump of integers this is most of the reading, and three passes (one for
/// a backslash, one for each tab, one for each number's digits) cost twice as much. A
/// number is handed over as it is read: a caller that records it (inlining `push`) makes no
/// [`Field`] for it.
#[inline]
pub(super) fn plain_fields<'a>(text: &'a str, mut push: impl FnMut(Field<'a>)) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    loop {
        // A field's leading digits, read as a number (wrapping rather than overflowing:
        // it is read only when they are at most 15), then the rest of it, if any.
        let start = i;
        let mut n: u64 = 0;
        while let Some(&b) = bytes.get(i) {
            let v = b.wrapping_sub(b'0');
            if v >= 10 {
                break;
            }
            n = n.wrapping_mul(10).wrapping_add(u64::from(v));
            i += 1;
        }
        let digits = i;
        while let Some(&b) = bytes.get(i) {
            if b == b'\t' {
                break;
            }
            if b == b'\\' {
                return false;
            }
            i += 1;
        }
        push(field(text, start, i, n, digits == i));
        if i == bytes.len() {
            return true;
        }
        i += 1;
    }
}

/// The field `text[start..end]`, given its digits read as `n` when `digits` (every byte
/// a digit): a number when it is one of at most [`MAX_DIGITS`] digits without a leading
/// zero, read as [`Field::from_tsv`] reads anything else.
fn field(text: &str, start: usize, end: usize, n: u64, digits: bool) -> Field<'_> {
    let len = end - start;
    let bytes = text.as_bytes();
    if digits && (1..=MAX_DIGITS).contains(&len) && (len == 1 || bytes[start] != b'0') {
        #[allow(clippy::cast_precision_loss)] // at most 15 digits: exact in f64
        return Field::Number(n as f64);
    }
    // Cut at tabs, which are whole characters: always a char boundary.
    Field::from_tsv(Cow::Borrowed(text.get(start..end).unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use proptest::prelude::*;

    use super::*;

    /// What the fields of a line without a backslash were read as before [`plain_fields`]:
    /// split at tabs, then each read alone.
    fn by_steps(text: &str) -> Vec<Field<'_>> {
        tab_fields(text)
            .map(|f| Field::from_tsv(Cow::Borrowed(f)))
            .collect()
    }

    fn plain(text: &str) -> Option<Vec<Field<'_>>> {
        let mut out = Vec::new();
        plain_fields(text, |f| out.push(f)).then_some(out)
    }

    #[test]
    fn fields_read_in_one_pass_are_the_fields_read_by_steps() {
        for line in [
            "",
            "0",
            "1\t2",
            "00\t0\t-0\t-\t-5\t007",
            "123456789012345\t1234567890123456\t9007199254740992\t99999999999999999999",
            "3.5\t1e6\t1.50\t.5\t+1\tNaN",
            "a\tb c\t\t\té\t12a\t1 ",
            "\t",
            "\t\t1\t",
        ] {
            assert_eq!(plain(line), Some(by_steps(line)), "{line:?}");
        }
        for line in ["\\N", "1\t\\N", "a\\tb\t1", "1\t2\\"] {
            assert_eq!(plain(line), None, "{line:?}");
        }
    }

    proptest! {
        #[test]
        fn any_line_reads_as_by_steps(
            fields in prop::collection::vec("[-0-9.ea\\\\ ]{0,20}", 1..10)
        ) {
            let line = fields.join("\t");
            let got = plain(&line);
            if line.contains('\\') {
                prop_assert_eq!(got, None);
            } else {
                prop_assert_eq!(got, Some(by_steps(&line)));
            }
        }
    }
}
