//! "Did you mean" for the tools that take a relation or module path (`schema`, `look`,
//! `values`): the engine's one rule set ([`strata_eval::did_you_mean`]) over the database's
//! relations and modules, offered when it names exactly one.

use strata_eval::Vocabulary;

/// The one relation or module `name` most likely stands for (its last part or its case
/// differs, or it is a small misspelling away); `None` when nothing is near or several are
/// equally near.
pub fn did_you_mean(vocab: &Vocabulary, name: &str) -> Option<String> {
    let mut names: Vec<String> = vocab.relations().into_iter().map(|r| r.name).collect();
    names.extend(vocab.modules().into_iter().map(str::to_owned));
    let mut found = strata_eval::did_you_mean(name, names.iter().map(String::as_str));
    match found.len() {
        1 => found.pop(),
        _ => None,
    }
}

/// `; did you mean "deps.depends_on"?` for a suggestion, empty for none.
pub fn did_you_mean_text(suggestion: Option<&str>) -> String {
    suggestion.map_or_else(String::new, |s| format!("; did you mean \"{s}\"?"))
}
