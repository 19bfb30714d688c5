//! What the model is shown: the system prompt (the pack's about, how to write a program in
//! the call's language, the schema card or the Cypher graph, the pack's examples) and the
//! question, with the stored values `find` grounds its names to.

use std::collections::HashSet;

use super::{AskError, Language, TOOL};
use crate::app::App;
use crate::base::Call;
use crate::error::CallError;
use crate::find::{FindRequest, Kind};

/// The most names of a question grounded through `find`.
pub const GROUND_NAMES: usize = 8;

/// The most stored values shown per grounded name.
pub const GROUND_VALUES: u64 = 3;

/// What a call asking in Cypher answers over a database without a Cypher graph.
pub const NO_GRAPH: &str = "ask: language cypher needs a Cypher graph, and this database has \
none (no node labels and no relationship types). Ask with language datalog, or give the \
database a graph: nodes and edges dumps, or [[cypher.labels]] and [[cypher.types]] in its \
strata.toml.";

/// Words never worth grounding: question words, articles, common verbs.
const STOPWORDS: &[&str] = &[
    "a", "about", "all", "an", "and", "any", "are", "as", "at", "be", "by", "can", "count", "data",
    "depend", "depends", "did", "do", "does", "each", "every", "find", "for", "from", "give",
    "has", "have", "how", "i", "in", "into", "is", "it", "its", "list", "many", "me", "most",
    "much", "my", "name", "names", "not", "number", "of", "on", "one", "or", "other", "show",
    "some", "than", "that", "the", "their", "them", "there", "these", "they", "this", "those",
    "to", "uses", "use", "used", "using", "what", "when", "where", "which", "who", "whose", "why",
    "with", "without",
];

/// The names of a question worth grounding: quoted phrases first, then the words that are
/// not common English, at most [`GROUND_NAMES`], each once.
pub fn question_names(question: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    let mut push = |n: &str, names: &mut Vec<String>| {
        let n = n.trim();
        if !n.is_empty() && seen.insert(n.to_lowercase()) {
            names.push(n.to_owned());
        }
    };
    let mut unquoted = String::new();
    let mut rest = question;
    while let Some(open) = rest.find(['"', '\'', '`', '“']) {
        let q = rest[open..].chars().next().unwrap_or('"');
        let close_char = if q == '“' { '”' } else { q };
        let body_start = open + q.len_utf8();
        // An apostrophe inside a word (api's) opens no quote.
        let inside_word = q == '\''
            && rest[..open]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric);
        match rest[body_start..].find(close_char) {
            Some(len) if !inside_word => {
                unquoted.push_str(&rest[..open]);
                unquoted.push(' ');
                push(&rest[body_start..body_start + len], &mut names);
                rest = &rest[body_start + len + close_char.len_utf8()..];
            }
            _ => {
                unquoted.push_str(&rest[..body_start]);
                rest = &rest[body_start..];
            }
        }
    }
    unquoted.push_str(rest);
    for raw in unquoted.split_whitespace() {
        let w = raw.trim_matches(|c: char| !(c.is_alphanumeric() || "_/#:.-".contains(c)));
        let w = w.trim_end_matches(['.', ':', '-']);
        let w = w.strip_suffix("'s").unwrap_or(w);
        if w.chars().count() < 2
            || w.chars().all(|c| c.is_ascii_digit())
            || STOPWORDS.contains(&w.to_lowercase().as_str())
        {
            continue;
        }
        push(w, &mut names);
    }
    names.truncate(GROUND_NAMES);
    names
}

impl App {
    /// What the model is told before the question: the pack's about, how to write a
    /// program, what it may read (the schema card, or the Cypher graph), the pack's examples
    /// in the language and how to reply. Cypher without a graph is refused here.
    pub(super) fn system_prompt(
        &self,
        call: &Call,
        language: Language,
    ) -> Result<String, CallError> {
        let pack = self.pack();
        let vocab = self.vocabulary(call, TOOL)?;
        let mut s = match language {
            Language::Datalog => format!(
                "You translate questions about {} into one program in Strata's Datalog, which \
                 a store of facts answers exactly.\n\n{}\n\nThe relations and modules a \
                 program may use:\n{}\n",
                pack.about_or_default(),
                language.how_to_write(),
                strata_eval::card(&vocab),
            ),
            Language::Cypher => {
                let graph = strata_eval::cypher::Graph::derive(&vocab, &pack.cypher.mapping())
                    .map_err(AskError::Graph)?;
                if graph.is_empty() {
                    return Err(AskError::NoGraph.into());
                }
                format!(
                    "You translate questions about {} into one read query in Cypher, which \
                     Strata compiles to a program that a store of facts answers exactly.\n\n\
                     {}\n\nThe graph a query may match (each label with the relation its \
                     nodes come from, the relation's columns and the node's identity):\n{}\n",
                    pack.about_or_default(),
                    language.how_to_write(),
                    graph.describe(),
                )
            }
        };
        let examples: Vec<(&str, &str)> = match language {
            Language::Datalog => pack
                .examples
                .iter()
                .map(|e| (e.question.trim(), e.program.trim()))
                .collect(),
            Language::Cypher => pack
                .cypher_examples
                .iter()
                .map(|e| (e.question.trim(), e.query.trim()))
                .collect(),
        };
        if !examples.is_empty() {
            s.push_str("\nExamples:\n");
            for (question, program) in examples {
                s.push_str(&format!("# {question}\n{program}\n"));
            }
        }
        s.push_str(&format!(
            "\nReply with one {} and nothing else, in a ```{} block. Write stored values \
             exactly as the store holds them: the question comes with the stored values \
             found for its names.",
            language.noun(),
            language.name()
        ));
        Ok(s)
    }

    /// The first message: the question and the stored values its names ground to.
    pub(super) fn question_message(&self, question: &str) -> String {
        let mut s = format!("Question: {question}\n");
        let grounded = self.ground(question);
        if grounded.is_empty() {
            s.push_str("\nNo stored value matched the names in the question.");
        } else {
            s.push_str("\nStored values found for the names in the question:");
            for line in grounded {
                s.push_str("\n- ");
                s.push_str(&line);
            }
        }
        s
    }

    /// The stored values `find` grounds each name of `question` to, one line each:
    /// `"api" (exact for api): imports.src 1 row, imports.dst 2 rows`.
    pub fn ground(&self, question: &str) -> Vec<String> {
        let mut lines = Vec::new();
        let mut shown = HashSet::new();
        for name in question_names(question) {
            let request = FindRequest {
                name: name.clone(),
                limit: GROUND_VALUES,
            };
            let Ok(found) = self.find(&Call::plain("find"), &request) else {
                continue;
            };
            // A misspelling is worth showing only when nothing closer matched.
            let close = found
                .matches
                .iter()
                .any(|m| !matches!(m.kind, "fuzzy" | "some words"));
            for m in &found.matches {
                // A value sharing only some words with the name says little.
                if m.kind == Kind::SomeWords.name()
                    || (close && m.kind == Kind::Fuzzy.name())
                    || !shown.insert(m.value.clone())
                {
                    continue;
                }
                let mut quoted = String::new();
                strata_eval::write_value(&strata_eval::Value::text(&*m.value), &mut quoted);
                lines.push(format!(
                    "{quoted} ({} for {name}): {}",
                    m.kind,
                    m.uses_text()
                ));
            }
        }
        lines
    }
}
