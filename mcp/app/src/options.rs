//! The application's limits ([`Options`]) and how a request's own limits lower them into
//! the engine's run options: a request may ask for less, never more ([`Page`]).

use std::time::Duration;

use strata_eval::Cancel;
use strata_eval::RunOptions;

use crate::app::App;
use crate::base::Call;
use crate::error::CallError;

/// The application's limits: a request may ask for less, never more.
#[derive(Clone, Debug)]
pub struct Options {
    /// The most rows a request answers.
    pub limit: u64,
    /// The most work (candidate tuples examined) a request may spend; `None`: no cap.
    pub max_work: Option<u64>,
    /// The longest a request's evaluation may take.
    pub timeout: Duration,
    /// Worker threads per evaluation (`None`: the engine's default).
    pub threads: Option<usize>,
    /// The models `ask` translates questions with; without one `ask` is not offered.
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

/// What a request asks of a page: its own limits, where to continue, whether it is a try,
/// and whether rows carry their witnesses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The most rows (0: the application's limit).
    pub limit: u64,
    /// The most work (0: the application's cap).
    pub max_work: u64,
    /// The token the previous page ended with (empty for the first page).
    pub page_token: String,
    /// A try: at most this many rows, saying which literal matched nothing (0: not a try).
    pub sample: u64,
    /// Whether each row carries the facts it was derived from.
    pub witnesses: bool,
}

impl Default for Page {
    fn default() -> Self {
        Page {
            limit: 0,
            max_work: 0,
            page_token: String::new(),
            sample: 0,
            witnesses: true,
        }
    }
}

impl App {
    /// The run options of a request: the application's limits, lowered by the request's.
    pub(crate) fn run_options(
        &self,
        call: &Call,
        limit: u64,
        max_work: u64,
        cancel: &Cancel,
    ) -> RunOptions {
        let o = self.options();
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
        r.engine.started = call.started;
        r.engine.cancel = cancel.clone();
        if let Some(t) = o.threads {
            r.engine.threads = t.max(1);
        }
        r
    }

    /// The run options of one page for `tool`: the request's limits lowered into the
    /// application's, the offset the page token gives, a try's row limit, and `why` for a
    /// try or when the pack has a hint. A token this application did not give is an error
    /// that says so.
    pub(crate) fn page_options(
        &self,
        call: &Call,
        tool: &'static str,
        page: &Page,
        cancel: &Cancel,
    ) -> Result<RunOptions, CallError> {
        let offset = match page.page_token.trim() {
            "" => 0,
            t => t.parse::<u64>().map_err(|_| CallError::PageToken {
                tool,
                token: t.to_owned(),
            })?,
        };
        let mut options = self.run_options(call, page.limit, page.max_work, cancel);
        options.offset = offset;
        if page.sample > 0 {
            options.limit = options.limit.min(page.sample);
        }
        options.why = page.sample > 0 || self.hint().is_some();
        options.engine.witnesses = page.witnesses;
        Ok(options)
    }
}

/// `asked` if the request asked for less than `cap` (0: did not ask), else `cap`.
pub(crate) fn lower(asked: u64, cap: u64) -> u64 {
    if asked == 0 { cap } else { asked.min(cap) }
}
