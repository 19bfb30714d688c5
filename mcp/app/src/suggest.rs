//! "Did you mean": the one relation or module a name that is nearly right stands for (its
//! last part, or its case, matches), as `schema`, `look` and `values` suggest it.

use strata_eval::Vocabulary;

/// The one relation or module whose name, or whose last part, is `name` ignoring case;
/// `None` when none or several are.
pub fn did_you_mean(vocab: &Vocabulary, name: &str) -> Option<String> {
    let lower = name.to_lowercase();
    let suffix = format!(".{lower}");
    let mut names: Vec<String> = vocab.relations().into_iter().map(|r| r.name).collect();
    names.extend(vocab.modules().into_iter().map(str::to_owned));
    let mut found = names.into_iter().filter(|n| {
        let n = n.to_lowercase();
        n == lower || n.ends_with(&suffix)
    });
    match (found.next(), found.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

/// `; did you mean "deps.depends_on"?` for a suggestion, empty for none.
pub fn did_you_mean_text(suggestion: Option<&str>) -> String {
    suggestion.map_or_else(String::new, |s| format!("; did you mean \"{s}\"?"))
}
