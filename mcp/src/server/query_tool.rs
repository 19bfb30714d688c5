//! The `query` and `explain` tools: a program prepared on its base and run within the
//! call's limits, answering a page of rows with their witnesses, or where its work went.

use strata_eval::budget::Cancel;

use super::limits::Page;
use super::{Base, Call, Server, ToolOutput, query_error};
use crate::args::{self, ExplainArgs, QueryArgs};

impl Server {
    /// `query`: runs a program and answers a page of rows with their witnesses.
    pub fn query(&self, a: &QueryArgs, cancel: &Cancel) -> ToolOutput {
        self.query_in(&Call::plain("query"), a, cancel)
    }

    pub(crate) fn query_in(&self, call: &Call, a: &QueryArgs, cancel: &Cancel) -> ToolOutput {
        let binds = match args::binds("query", &a.bind) {
            Ok(b) => b,
            Err(e) => return ToolOutput::error(e),
        };
        let page = Page {
            limit: a.limit,
            max_work: a.max_work,
            page_token: &a.page_token,
            sample: a.sample,
        };
        let options = match self.page_options(call, "query", page, cancel) {
            Ok(o) => o,
            Err(e) => return ToolOutput::error(e),
        };
        let p = match self.prepare(call, "query", &a.program, &binds) {
            Ok(p) => p,
            Err(e) => return ToolOutput::error(e),
        };
        let hint = self.inner.pack.hint.trim();
        let out = match p.query.run(p.base.source(), &options) {
            Ok(o) => o,
            Err(e) => return ToolOutput::error(query_error(e)),
        };
        let mut j = out.answer.json();
        if let Some(s) = p.base.snapshot_json() {
            j["snapshot"] = s;
        }
        j["work"] = out.work.into();
        if let Base::Store(_) = p.base {
            j["tiers"] = serde_json::json!(p.tiers);
        }
        if let Some(why) = &out.why {
            j["why"] = format!("{why} matched nothing").into();
        }
        let empty = out.answer.total == 0;
        if empty && !hint.is_empty() {
            j["hint"] = hint.into();
        }
        let text = if a.json {
            serde_json::to_string_pretty(&j).unwrap_or_default()
        } else {
            let mut t = out.answer.text();
            if let Some(why) = &out.why {
                t.push_str(&format!("\nwhy: {why} matched nothing"));
            }
            if empty && !hint.is_empty() {
                t.push_str(&format!("\nhint: {hint}"));
            }
            t
        };
        ToolOutput {
            text,
            structured: Some(j),
            is_error: false,
        }
    }

    /// `explain`: runs a program and answers where its work went.
    pub fn explain(&self, a: &ExplainArgs, cancel: &Cancel) -> ToolOutput {
        self.explain_in(&Call::plain("explain"), a, cancel)
    }

    pub(super) fn explain_in(&self, call: &Call, a: &ExplainArgs, cancel: &Cancel) -> ToolOutput {
        let binds = match args::binds("explain", &a.bind) {
            Ok(b) => b,
            Err(e) => return ToolOutput::error(e),
        };
        let p = match self.prepare(call, "explain", &a.program, &binds) {
            Ok(p) => p,
            Err(e) => return ToolOutput::error(e),
        };
        let options = self.run_options(call, 0, a.max_work, cancel);
        let mut report = match p.query.explain(p.base.source(), &options) {
            Ok(r) => r,
            Err(e) => return ToolOutput::error(query_error(e)),
        };
        report.tiers = p.tiers.clone();
        let mut j = report.json();
        if let Some(s) = p.base.snapshot_json() {
            j["snapshot"] = s;
        }
        let mut text = report.text();
        let hint = self.inner.pack.hint.trim();
        if report.rows == 0 && !hint.is_empty() {
            text.push_str(&format!("\nhint: {hint}"));
            j["hint"] = hint.into();
        }
        ToolOutput {
            text,
            structured: Some(j),
            is_error: false,
        }
    }
}
