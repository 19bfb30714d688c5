//! Words: how a name splits into words (on `/ _ . : # -`, other punctuation, spaces and
//! case changes), and the byte-level tests of word breaks and case the search makes.

/// Whether a query word counts on its own toward a partial match: three characters or more,
/// not only digits (`0` and `rs` would match half the dictionary).
pub(super) fn significant(word: &str) -> bool {
    word.chars().count() >= 3 && !word.chars().all(|c| c.is_ascii_digit())
}

/// Whether the lowercase word `finder` looks for is a word of the ASCII `text` (lowercase
/// `lower`), or with `prefix` the start of one: an occurrence starting where [`words`]
/// starts a word, with no word break inside it and, unless `prefix`, one right after it.
pub(super) fn has_ascii_word(
    text: &[u8],
    lower: &[u8],
    finder: &memchr::memmem::Finder<'_>,
    prefix: bool,
) -> bool {
    let n = finder.needle().len();
    finder.find_iter(lower).any(|i| {
        let end = i + n;
        word_starts(text, i)
            && (i + 1..end).all(|j| !word_starts(text, j))
            && (prefix
                || end == text.len()
                || word_starts(text, end)
                || !text[end].is_ascii_alphanumeric())
    })
}

/// Whether a word of the ASCII `text` starts at `i` as [`words`] splits it: after a
/// character that is not a letter or digit, at a change from lower case (or a digit) to upper
/// case, or at the last capital of a run followed by a lower-case letter (`HTTPServer`).
pub(super) fn word_starts(text: &[u8], i: usize) -> bool {
    let Some(&c) = text.get(i) else {
        return false;
    };
    if !c.is_ascii_alphanumeric() {
        return false;
    }
    let Some(&p) = i.checked_sub(1).and_then(|j| text.get(j)) else {
        return true;
    };
    !p.is_ascii_alphanumeric()
        || ((p.is_ascii_lowercase() || p.is_ascii_digit()) && c.is_ascii_uppercase())
        || (p.is_ascii_uppercase()
            && c.is_ascii_uppercase()
            && text.get(i + 1).is_some_and(u8::is_ascii_lowercase))
}

/// Whether position `i` of `s` starts a word (the start, or after a separator).
pub(super) fn boundary_before(s: &str, i: usize) -> bool {
    i == 0 || s.as_bytes().get(i - 1).is_some_and(|&b| is_separator(b))
}

/// Whether position `i` of `s` ends a word (the end, or before a separator).
pub(super) fn boundary_after(s: &str, i: usize) -> bool {
    i >= s.len() || s.as_bytes().get(i).is_some_and(|&b| is_separator(b))
}

pub(super) fn is_separator(b: u8) -> bool {
    b.is_ascii() && !b.is_ascii_alphanumeric()
}

pub(super) fn eq_ignore_case(word: &str, lower: &str) -> bool {
    if word.is_ascii() {
        word.eq_ignore_ascii_case(lower)
    } else {
        word.to_lowercase() == lower
    }
}

pub(super) fn starts_with_ignore_case(word: &str, lower: &str) -> bool {
    if word.is_ascii() {
        word.len() >= lower.len()
            && word.as_bytes()[..lower.len()].eq_ignore_ascii_case(lower.as_bytes())
    } else {
        word.to_lowercase().starts_with(lower)
    }
}

/// The words of `s`: runs of letters and digits, split at every other character and where
/// the case changes (`parseArgs` is `parse`, `Args`; `HTTPServer` is `HTTP`, `Server`).
pub fn words(s: &str) -> impl Iterator<Item = &str> + '_ {
    let ascii = s.is_ascii();
    let mut rest = s;
    std::iter::from_fn(move || {
        if ascii {
            let (word, tail) = ascii_word(rest)?;
            rest = tail;
            return Some(word);
        }
        let start = rest.find(char::is_alphanumeric)?;
        rest = &rest[start..];
        let mut chars = rest.char_indices().peekable();
        let mut end = rest.len();
        let mut prev: Option<char> = None;
        while let Some((i, c)) = chars.next() {
            if !c.is_alphanumeric() {
                end = i;
                break;
            }
            if let Some(p) = prev {
                let next = chars.peek().map(|&(_, n)| n);
                let lower_to_upper = (p.is_lowercase() || p.is_ascii_digit()) && c.is_uppercase();
                let acronym_end =
                    p.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase);
                if lower_to_upper || acronym_end {
                    end = i;
                    break;
                }
            }
            prev = Some(c);
        }
        let (word, tail) = rest.split_at(end);
        rest = tail;
        Some(word)
    })
}

/// The first word of an ASCII `s` and what follows it, as [`words`] splits.
pub(super) fn ascii_word(s: &str) -> Option<(&str, &str)> {
    let b = s.as_bytes();
    let start = b.iter().position(u8::is_ascii_alphanumeric)?;
    let mut end = b.len();
    for i in start + 1..b.len() {
        let (p, c) = (b[i - 1], b[i]);
        if !c.is_ascii_alphanumeric() {
            end = i;
            break;
        }
        let lower_to_upper =
            (p.is_ascii_lowercase() || p.is_ascii_digit()) && c.is_ascii_uppercase();
        let acronym_end = p.is_ascii_uppercase()
            && c.is_ascii_uppercase()
            && b.get(i + 1).is_some_and(u8::is_ascii_lowercase);
        if lower_to_upper || acronym_end {
            end = i;
            break;
        }
    }
    Some((&s[start..end], &s[end..]))
}
