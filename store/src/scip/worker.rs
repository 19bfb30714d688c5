//! The decoding workers: [`WORKERS`] threads beside the one that frames an index and writes
//! its facts. Each checks and decodes the documents (and external symbols) the reader hands
//! it and gathers their facts into a [`FactGroup`] each, which go back to the reader in the
//! order the index holds them. Documents are handed over in batches of about
//! [`BATCH_BYTES`] (each batch to the worker with the fewest on their way), so that a thread
//! waits and is woken once a batch, not once a document; at most [`DEPTH`] batches are on
//! their way at a time, so memory stays bounded by a few batches, not by the index.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender};

use protobuf::{Message, MessageFull};
use rustc_hash::FxHashSet;
use scip::types::{Document, SymbolInformation};

use super::checkout::{self, Checkout, SourceCounts};
use super::error::{Place, Problem, ScipError};
use super::facts::Emitter;
use super::fresh::SkippedDocument;
use super::{DOCUMENT_FIELDS, decode, fresh, repair, wire};
use crate::dump::{FactGroup, FactSink};
use crate::error::IngestError;

/// How many batches may be handed to the workers and not yet written.
const DEPTH: usize = 8;

/// A batch is handed to a worker once its fields' bytes reach this many.
const BATCH_BYTES: usize = 1 << 16;

/// How many threads decode: decoding is most of the reading, and the reader (framing,
/// interning) needs about a third of one thread, so two keep a two-core machine busy.
const WORKERS: usize = 2;

/// What the worker reads: a top-level field's bytes.
pub(super) struct Work {
    /// What the bytes are.
    pub(super) what: Field,
    /// The number of the document or external symbol among its kind, from 1.
    pub(super) number: u64,
    /// The repository its paths are qualified by, or why none is known.
    pub(super) repo: Result<String, Problem>,
    /// Where the repository's source files are read from, if anywhere.
    pub(super) checkout: Option<Arc<Checkout>>,
    /// The bytes.
    pub(super) payload: Vec<u8>,
    /// Where the index was read up to, for progress.
    pub(super) offset: u64,
    /// A group to gather into (emptied first).
    pub(super) group: FactGroup,
}

/// The kind of field a [`Work`] holds.
pub(super) enum Field {
    /// A document, with its unit's path and hashes when the reader computed them.
    Document {
        /// Its path (`REPO/relative_path`, normalized).
        path: Option<String>,
        /// Its hashes.
        hash: Option<Hashed>,
    },
    /// An external symbol.
    External,
}

/// A document's hashes, as a replacing read computes them before deciding to decode it.
pub(crate) struct Hashed {
    /// Its `document_hash`.
    pub(crate) document: String,
    /// Its source file's content hash, when the file was read from the checkout.
    pub(crate) source: Option<String>,
}

/// What the worker answers for one [`Work`]: its facts (in `group`), the document it left
/// out, or what is wrong with its bytes; and how many of its strings it repaired.
struct Done {
    result: Result<Option<SkippedDocument>, ScipError>,
    /// Whether it is a document's (not an external symbol's).
    document: bool,
    repaired: u64,
    /// Whether the worker hashed the document's source file (`None`: it did not try).
    sourced: Option<bool>,
    payload: Vec<u8>,
    offset: u64,
    group: FactGroup,
}

/// Runs the worker until the reader hangs up.
fn run(file: &str, work: Receiver<Vec<Work>>, done: Sender<Vec<Done>>) {
    let mut emit = Emitter::default();
    // Decoded into again and again, so that its lists keep their room.
    let mut doc = Document::new();
    for batch in work {
        let mut answers = Vec::with_capacity(batch.len());
        for mut w in batch {
            let mut repaired = 0;
            let mut sourced = None;
            let is_document = matches!(w.what, Field::Document { .. });
            let result = match std::mem::replace(&mut w.what, Field::External) {
                Field::Document { path, hash } => document(
                    file,
                    &mut emit,
                    &mut doc,
                    &mut w,
                    (path, hash),
                    (&mut repaired, &mut sourced),
                ),
                Field::External => external(file, &mut emit, &mut w, &mut repaired).map(|()| None),
            };
            answers.push(Done {
                result,
                document: is_document,
                repaired,
                sourced,
                payload: w.payload,
                offset: w.offset,
                group: w.group,
            });
        }
        if done.send(answers).is_err() {
            return;
        }
    }
}

/// Decodes a document (repairing its strings if it must) and gathers its facts into the
/// work's group; answers the document left out when its path names no unit or its
/// positions are out of range. Counts the strings repaired and whether it hashed the
/// source file.
fn document(
    file: &str,
    emit: &mut Emitter,
    doc: &mut Document,
    w: &mut Work,
    (path, hash): (Option<String>, Option<Hashed>),
    (repaired, sourced): (&mut u64, &mut Option<bool>),
) -> Result<Option<SkippedDocument>, ScipError> {
    let bytes = &w.payload;
    let err = |problem: Problem| ScipError::Document {
        file: file.to_owned(),
        number: w.number,
        path: wire::peek_string(bytes, 1).unwrap_or_else(|| "no path".to_owned()),
        problem,
    };
    wire::check_fields(bytes, DOCUMENT_FIELDS).map_err(err)?;
    doc.clear();
    if let Err(cause) = doc.merge_from_bytes(bytes) {
        let Some((fixed, n)) = repair::repair(bytes, &Document::descriptor()) else {
            return Err(err(decode("Document", cause)));
        };
        doc.clear();
        doc.merge_from_bytes(&fixed)
            .map_err(|_| err(decode("Document", cause)))?;
        *repaired += n;
    }
    let repo = match std::mem::replace(&mut w.repo, Err(Problem::NoRepository)) {
        Ok(repo) => repo,
        Err(problem) => return Err(err(problem)),
    };
    let skipped = |why: String| {
        Ok(Some(SkippedDocument {
            number: w.number,
            path: doc.relative_path.clone(),
            why,
        }))
    };
    let path = match path {
        Some(path) => path,
        None => match super::unit_path(&repo, &doc.relative_path) {
            Ok(path) => path,
            Err(why) => return skipped(why.to_owned()),
        },
    };
    if let Some(why) = super::facts::out_of_range(doc) {
        return skipped(why);
    }
    let hash = match hash {
        Some(h) => h,
        None => {
            let source = w.checkout.as_ref().and_then(|c| {
                let s = super::source_of(c, &repo, &path);
                *sourced = Some(s.is_some());
                s
            });
            Hashed {
                document: checkout::document_hash(
                    fresh::content_hash(&path, bytes),
                    source.as_deref(),
                ),
                source,
            }
        }
    };
    emit.document(
        &mut w.group,
        doc,
        &path,
        (&hash.document, hash.source.as_deref()),
        w.number,
    );
    Ok(None)
}

/// Decodes an external symbol (repairing its strings if it must) and gathers its facts.
fn external(
    file: &str,
    emit: &mut Emitter,
    w: &mut Work,
    repaired: &mut u64,
) -> Result<(), ScipError> {
    let place = Place::ExternalSymbol(w.number);
    let problem = |problem| ScipError::Index {
        file: file.to_owned(),
        place,
        problem,
    };
    let info = match SymbolInformation::parse_from_bytes(&w.payload) {
        Ok(info) => info,
        Err(cause) => {
            let Some((fixed, n)) = repair::repair(&w.payload, &SymbolInformation::descriptor())
            else {
                return Err(problem(decode("SymbolInformation", cause)));
            };
            let info = SymbolInformation::parse_from_bytes(&fixed)
                .map_err(|_| problem(decode("SymbolInformation", cause)))?;
            *repaired += n;
            info
        }
    };
    let repo = match std::mem::replace(&mut w.repo, Err(Problem::NoRepository)) {
        Ok(repo) => repo,
        Err(p) => return Err(problem(p)),
    };
    emit.external(&mut w.group, &info, &repo, w.number);
    Ok(())
}

/// Where a worker's answers come back, a batch at a time.
type Answers = Receiver<Vec<Done>>;

/// The reader's end of the workers: hands them work and writes what comes back into a sink,
/// in order.
pub(super) struct Pipe<'k> {
    sink: &'k mut dyn FactSink,
    /// Each worker's queue and answers (a worker answers in the order it was handed work).
    workers: Vec<(Sender<Vec<Work>>, Answers)>,
    /// The batch being gathered, and its fields' bytes.
    batch: Vec<Work>,
    batch_bytes: usize,
    /// The worker of each batch on its way, in the order handed over; how many each has.
    route: VecDeque<usize>,
    load: [usize; WORKERS],
    in_flight: usize,
    payloads: Vec<Vec<u8>>,
    groups: Vec<FactGroup>,
    relations: std::sync::Arc<[crate::dump::GroupRelation]>,
    /// Facts written so far.
    pub(super) facts: u64,
    /// Strings repaired so far.
    pub(super) repaired: u64,
    /// Documents left out so far.
    pub(super) skipped: Vec<SkippedDocument>,
    /// Whether to gather [`Pipe::written`].
    track: bool,
    /// The paths of the documents whose facts were written (gathered when `track`).
    pub(super) written: FxHashSet<String>,
    /// Where the repository's source files are read from, handed to each document's work.
    pub(super) checkout: Option<Arc<Checkout>>,
    /// The source files the workers hashed so far.
    pub(super) sources: SourceCounts,
}

impl<'k> Pipe<'k> {
    /// Starts the workers in `scope` for the index `file`, writing into `sink`; `track`
    /// gathers the paths of the documents written.
    pub(super) fn start<'scope>(
        scope: &'scope std::thread::Scope<'scope, '_>,
        file: String,
        sink: &'k mut dyn FactSink,
        track: bool,
    ) -> Pipe<'k> {
        let workers = (0..WORKERS)
            .map(|_| {
                let (work, work_rx) = std::sync::mpsc::channel();
                let (done_tx, done) = std::sync::mpsc::channel();
                let file = file.clone();
                scope.spawn(move || run(&file, work_rx, done_tx));
                (work, done)
            })
            .collect();
        Pipe {
            sink,
            workers,
            batch: Vec::new(),
            batch_bytes: 0,
            route: VecDeque::new(),
            load: [0; WORKERS],
            in_flight: 0,
            payloads: Vec::new(),
            groups: Vec::new(),
            relations: super::facts::group_relations(),
            facts: 0,
            repaired: 0,
            skipped: Vec::new(),
            track,
            written: FxHashSet::default(),
            checkout: None,
            sources: SourceCounts::default(),
        }
    }

    /// The sink facts are written into.
    pub(super) fn sink(&mut self) -> &mut dyn FactSink {
        self.sink
    }

    /// A buffer for the next field's bytes (one a worker is done with, when there is one).
    pub(super) fn buffer(&mut self) -> Vec<u8> {
        self.payloads.pop().unwrap_or_default()
    }

    /// Gives back a buffer that was not handed to a worker.
    pub(super) fn give_back(&mut self, buffer: Vec<u8>) {
        self.payloads.push(buffer);
    }

    /// Adds a field's bytes to the batch for the workers, which is handed over once full
    /// (writing what the workers answered for earlier batches).
    pub(super) fn send(
        &mut self,
        what: Field,
        number: u64,
        repo: Result<String, Problem>,
        payload: Vec<u8>,
        offset: u64,
    ) -> Result<(), IngestError> {
        let group = self
            .groups
            .pop()
            .unwrap_or_else(|| FactGroup::new(self.relations.clone()));
        self.batch_bytes += payload.len();
        self.batch.push(Work {
            what,
            number,
            repo,
            checkout: self.checkout.clone(),
            payload,
            offset,
            group,
        });
        if self.batch_bytes >= BATCH_BYTES {
            self.dispatch()?;
        }
        Ok(())
    }

    /// Hands the batch gathered to the worker with the fewest on their way (without
    /// waiting); answers whether it was handed over.
    fn hand_over(&mut self) -> bool {
        if self.batch.is_empty() {
            return false;
        }
        self.batch_bytes = 0;
        let batch = std::mem::take(&mut self.batch);
        let to = (0..WORKERS).min_by_key(|&i| self.load[i]).unwrap_or(0);
        if self.workers[to].0.send(batch).is_err() {
            // The worker stopped: only a panic stops one early, and the scope passes it on.
            return false;
        }
        self.route.push_back(to);
        self.load[to] += 1;
        self.in_flight += 1;
        true
    }

    /// Hands the batch gathered to a worker; writes what the workers answered for earlier
    /// ones.
    fn dispatch(&mut self) -> Result<(), IngestError> {
        if !self.hand_over() {
            return Ok(());
        }
        while self.in_flight >= DEPTH {
            self.wait()?;
        }
        while self.in_flight > 0 {
            match self.done().try_recv() {
                Ok(d) => self.write(d)?,
                Err(_) => break,
            }
        }
        Ok(())
    }

    /// The answers of the worker the next answer comes from.
    fn done(&self) -> &Answers {
        &self.workers[self.route.front().copied().unwrap_or(0)].1
    }

    /// Counts the next answer as taken.
    fn answered(&mut self) {
        if let Some(w) = self.route.pop_front() {
            self.load[w] -= 1;
        }
        self.in_flight -= 1;
    }

    /// Writes everything handed to the workers.
    pub(super) fn finish(&mut self) -> Result<(), IngestError> {
        self.dispatch()?;
        while self.in_flight > 0 {
            self.wait()?;
        }
        Ok(())
    }

    /// The error that stops the read when the reader found `e`: the error of a document
    /// before it, if any, else `e`. Nothing more is written.
    pub(super) fn stop(&mut self, e: IngestError) -> IngestError {
        // The fields gathered come before the one that stopped the read: check them too.
        self.hand_over();
        while self.in_flight > 0 {
            let answer = self.done().recv();
            self.answered();
            let Ok(answers) = answer else { break };
            for d in answers {
                if let Err(x) = d.result {
                    return x.into();
                }
            }
        }
        e
    }

    fn wait(&mut self) -> Result<(), IngestError> {
        match self.done().recv() {
            Ok(d) => self.write(d),
            Err(_) => {
                // Only a panic stops a worker early; the scope passes it on.
                self.in_flight = 0;
                self.route.clear();
                self.load = [0; WORKERS];
                Ok(())
            }
        }
    }

    fn write(&mut self, answers: Vec<Done>) -> Result<(), IngestError> {
        self.answered();
        for d in answers {
            self.payloads.push(d.payload);
            self.repaired += d.repaired;
            if let Some(hashed) = d.sourced {
                self.sources.count(hashed);
            }
            if let Some(skipped) = d.result? {
                self.skipped.push(skipped);
                self.groups.push(d.group);
                continue;
            }
            self.sink.group(&d.group)?;
            if self.track && d.document {
                self.written.insert(d.group.unit().to_owned());
            }
            self.facts += d.group.facts();
            self.groups.push(d.group);
            self.sink.progress(d.offset, self.facts);
        }
        Ok(())
    }
}
