//! The `values` tool: the distinct values of one argument of a relation, answered by the
//! program it writes for `relation.column` or `relation.N` and runs as `query` would.

use strata_eval::Vocabulary;
use strata_eval::budget::Cancel;

use super::{Call, Server, ToolOutput, did_you_mean, query_error};
use crate::args::ValuesArgs;

/// How many values `values` answers when the call does not say.
pub const VALUES_LIMIT: u64 = 20;

impl Server {
    /// `values`: the distinct values of one argument of a relation, through a query.
    pub fn values(&self, a: &ValuesArgs, cancel: &Cancel) -> ToolOutput {
        self.values_in(&Call::plain("values"), a, cancel)
    }

    pub(super) fn values_in(&self, call: &Call, a: &ValuesArgs, cancel: &Cancel) -> ToolOutput {
        let vocab = match self.call_vocabulary(call, "values") {
            Ok(v) => v,
            Err(e) => return ToolOutput::error(e),
        };
        let program = match values_program(&vocab, a.target.trim()) {
            Ok(p) => p,
            Err(e) => return ToolOutput::error(e),
        };
        let p = match self.prepare(call, "values", &program, &[]) {
            Ok(p) => p,
            Err(e) => return ToolOutput::error(e),
        };
        let limit = if a.limit == 0 { VALUES_LIMIT } else { a.limit };
        let mut options = self.run_options(call, limit, 0, cancel);
        options.engine.witnesses = false;
        let out = match p.query.run(p.base.source(), &options) {
            Ok(o) => o,
            Err(e) => return ToolOutput::error(query_error(e)),
        };
        let mut j = out.answer.json();
        j["program"] = program.clone().into();
        if let Some(s) = p.base.snapshot_json() {
            j["snapshot"] = s;
        }
        ToolOutput {
            text: format!("ran: {program}\n{}", out.answer.text()),
            structured: Some(j),
            is_error: false,
        }
    }
}

/// The program `values` runs for `relation.column` or `relation.N`:
/// `pkg(_, ?license) => ?license`.
fn values_program(vocab: &Vocabulary, target: &str) -> Result<String, String> {
    let usage = "give relation.column (pkg.license) or relation.N, N counting from 1 (imports.2)";
    let Some((rel, col)) = target.rsplit_once('.') else {
        return Err(match vocab.relation(target) {
            Some(r) => format!(
                "values: \"{target}\" is a relation; name one of its arguments: {}",
                columns_hint(&r.name, &r.columns)
            ),
            None => format!("values: \"{target}\" names no argument; {usage}"),
        });
    };
    let Some(r) = vocab.relation(rel) else {
        if let Some(r) = vocab.relation(target) {
            return Err(format!(
                "values: \"{target}\" is a relation; name one of its arguments: {}",
                columns_hint(&r.name, &r.columns)
            ));
        }
        return Err(format!(
            "values: unknown relation \"{rel}\"{}; {usage}",
            did_you_mean(vocab, rel)
        ));
    };
    let arity = r.columns.len();
    let position = if !col.is_empty() && col.bytes().all(|b| b.is_ascii_digit()) {
        match col.parse::<usize>() {
            Ok(n) if (1..=arity).contains(&n) => n - 1,
            _ => {
                return Err(format!(
                    "values: {rel} has {arity} argument{}; N counts from 1 to {arity}",
                    if arity == 1 { "" } else { "s" }
                ));
            }
        }
    } else {
        match r.columns.iter().position(|c| c == col) {
            Some(i) => i,
            None => {
                return Err(format!(
                    "values: {rel} has no argument \"{col}\"; name one of {}",
                    columns_hint(&r.name, &r.columns)
                ));
            }
        }
    };
    let name = &r.columns[position];
    let var = if !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        name.clone()
    } else {
        "v".to_owned()
    };
    let args: Vec<String> = (0..arity)
        .map(|i| {
            if i == position {
                format!("?{var}")
            } else {
                "_".to_owned()
            }
        })
        .collect();
    Ok(format!("{}({}) => ?{var}", r.name, args.join(", ")))
}

fn columns_hint(rel: &str, columns: &[String]) -> String {
    columns
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{rel}.{c} ({rel}.{})", i + 1))
        .collect::<Vec<_>>()
        .join(", ")
}
