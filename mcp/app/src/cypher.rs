//! `cypher`: a Cypher read query compiled over the graph the store's dumps and the pack's
//! `[cypher]` give, then run exactly as `query` runs a program (same base, budget,
//! witnesses and paging); the answer opens with `ran:` and the program.

use serde::Serialize;
use strata_eval::Bind;
use strata_eval::Vocabulary;
use strata_eval::budget::Cancel;
use strata_eval::cypher;

use crate::app::App;
use crate::base::Call;
use crate::error::CallError;
use crate::options::Page;
use crate::render::{AnswerPage, Render, SnapshotInfo, notes};

/// A Cypher read query to run.
#[derive(Clone, Debug, PartialEq)]
pub struct CypherRequest {
    /// The query, e.g. `MATCH (p:Package) RETURN p.name`.
    pub query: String,
    /// Values for its `$parameters`, by name (without the `$`).
    pub params: Vec<(String, Bind)>,
    /// The page asked for.
    pub page: Page,
}

/// A page of a Cypher query's rows: `query`'s response with the Cypher text and the
/// program it compiled to.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CypherResponse {
    /// The Cypher text.
    pub cypher: String,
    /// The program it compiled to.
    pub program: String,
    /// The rows of the page, the total and the token to continue with.
    #[serde(flatten)]
    pub answer: AnswerPage,
    /// The snapshot read (none for a host's base).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<SnapshotInfo>,
    /// The work spent (candidate tuples examined).
    pub work: u64,
    /// The tiers opened (none for a host's base).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<String>>,
    /// For an empty try: `X matched nothing`, X the first literal that matched nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The pack's hint, after an empty answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Render for CypherResponse {
    fn text(&self) -> String {
        let mut t = format!("ran: {}\n{}", self.program, self.answer.0.text());
        notes(&mut t, self.why.as_deref(), self.hint.as_deref());
        t
    }
}

impl App {
    /// `cypher`: compiles a Cypher query to a program and answers a page of its rows.
    pub fn cypher(
        &self,
        call: &Call,
        r: &CypherRequest,
        cancel: &Cancel,
    ) -> Result<CypherResponse, CallError> {
        let options = self.page_options(call, "cypher", &r.page, cancel)?;
        let check = |vocab: &Vocabulary| {
            let graph = self.graph(vocab)?;
            Ok(cypher::prepare(vocab, &graph, &r.query, &r.params)?)
        };
        let p = self.prepare_with(call, "cypher", &check, &mut || {})?;
        let out = p.query.run(p.base.source(), &options)?;
        let empty = out.answer.total == 0;
        let tiers = p.store_tiers();
        let q = p.query;
        Ok(CypherResponse {
            tiers,
            snapshot: p.base.snapshot(),
            work: out.work,
            why: out.why.map(|w| format!("{w} matched nothing")),
            hint: self.hint().filter(|_| empty).map(str::to_owned),
            cypher: q.cypher,
            program: q.program,
            answer: AnswerPage(out.answer),
        })
    }
}
