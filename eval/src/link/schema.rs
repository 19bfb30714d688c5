//! The schema as `schema` shows it: the card of every relation and module, or one module's
//! members, or one relation's signature, doc and rules.

use crate::link::vocab::{RelationKind, Vocabulary};

/// The card: every base relation (with its size and tier), every module with its public
/// members, and the builtins, each one line with its doc.
pub fn card(vocab: &Vocabulary) -> String {
    let mut out = String::from("relations:");
    for r in vocab.base_relations() {
        let doc = if r.doc.is_empty() {
            String::new()
        } else {
            format!(" # {}", r.doc)
        };
        let tier = if r.tier == "default" {
            String::new()
        } else {
            format!(", tier {}", r.tier)
        };
        // A column without an index is slow to look up by alone: the card says so.
        let unindexed: Vec<&str> = r
            .unindexed
            .iter()
            .filter_map(|&c| r.columns.get(c).map(String::as_str))
            .collect();
        let unindexed = if unindexed.is_empty() {
            String::new()
        } else {
            format!("; no index on {}", unindexed.join(", "))
        };
        out.push_str(&format!(
            "\n{}({}){doc} [{} facts{tier}{unindexed}]",
            r.name,
            r.columns.join(", "),
            r.rows
        ));
    }
    for m in vocab.modules() {
        if let Some(text) = vocab.module_schema(m) {
            out.push_str("\n\n");
            out.push_str(&text);
        }
    }
    out.push_str("\n\nbuiltins:");
    for b in Vocabulary::builtins() {
        out.push('\n');
        out.push_str(&b.line());
    }
    out
}

/// What `schema PATH` shows: a module's members (`module deps` and a line each), or a
/// relation's line and, for a derived one, its rules. `None` when nothing has that path.
pub fn describe(vocab: &Vocabulary, path: &str) -> Option<String> {
    if let Some(text) = vocab.module_schema(path) {
        return Some(text);
    }
    let r = vocab.relation(path)?;
    let mut out = r.line();
    match r.kind {
        RelationKind::Derived => {
            out.push_str("\nrules:");
            for rule in &r.rules {
                out.push_str("\n  ");
                out.push_str(rule);
            }
        }
        RelationKind::Base => {
            if let Some(info) = vocab.base_relations().iter().find(|b| b.name == path) {
                out.push_str(&format!("\n{} facts in tier {}", info.rows, info.tier));
                for (i, (c, d)) in info.columns.iter().zip(&info.distinct).enumerate() {
                    if info.indexed(i) {
                        out.push_str(&format!("\n  {c}: {d} distinct values"));
                    } else {
                        out.push_str(&format!(
                            "\n  {c}: at most {d} distinct values; no index (a query binding \
                             only {c} reads the relation whole)"
                        ));
                    }
                }
            }
        }
        RelationKind::Builtin => out.push_str("\nbuiltin: tests bound arguments"),
    }
    Some(out)
}
