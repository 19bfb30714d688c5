//! `cypher`: a Cypher read query compiled over the graph the store's dumps and the pack's
//! `[cypher]` give, then run exactly as `query` runs a program (same base, budget,
//! witnesses and paging); the answer opens with `ran:` and the program.

use serde::Serialize;
use strata_eval::Bind;
use strata_eval::Cancel;
use strata_eval::Vocabulary;
use strata_eval::cypher;

use crate::app::App;
use crate::base::Call;
use crate::error::CallError;
use crate::options::Page;
use crate::query::{RunInfo, answered};
use crate::render::{AnswerPage, Render};

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
    /// What the run read and spent, and what to say of an empty answer.
    #[serde(flatten)]
    pub run: RunInfo,
}

impl Render for CypherResponse {
    fn text(&self) -> String {
        let mut t = format!("ran: {}\n{}", self.program, self.answer.text());
        self.run.notes(&mut t);
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
        self.lightly(call, "cypher", cancel, &|light| {
            self.cypher_run(call, r, cancel, light)
        })
    }

    /// `cypher`, once admitted (`ask` runs its tries inside its own slot).
    pub(crate) fn cypher_admitted(
        &self,
        call: &Call,
        r: &CypherRequest,
        cancel: &Cancel,
    ) -> Result<CypherResponse, CallError> {
        self.cypher_run(call, r, cancel, false)
    }

    /// Runs a Cypher query, under the light lane's limits when `light` (see
    /// [`App::lightly`]).
    fn cypher_run(
        &self,
        call: &Call,
        r: &CypherRequest,
        cancel: &Cancel,
        light: bool,
    ) -> Result<CypherResponse, CallError> {
        let mut plan = self.page_options(call, "cypher", &r.page, cancel)?;
        if light {
            crate::admission::lighten(&mut plan.run);
        }
        let check = |vocab: &Vocabulary| {
            let graph = self.graph(vocab)?;
            Ok(cypher::prepare(vocab, &graph, &r.query, &r.params)?)
        };
        let p = self.prepare_with(call, "cypher", &check, &mut || {})?;
        let out = p.query.run(p.base.source(), &plan.run)?;
        self.demand_indexes(&out.unindexed);
        plan.check_witness_row("cypher", out.answer.total)?;
        let around = [p.query.cypher.as_str(), p.query.program.as_str()];
        let (answer, run) = answered(&p, out, &plan, self.hint().as_deref(), &around);
        Ok(CypherResponse {
            run,
            cypher: p.query.cypher.clone(),
            program: p.query.program.clone(),
            answer,
        })
    }
}
