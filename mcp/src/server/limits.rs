//! The server's limits ([`Options`]) and how a call's own limits lower them into the
//! engine's run options: a call may ask for less, never more.

use std::time::Duration;

use strata_eval::budget::Cancel;
use strata_eval::query::RunOptions;

use super::{Call, Server};

/// The server's limits: a call may ask for less, never more.
#[derive(Clone, Debug)]
pub struct Options {
    /// The most rows a call answers.
    pub limit: u64,
    /// The most work (candidate tuples examined) a call may spend; `None`: no cap.
    pub max_work: Option<u64>,
    /// The longest a call may take.
    pub timeout: Duration,
    /// Worker threads per evaluation (`None`: the engine's default).
    pub threads: Option<usize>,
    /// The models `ask` translates questions with; without one the tool is not listed.
    pub ask: crate::ask::AskOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            limit: 100,
            max_work: None,
            timeout: Duration::from_secs(30),
            threads: None,
            ask: crate::ask::AskOptions::default(),
        }
    }
}

impl Server {
    /// The run options of a call: the server's limits, lowered by the call's.
    pub(super) fn run_options(
        &self,
        call: &Call,
        limit: u64,
        max_work: u64,
        cancel: &Cancel,
    ) -> RunOptions {
        let o = &self.inner.options;
        let mut r = RunOptions {
            limit: lower(limit, o.limit),
            ..RunOptions::default()
        };
        r.engine.max_work = match (max_work, o.max_work) {
            (0, cap) => cap,
            (asked, Some(cap)) => Some(asked.min(cap)),
            (asked, None) => Some(asked),
        };
        r.engine.timeout = Some(call.run.timeout.map_or(o.timeout, |t| t.min(o.timeout)));
        r.engine.cancel = cancel.clone();
        if let Some(t) = o.threads {
            r.engine.threads = t.max(1);
        }
        r
    }
}

/// What a call asks of a page: its own limits, where to continue, and whether it is a try.
pub(super) struct Page<'a> {
    /// The most rows (0: the server's limit).
    pub(super) limit: u64,
    /// The most work (0: the server's cap).
    pub(super) max_work: u64,
    /// The token the previous page ended with ("" for the first page).
    pub(super) page_token: &'a str,
    /// A try: at most this many rows, saying which literal matched nothing (0: not a try).
    pub(super) sample: u64,
}

impl Server {
    /// The run options of one page for `tool`: the call's limits lowered into the server's,
    /// the offset the page token gives, a try's row limit, and `why` for a try or when the
    /// pack has a hint. A token this server did not give is an error that says so.
    pub(super) fn page_options(
        &self,
        call: &Call,
        tool: &str,
        page: Page<'_>,
        cancel: &Cancel,
    ) -> Result<RunOptions, String> {
        let offset = match page.page_token.trim() {
            "" => 0,
            t => t.parse::<u64>().map_err(|_| {
                format!(
                    "{tool}: page_token \"{t}\" is not one this server gave; pass the \
                     page_token the last page ended with, or none for the first page"
                )
            })?,
        };
        let mut options = self.run_options(call, page.limit, page.max_work, cancel);
        options.offset = offset;
        if page.sample > 0 {
            options.limit = options.limit.min(page.sample);
        }
        options.why = page.sample > 0 || !self.inner.pack.hint.trim().is_empty();
        Ok(options)
    }
}

/// `asked` if the call asked for less than `cap` (0: did not ask), else `cap`.
pub(super) fn lower(asked: u64, cap: u64) -> u64 {
    if asked == 0 { cap } else { asked.min(cap) }
}
