//! "Did you mean": the names a misspelt or unqualified relation name most likely stands for.
//!
//! Candidates are ranked as the language contract says: first a candidate whose last segment
//! is the written name's last segment (`depends_on` for `deps.depends_on`), then a candidate
//! within edit distance of about a quarter of the written name's length; within each, one in
//! the same module first, then the nearest, then by name.

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
    let last = last_segment(name);
    let bare = !name.contains('.');
    let limit = threshold(name.chars().count());
    let mut ranked: Vec<((u8, bool, usize), &str)> = Vec::new();
    for c in candidates {
        if c.written == name {
            continue;
        }
        let same_module = module.is_some() && c.module.as_deref() == module;
        let tier = if last_segment(&c.full) == last {
            Some((0, 0))
        } else {
            let mut d = distance(name, &c.written).min(distance(name, &c.full));
            if bare {
                d = d.min(distance(name, last_segment(&c.full)));
            }
            (d <= limit).then_some((1, d))
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

/// `"a"`, `"a" or "b"`, `"a", "b" or "c"`.
pub(crate) fn quoted_alternatives(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
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

/// The Levenshtein distance between `a` and `b`, in characters.
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != cb);
            cur[j + 1] = substitute.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
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
    fn distances() {
        assert_eq!(distance("", ""), 0);
        assert_eq!(distance("abc", ""), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("imports", "imprts"), 1);
        assert_eq!(distance("é", "e"), 1);
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
