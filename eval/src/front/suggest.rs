//! "Did you mean": the names a misspelt, miscased or unqualified name most likely stands for.
//! This is the one rule set: the language's unknown relations, Cypher's unknown labels and
//! relationship types, and the application's `schema`, `look` and `values` all rank with it.
//!
//! Candidates are ranked as the language contract says: first a candidate whose last segment
//! is the written name's last segment, ignoring case (`depends_on` or `DEPENDS_ON` for
//! `deps.depends_on`), then a candidate within edit distance of about a quarter of the
//! written name's length, ignoring case; within each, one in the same module first, then the
//! nearest, then by name.

use super::distance::EditDistance;

/// A name a program could write in the place of an unknown one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// The name as the program would write it there (bare for a module's own member, seen
    /// from inside the module).
    pub written: String,
    /// The candidate's full name (dotted for a module member).
    pub full: String,
    /// The module defining it, if any.
    pub module: Option<String>,
}

/// The most suggestions given at once.
const MAX_SUGGESTIONS: usize = 3;

/// The edit distance allowed for a written name of `len` characters: about a quarter of it,
/// at least 1.
pub(crate) fn threshold(len: usize) -> usize {
    ((len + 1) / 4).max(1)
}

/// The names to suggest for the unknown `name`, best first (at most three, all equally good).
/// `module` is the module the name is written in, or the module its own prefix names; its
/// members rank first.
pub(crate) fn suggest(name: &str, module: Option<&str>, candidates: &[Candidate]) -> Vec<String> {
    let lower = name.to_lowercase();
    let chars: Vec<char> = lower.chars().collect();
    let last = last_segment(&lower);
    let bare = !name.contains('.');
    let limit = threshold(chars.len());
    let mut edit = EditDistance::new();
    let mut ranked: Vec<((u8, bool, usize), &str)> = Vec::new();
    for c in candidates {
        if c.written == name {
            continue;
        }
        let same_module = module.is_some() && c.module.as_deref() == module;
        let full = c.full.to_lowercase();
        let tier = if last_segment(&full) == last {
            Some((0, 0))
        } else {
            let mut near = |other: &str| edit.within(&chars, other, limit);
            let mut d = match (near(&c.written.to_lowercase()), near(&full)) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if bare {
                d = match (d, near(last_segment(&full))) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            d.map(|d| (1, d))
        };
        if let Some((tier, d)) = tier {
            ranked.push(((tier, !same_module, d), c.written.as_str()));
        }
    }
    ranked.sort();
    ranked.dedup_by(|a, b| a.1 == b.1);
    let Some(best) = ranked.first().map(|r| r.0) else {
        return Vec::new();
    };
    ranked
        .iter()
        .take_while(|r| r.0 == best)
        .take(MAX_SUGGESTIONS)
        .map(|r| r.1.to_owned())
        .collect()
}

/// The names among `names` to suggest for the unknown `name`, best first: at most three,
/// all equally good, none when nothing is near. A dotted name's module is the part before
/// its last `.`; a name in `name`'s own module ranks first.
///
/// ```
/// let names = ["imports", "deps.depends_on", "deps.depend"];
/// assert_eq!(strata_eval::did_you_mean("DEPENDS_ON", names), ["deps.depends_on"]);
/// assert_eq!(strata_eval::did_you_mean("imprts", names), ["imports"]);
/// assert!(strata_eval::did_you_mean("zzz", names).is_empty());
/// ```
pub fn did_you_mean<'a>(name: &str, names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let candidates: Vec<Candidate> = names
        .into_iter()
        .map(|n| Candidate {
            written: n.to_owned(),
            full: n.to_owned(),
            module: n.rsplit_once('.').map(|(m, _)| m.to_owned()),
        })
        .collect();
    let module = name.rsplit_once('.').map(|(m, _)| m);
    suggest(name, module, &candidates)
}

/// `"a"`, `"a" or "b"`, `"a", "b" or "c"`.
pub(crate) fn quoted_alternatives(names: &[String]) -> String {
    alternatives(names, |n| format!("\"{n}\""))
}

/// The names as `write` writes each, joined as alternatives: `a`, `a or b`, `a, b or c`.
pub(crate) fn alternatives(names: &[String], write: impl Fn(&str) -> String) -> String {
    let quoted: Vec<String> = names.iter().map(|n| write(n)).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// The last `.`-separated segment of a name.
pub(crate) fn last_segment(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(full: &str) -> Candidate {
        let module = full.rsplit_once('.').map(|(m, _)| m.to_owned());
        Candidate {
            written: full.to_owned(),
            full: full.to_owned(),
            module,
        }
    }

    #[test]
    fn last_segment_ranks_first() {
        let cands = [
            cand("imports"),
            cand("deps.depends_on"),
            cand("deps.depend"),
        ];
        assert_eq!(suggest("depends_on", None, &cands), ["deps.depends_on"]);
        assert_eq!(suggest("depend_on", None, &cands), ["deps.depends_on"]);
        assert_eq!(suggest("imprts", None, &cands), ["imports"]);
        assert!(suggest("zzz", None, &cands).is_empty());
        assert_eq!(suggest("DEPENDS_ON", None, &cands), ["deps.depends_on"]);
        assert_eq!(suggest("Imprts", None, &cands), ["imports"]);
    }

    #[test]
    fn same_module_first_then_ties() {
        let cands = [cand("a.x"), cand("b.x"), cand("c.x")];
        assert_eq!(suggest("x", Some("b"), &cands), ["b.x"]);
        assert_eq!(suggest("x", None, &cands), ["a.x", "b.x", "c.x"]);
        assert_eq!(
            quoted_alternatives(&suggest("x", None, &cands)),
            "\"a.x\", \"b.x\" or \"c.x\""
        );
    }

    #[test]
    fn thresholds() {
        assert_eq!(threshold(1), 1);
        assert_eq!(threshold(6), 1);
        assert_eq!(threshold(7), 2);
        assert_eq!(threshold(10), 2);
        assert_eq!(threshold(11), 3);
    }
}
