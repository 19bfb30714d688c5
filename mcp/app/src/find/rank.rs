//! How a match ranks: its [`Kind`] (exact, prefix, substring, token, fuzzy, partial), then
//! whether it is aligned on word breaks, its edit distance and its length, the text on ties.

use super::Index;

/// How a value matched the query, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// The whole value, ignoring case.
    Exact,
    /// The value's last part, after its last `/`, `#` or `:` (`pkg:parser`,
    /// `sym:src/cli.rs#parse_args`), ignoring case.
    LastPart,
    /// The value starts with the query.
    Prefix,
    /// The query occurs inside the value.
    Substring,
    /// Every word of the query is a word of the value.
    Token,
    /// The value's last part (after `/`, `#` or `:`), or the value when it has none, is
    /// within a few edits (1 for a query of 3 to 5 characters, 2 up to 11, then 3).
    Fuzzy,
    /// Some, not all, of the query's words are words of the value.
    SomeWords,
}

impl Kind {
    /// The kind's name, as answers show it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Exact => "exact",
            Kind::LastPart => "last part",
            Kind::Prefix => "prefix",
            Kind::Substring => "substring",
            Kind::Token => "token",
            Kind::Fuzzy => "fuzzy",
            Kind::SomeWords => "some words",
        }
    }
}

/// One match: the value's dictionary id and how it matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    /// The text's dictionary id.
    pub id: u32,
    /// How it matched.
    pub kind: Kind,
    /// For [`Kind::Fuzzy`], the edit distance; for [`Kind::SomeWords`], the query's words
    /// it lacks; 0 otherwise.
    pub distance: u32,
    /// Whether the match sits on word boundaries (or, for an exact match, has the query's
    /// case too): such matches rank first within their kind.
    pub aligned: bool,
}

impl Index {
    /// The best `keep` (at least 1) of `found`, ranked.
    pub(super) fn rank(&self, found: Vec<Match>, keep: usize) -> Vec<Match> {
        rank(found, keep, |id| self.text(id).unwrap_or(""))
    }
}

/// The best `keep` (at least 1) of `found`, ranked, with `text` giving each id's text.
pub(super) fn rank<'a>(
    found: Vec<Match>,
    keep: usize,
    text: impl Fn(u32) -> &'a str,
) -> Vec<Match> {
    // Rank by one packed key (kind, alignment, distance, length), then the text on ties.
    let mut keyed: Vec<(u64, Match)> = found
        .into_iter()
        .map(|m| {
            let len = text(m.id).len() as u64;
            let key = (m.kind as u64) << 60
                | u64::from(!m.aligned) << 59
                | u64::from(m.distance.min(0x7ff)) << 48
                | len.min(0xffff_ffff_ffff);
            (key, m)
        })
        .collect();
    let order = |a: &(u64, Match), b: &(u64, Match)| {
        a.0.cmp(&b.0).then_with(|| text(a.1.id).cmp(text(b.1.id)))
    };
    if keep < keyed.len() {
        keyed.select_nth_unstable_by(keep - 1, order);
        keyed.truncate(keep);
    }
    keyed.sort_unstable_by(order);
    keyed.into_iter().map(|(_, m)| m).collect()
}
