//! `query` and `explain`: a program prepared on its base and run within the request's
//! limits, answering a page of rows with their witnesses ([`QueryResponse`]), or where its
//! work went ([`ExplainResponse`]).

use serde::Serialize;
use strata_eval::Bind;
use strata_eval::Cancel;
use strata_eval::Outcome;
use strata_eval::Report;

use crate::app::App;
use crate::base::{Call, Prepared};
use crate::error::CallError;
use crate::options::{Page, PagePlan};
use crate::render::{AnswerPage, Render, SnapshotInfo, notes};

/// A program to run: rules, if any, then one goal.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryRequest {
    /// The program, e.g. `deps.depends_on("app", ?d) => ?d`.
    pub program: String,
    /// Values for its variables, by name.
    pub binds: Vec<(String, Bind)>,
    /// The page asked for.
    pub page: Page,
}

/// A page of a program's rows, with their witnesses and what was read.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueryResponse {
    /// The rows of the page, the total and the token to continue with.
    #[serde(flatten)]
    pub answer: AnswerPage,
    /// What the run read and spent, and what to say of an empty answer.
    #[serde(flatten)]
    pub run: RunInfo,
}

/// What a run read (the snapshot and its tiers) and spent, and what to say of an empty
/// answer (`why` for a try, the pack's `hint`): the part `query` and `cypher` answer
/// alike.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RunInfo {
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
    /// When the page token named another snapshot than the one this page read: the data
    /// changed between pages, so rows may repeat or be missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_changed: Option<String>,
    /// For each module the program uses that does not load (its last good version
    /// answered): its file, its error, line and caret.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub modules_refused: Vec<String>,
    /// For each stored relation the run read whole because no index served a lookup by
    /// the columns it bound: which, and the `strata index` that builds one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub read_whole: Vec<String>,
}

impl RunInfo {
    /// What `out` read on `p`'s base and spent, with the `hint` for an empty answer.
    pub(crate) fn of<Q>(p: &Prepared<Q>, out: &Outcome, hint: Option<&str>) -> RunInfo {
        RunInfo {
            snapshot: p.base.snapshot(),
            work: out.work,
            tiers: p.store_tiers(),
            why: out.why.as_ref().map(|w| format!("{w} matched nothing")),
            hint: hint.filter(|_| out.answer.total == 0).map(str::to_owned),
            data_changed: None,
            modules_refused: p.refused.clone(),
            read_whole: out
                .unindexed
                .iter()
                .map(|(rel, cols)| read_whole(p.base.source(), rel, cols))
                .collect(),
        }
    }

    /// `why:`, `hint:` and `note:` lines after an answer's text.
    pub(crate) fn notes(&self, text: &mut String) {
        notes(text, self.why.as_deref(), self.hint.as_deref());
        if let Some(changed) = &self.data_changed {
            text.push_str("\nnote: ");
            text.push_str(changed);
        }
        for refused in &self.modules_refused {
            text.push_str("\nnote: ");
            text.push_str(refused);
        }
        for read in &self.read_whole {
            text.push_str("\nnote: ");
            text.push_str(read);
        }
    }
}

/// The note for relation `rel` read whole for a lookup by its columns `cols` (positions),
/// none of which has postings: `e was read whole, as c2 has no index (`strata index DB
/// e=c1,c2` builds one)`. A server builds it by itself when the relation keeps the column
/// on demand (`demand`).
fn read_whole(source: &dyn strata_eval::FactSource, rel: &str, cols: &[usize]) -> String {
    let Ok(Some(info)) = source.relation(rel) else {
        return format!("{rel} was read whole, as the columns looked up have no index");
    };
    let name = |c: &usize| {
        info.columns
            .get(*c)
            .cloned()
            .unwrap_or_else(|| format!("#{c}"))
    };
    let wanted: Vec<String> = cols.iter().map(name).collect();
    let indexed: Vec<String> = (0..info.arity())
        .filter(|c| info.indexed(*c) || cols.contains(c))
        .map(|c| name(&c))
        .collect();
    let (has, one) = if wanted.len() == 1 {
        ("has", "one")
    } else {
        ("have", "them")
    };
    format!(
        "{rel} was read whole, as {} {has} no index (`strata index DB {rel}={}` builds {one})",
        wanted.join(" and "),
        indexed.join(",")
    )
}

/// The page of `out` as a response answers it, with what its run read and spent: the
/// answer's page token names the snapshot read, the page is fitted to the plan's byte
/// budget less what `around` (the response's other parts) takes, and when the request's
/// token named another snapshot, a note says the data changed.
pub(crate) fn answered<Q>(
    p: &Prepared<Q>,
    mut out: Outcome,
    plan: &PagePlan,
    hint: Option<&str>,
    around: &[&str],
) -> (AnswerPage, RunInfo) {
    let mut run = RunInfo::of(p, &out, hint);
    let seq = run.snapshot.as_ref().map(|s| s.seq);
    out.answer.snapshot = seq;
    if let Some(token) = plan.token
        && !token.same_snapshot(seq)
    {
        let named = token.snapshot.unwrap_or(1);
        run.data_changed = Some(match seq {
            Some(now) => format!(
                "the data changed since page_token \"{token}\" was given: it names snapshot \
                 {named}, this page read snapshot {now}, so rows may repeat or be missing; \
                 leave out page_token to start again"
            ),
            None => format!(
                "page_token \"{token}\" names snapshot {named}, and this base has no \
                 snapshots: rows may repeat or be missing"
            ),
        });
    }
    let mut page = AnswerPage::new(out.answer, plan.max_bytes, &(&run, around));
    page.name_symbols(p.base.source());
    if let Some(c) = &plan.context {
        page.show_context(p.base.source(), c);
    }
    (page, run)
}

impl Render for QueryResponse {
    fn text(&self) -> String {
        let mut t = self.answer.text();
        self.run.notes(&mut t);
        t
    }
}

/// A program to run and report on.
#[derive(Clone, Debug, PartialEq)]
pub struct ExplainRequest {
    /// The program.
    pub program: String,
    /// Values for its variables, by name.
    pub binds: Vec<(String, Bind)>,
    /// The most work to spend (0: the application's cap).
    pub max_work: u64,
    /// The most bytes the evaluation may hold (`None`: the application's cap; never more).
    pub max_memory: Option<u64>,
}

/// Where a program's work went.
#[derive(Clone, Debug, PartialEq)]
pub struct ExplainResponse {
    /// The engine's report, with the tiers opened.
    pub report: Report,
    /// The snapshot read (none for a host's base).
    pub snapshot: Option<SnapshotInfo>,
    /// The pack's hint, after an empty answer.
    pub hint: Option<String>,
}

impl Serialize for ExplainResponse {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let serde_json::Value::Object(report) = self.report.json() else {
            return Err(serde::ser::Error::custom("the report is not a JSON object"));
        };
        let mut m = s.serialize_map(None)?;
        for (k, v) in &report {
            m.serialize_entry(k, v)?;
        }
        if let Some(snap) = &self.snapshot {
            m.serialize_entry("snapshot", snap)?;
        }
        if let Some(hint) = &self.hint {
            m.serialize_entry("hint", hint)?;
        }
        m.end()
    }
}

impl Render for ExplainResponse {
    fn text(&self) -> String {
        let mut t = self.report.text();
        notes(&mut t, None, self.hint.as_deref());
        t
    }
}

impl App {
    /// `query`: runs a program and answers a page of rows with their witnesses.
    pub fn query(
        &self,
        call: &Call,
        r: &QueryRequest,
        cancel: &Cancel,
    ) -> Result<QueryResponse, CallError> {
        self.lightly(call, "query", cancel, &|light| {
            self.query_run(call, r, cancel, light)
        })
    }

    /// `query`, once admitted (`ask` runs its tries inside its own slot).
    pub(crate) fn query_admitted(
        &self,
        call: &Call,
        r: &QueryRequest,
        cancel: &Cancel,
    ) -> Result<QueryResponse, CallError> {
        self.query_run(call, r, cancel, false)
    }

    /// Runs a query, under the light lane's limits when `light` (see [`App::lightly`]).
    fn query_run(
        &self,
        call: &Call,
        r: &QueryRequest,
        cancel: &Cancel,
        light: bool,
    ) -> Result<QueryResponse, CallError> {
        let mut plan = self.page_options(call, "query", &r.page, cancel)?;
        if light {
            crate::admission::lighten(&mut plan.run);
        }
        let p = self.prepare(call, "query", &r.program, &r.binds)?;
        let out = p.query.run(p.base.source(), &plan.run)?;
        self.demand_indexes(&out.unindexed);
        plan.check_witness_row("query", out.answer.total)?;
        let (answer, run) = answered(&p, out, &plan, self.hint().as_deref(), &[]);
        Ok(QueryResponse { answer, run })
    }

    /// `explain`: runs a program and answers where its work went.
    pub fn explain(
        &self,
        call: &Call,
        r: &ExplainRequest,
        cancel: &Cancel,
    ) -> Result<ExplainResponse, CallError> {
        let _slot = self.admit(call, "explain", cancel)?;
        let p = self.prepare(call, "explain", &r.program, &r.binds)?;
        let options = self.run_options(call, 0, r.max_work, r.max_memory, cancel);
        let mut report = p.query.explain(p.base.source(), &options)?;
        report.tiers = p.tiers.clone();
        let hint = self.hint().filter(|_| report.rows == 0);
        Ok(ExplainResponse {
            report,
            snapshot: p.base.snapshot(),
            hint,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::read_whole;
    use strata_eval::MemorySource;

    #[test]
    fn the_read_whole_note_names_the_columns_and_the_index_that_serves_them() {
        let mut s = MemorySource::new();
        s.add_relation("t", &["a", "b", "c", "d"]);
        s.set_unindexed("t", &[1, 2, 3]);
        assert_eq!(
            read_whole(&s, "t", &[2]),
            "t was read whole, as c has no index (`strata index DB t=a,c` builds one)"
        );
        assert_eq!(
            read_whole(&s, "t", &[1, 3]),
            "t was read whole, as b and d have no index (`strata index DB t=a,b,d` builds \
             them)"
        );
        assert_eq!(
            read_whole(&s, "gone", &[1]),
            "gone was read whole, as the columns looked up have no index"
        );
    }
}
