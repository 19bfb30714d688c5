//! `completion/complete`: what a prompt's argument may be, as the user types it. A prompt's
//! `target` is completed with the names the database knows: its relations (builtins left
//! out), its modules and the Cypher graph's node labels, those that start with what was
//! typed first (case-insensitively), then those that contain it. A prompt or argument the
//! server lacks, and any resource reference (the server has no resource templates), get
//! no values: completion is a hint, never an error.

use rmcp::ErrorData as McpError;
use rmcp::model::{CompleteRequestParams, CompletionInfo, Reference};
use strata_eval::RelationKind;

use crate::server::Server;

/// The most values one completion answers (the protocol's cap).
pub const COMPLETION_MAX_VALUES: usize = CompletionInfo::MAX_VALUES;

impl Server {
    /// The values `request`'s argument may take: see the module's text. Reads the store:
    /// run it off the async threads.
    pub fn complete_argument(
        &self,
        request: &CompleteRequestParams,
    ) -> Result<CompletionInfo, McpError> {
        let names = match &request.r#ref {
            Reference::Prompt(p) if self.prompt_takes(&p.name, &request.argument.name) => {
                self.known_names()?
            }
            _ => Vec::new(),
        };
        let (values, total) = ranked(&names, &request.argument.value);
        let has_more = total > values.len();
        CompletionInfo::with_pagination(
            values,
            Some(u32::try_from(total).unwrap_or(u32::MAX)),
            has_more,
        )
        .map_err(|e| McpError::internal_error(format!("completion: {e}"), None))
    }

    /// The relation, module and node label names of the database as it is now.
    fn known_names(&self) -> Result<Vec<String>, McpError> {
        let (_, vocab) = self
            .app()
            .base_snapshot("completion")
            .map_err(|e| McpError::internal_error(e.to_string(), Some(e.json())))?;
        let mut names: Vec<String> = vocab
            .relations()
            .into_iter()
            .filter(|r| r.kind != RelationKind::Builtin)
            .map(|r| r.name)
            .collect();
        names.extend(vocab.modules().into_iter().map(str::to_owned));
        if self.host().vocabulary.is_none()
            && let Ok(graph) = self.app().graph(&vocab)
        {
            names.extend(graph.labels.into_iter().map(|l| l.name));
        }
        names.sort();
        names.dedup();
        Ok(names)
    }
}

/// The names that start with `typed` (case-insensitively), then those that contain it, in
/// name order within each, at most [`COMPLETION_MAX_VALUES`]; and how many matched.
fn ranked(names: &[String], typed: &str) -> (Vec<String>, usize) {
    let typed = typed.to_lowercase();
    let (mut first, mut then) = (Vec::new(), Vec::new());
    for n in names {
        let lower = n.to_lowercase();
        if lower.starts_with(&typed) {
            first.push(n.clone());
        } else if lower.contains(&typed) {
            then.push(n.clone());
        }
    }
    first.extend(then);
    let total = first.len();
    first.truncate(COMPLETION_MAX_VALUES);
    (first, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_come_first_then_infixes() {
        let names: Vec<String> = ["calls", "deps.depends_on", "Depends", "imports"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let (v, total) = ranked(&names, "dep");
        assert_eq!(v, vec!["deps.depends_on", "Depends"]);
        assert_eq!(total, 2);
        let (v, _) = ranked(&names, "s");
        assert_eq!(v, vec!["calls", "deps.depends_on", "Depends", "imports"]);
        let (v, total) = ranked(&names, "");
        assert_eq!((v.len(), total), (4, 4));
        let many: Vec<String> = (0..150).map(|i| format!("r{i:03}")).collect();
        let (v, total) = ranked(&many, "r");
        assert_eq!((v.len(), total), (COMPLETION_MAX_VALUES, 150));
    }
}
