//! The application's limits ([`Options`]) and how a request's own limits lower them into
//! the engine's run options: a request may ask for less, never more ([`Page`]). The memory
//! cap a server takes by default is computed from the machine ([`crate::default_max_memory`]).

use std::time::Duration;

use strata_eval::Cancel;
use strata_eval::PageToken;
use strata_eval::RunOptions;
use strata_eval::{ANSWER_BYTES, ANSWER_BYTES_MIN};

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
    /// The most bytes an answer's rendering (text or JSON) takes: a request may ask for
    /// less ([`Page::max_bytes`]), never more. Default [`ANSWER_BYTES`].
    pub max_bytes: u64,
    /// The models `ask` translates questions with; without one `ask` is not offered.
    pub ask: crate::ask::AskOptions,
    /// The most bytes one evaluation may hold (its derived relations, indexes, witnesses
    /// and a round's unmerged tuples): a request may ask for less ([`Page::max_memory`]),
    /// never more. `None`: no cap (the library's default; the command line and the server
    /// set [`crate::default_max_memory`]).
    pub max_memory: Option<u64>,
    /// The most heavy calls (query, cypher, explain, ask) that evaluate at once; the rest
    /// wait ([`Options::admission_wait`]) and are then refused ([`crate::admission`]).
    /// `None`: no gate (a command line runs one call).
    pub heavy_calls: Option<usize>,
    /// How long a heavy call waits for a slot before it is refused (never past its own
    /// deadline). Default [`crate::admission::WAIT`].
    pub admission_wait: Duration,
    /// The page cache of each of the database's files that [`App::open`] opens, in bytes
    /// (`strata_store::OpenOptions::cache_bytes`). Default `None`: sized by each file
    /// ([`strata_store::scaled_cache_bytes`]).
    pub cache_bytes: Option<usize>,
    /// The checkout directory of each repository (`strata serve --checkout REPO=DIR`), read
    /// for `context` instead of the one recorded at ingest (`source.rs`).
    pub checkouts: std::collections::BTreeMap<String, std::path::PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            limit: 100,
            max_work: None,
            timeout: Duration::from_secs(30),
            threads: None,
            max_bytes: ANSWER_BYTES,
            ask: crate::ask::AskOptions::default(),
            max_memory: None,
            heavy_calls: None,
            admission_wait: crate::admission::WAIT,
            cache_bytes: None,
            checkouts: std::collections::BTreeMap::new(),
        }
    }
}

/// What a request asks of a page: its own limits, where to continue, whether it is a try,
/// and whether rows carry their witnesses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The most rows (`None`: the application's limit; 0 is refused).
    pub limit: Option<u64>,
    /// The most work (0: the application's cap).
    pub max_work: u64,
    /// The token the previous page ended with (empty for the first page).
    pub page_token: String,
    /// A try: at most this many rows, saying which literal matched nothing (0: not a try).
    pub sample: u64,
    /// Whether each row carries the facts it was derived from.
    pub witnesses: bool,
    /// The most bytes of the answer (`None`: the application's [`Options::max_bytes`]; never
    /// more than it, never less than [`ANSWER_BYTES_MIN`]).
    pub max_bytes: Option<u64>,
    /// Answer just this row (numbered from 1, as the text numbers rows) with its whole
    /// witness, not bounded to [`strata_eval::witness::WITNESS_FACTS`] facts.
    pub witness_row: Option<u64>,
    /// The most bytes the evaluation may hold (`None`: the application's
    /// [`Options::max_memory`]; a larger value is lowered to it).
    pub max_memory: Option<u64>,
    /// Lines of source to show either side of each site the answer cites, read from the
    /// repository's checkout (0: none; at most 20).
    pub context: u32,
}

impl Default for Page {
    fn default() -> Self {
        Page {
            limit: None,
            max_work: 0,
            page_token: String::new(),
            sample: 0,
            witnesses: true,
            max_bytes: None,
            witness_row: None,
            max_memory: None,
            context: 0,
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
        max_memory: Option<u64>,
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
        r.engine.max_memory = match (max_memory, o.max_memory) {
            (None, cap) => cap,
            (Some(asked), Some(cap)) => Some(asked.min(cap)),
            (Some(asked), None) => Some(asked),
        };
        r.engine.timeout = Some(self.call_timeout(call));
        r.engine.started = call.started;
        r.engine.cancel = cancel.clone();
        r.engine.progress = call.progress.clone();
        if let Some(t) = o.threads {
            r.engine.threads = t.max(1);
        }
        r
    }

    /// A call's time limit: the application's, or the host's shorter one for the call.
    pub(crate) fn call_timeout(&self, call: &Call) -> Duration {
        let o = self.options();
        call.run.timeout.map_or(o.timeout, |t| t.min(o.timeout))
    }

    /// The run options of one page for `tool`: the request's limits lowered into the
    /// application's, the offset the page token gives (or the one row `witness_row` asks
    /// for, whole), a try's row limit, `why` for a try or when the pack has a hint, and the
    /// answer's byte budget. A limit of 0, a budget out of range, a `witness_row` of 0 or a
    /// token this application did not give is an error that says so.
    pub(crate) fn page_options(
        &self,
        call: &Call,
        tool: &'static str,
        page: &Page,
        cancel: &Cancel,
    ) -> Result<PagePlan, CallError> {
        let o = self.options();
        let token = match page.page_token.trim() {
            "" => None,
            t => Some(t.parse::<PageToken>().map_err(|_| CallError::PageToken {
                tool,
                token: t.to_owned(),
            })?),
        };
        if page.limit == Some(0) {
            return Err(CallError::ZeroLimit { tool, max: o.limit });
        }
        let max_bytes = match page.max_bytes {
            None => o.max_bytes,
            Some(asked) if (ANSWER_BYTES_MIN..=o.max_bytes).contains(&asked) => asked,
            Some(asked) => {
                return Err(CallError::MaxBytes {
                    tool,
                    asked,
                    min: ANSWER_BYTES_MIN,
                    max: o.max_bytes,
                });
            }
        };
        if page.context > crate::source::CONTEXT_MAX {
            return Err(CallError::Context {
                tool,
                asked: page.context,
                max: crate::source::CONTEXT_MAX,
            });
        }
        let context = (page.context > 0).then(|| crate::source::ContextPlan {
            lines: page.context,
            checkouts: o.checkouts.clone(),
        });
        let mut run = self.run_options(
            call,
            page.limit.unwrap_or(0),
            page.max_work,
            page.max_memory,
            cancel,
        );
        run.offset = token.map_or(0, |t| t.offset);
        if page.sample > 0 {
            run.limit = run.limit.min(page.sample);
        }
        run.why = page.sample > 0 || self.hint().is_some();
        run.engine.witnesses = page.witnesses;
        match page.witness_row {
            None => {}
            Some(0) => return Err(CallError::WitnessRow { tool }),
            Some(row) => {
                run.offset = row - 1;
                run.limit = 1;
                run.witness_facts = None;
                run.engine.witnesses = true;
            }
        }
        Ok(PagePlan {
            run,
            token,
            max_bytes,
            witness_row: page.witness_row,
            context,
        })
    }
}

/// How to answer one page: the run options, the token the request continued from, and the
/// answer's byte budget.
#[derive(Clone, Debug)]
pub(crate) struct PagePlan {
    /// The run options.
    pub(crate) run: RunOptions,
    /// The page token the request passed, parsed.
    pub(crate) token: Option<PageToken>,
    /// The most bytes the answer's rendering may take.
    pub(crate) max_bytes: u64,
    /// The row asked for with its whole witness, if one was.
    pub(crate) witness_row: Option<u64>,
    /// The source lines to show around the answer's cited sites, if asked for.
    pub(crate) context: Option<crate::source::ContextPlan>,
}

impl PagePlan {
    /// A `witness_row` past the last row of an answer of `total` rows is an error naming
    /// the count (rather than an empty page).
    pub(crate) fn check_witness_row(
        &self,
        tool: &'static str,
        total: u64,
    ) -> Result<(), CallError> {
        match self.witness_row {
            Some(row) if row > total => Err(CallError::WitnessRowPast { tool, row, total }),
            _ => Ok(()),
        }
    }
}

/// `asked` if the request asked for less than `cap` (0: did not ask), else `cap`.
pub(crate) fn lower(asked: u64, cap: u64) -> u64 {
    if asked == 0 { cap } else { asked.min(cap) }
}
