//! The `cypher` tool: a Cypher read query compiled over the graph the store's dumps and the
//! pack's `[cypher]` give, then run exactly as `query` runs a program (same base, budget,
//! witnesses and paging); the answer opens with `ran:` and the program.

use strata_eval::budget::Cancel;
use strata_eval::cypher::{self, Graph};
use strata_eval::vocab::Vocabulary;

use super::limits::Page;
use super::{Base, Call, Server, ToolOutput};
use crate::args::{self, CypherArgs};

impl Server {
    /// `cypher`: compiles a Cypher query to a program and answers a page of its rows.
    pub fn cypher(&self, a: &CypherArgs, cancel: &Cancel) -> ToolOutput {
        self.cypher_in(&Call::plain("cypher"), a, cancel)
    }

    /// The graph over `vocab`, with the pack's labels and types.
    pub(crate) fn graph(&self, vocab: &Vocabulary) -> Result<Graph, String> {
        Graph::derive(vocab, &self.inner.pack.cypher.mapping())
    }

    /// What `schema` answers at path `cypher`.
    pub(super) fn graph_schema(&self, vocab: &Vocabulary) -> ToolOutput {
        match self.graph(vocab) {
            Ok(g) => ToolOutput::text(g.describe()),
            Err(e) => ToolOutput::error(e),
        }
    }

    pub(crate) fn cypher_in(&self, call: &Call, a: &CypherArgs, cancel: &Cancel) -> ToolOutput {
        match self.cypher_answer(call, a, cancel) {
            Ok(out) => out,
            Err(e) => ToolOutput::error(e),
        }
    }

    fn cypher_answer(
        &self,
        call: &Call,
        a: &CypherArgs,
        cancel: &Cancel,
    ) -> Result<ToolOutput, String> {
        let params = args::binds("cypher", &a.params)?;
        let page = Page {
            limit: a.limit,
            max_work: a.max_work,
            page_token: &a.page_token,
            sample: a.sample,
        };
        let options = self.page_options(call, "cypher", page, cancel)?;
        let vocab = self.call_vocabulary(call, "cypher")?;
        let graph = self.graph(&vocab)?;
        let q = cypher::prepare(&vocab, &graph, &a.query, &params).map_err(|e| e.to_string())?;
        let (base, tiers) = self.call_base(call, "cypher", q.base_relations())?;
        let hint = self.inner.pack.hint.trim();
        let out = q.run(base.source(), &options).map_err(|e| e.to_string())?;
        let mut j = q.json(&out);
        if let Some(s) = base.snapshot_json() {
            j["snapshot"] = s;
        }
        j["work"] = out.work.into();
        if let Base::Store(_) = base {
            j["tiers"] = serde_json::json!(tiers);
        }
        let mut notes = String::new();
        if let Some(why) = &out.why {
            j["why"] = format!("{why} matched nothing").into();
            notes.push_str(&format!("\nwhy: {why} matched nothing"));
        }
        if out.answer.total == 0 && !hint.is_empty() {
            j["hint"] = hint.into();
            notes.push_str(&format!("\nhint: {hint}"));
        }
        let text = if a.json {
            serde_json::to_string_pretty(&j).unwrap_or_default()
        } else {
            format!("{}{notes}", q.text(&out))
        };
        Ok(ToolOutput {
            text,
            structured: Some(j),
            is_error: false,
        })
    }
}
