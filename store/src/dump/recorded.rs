//! Reading a dump on a thread of its own: lines are read, split and parsed there into
//! [`Chunk`]s of facts, which the caller's thread hands to the sink a run of facts at a
//! time, as a read on one thread would (same facts, same order, same errors). Reading and
//! parsing a line costs about what interning and gathering its fact does, so the two
//! overlap.
//!
//! A `.facts` file's plain lines go straight into the chunk ([`Recorder::plain_line`]): their
//! numbers are recorded as they are read, with no [`Field`] made for them on this thread.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::fields::plain_fields;
use super::slot::{Recorded, Slot};
use super::{Fact, FactRun, FactSink, Field, Origin, Result};
use crate::error::IngestError;

/// Chunks read ahead of the sink, at most: a chunk is what is read between two progress
/// reports (8,192 lines).
const CHUNKS_AHEAD: usize = 4;

/// How many bytes of chunks the sink's side replays after a chunk before the reader fills
/// it again. Filled again at once, a chunk's memory is what the sink's thread has just
/// read, and writing it made the reading thread's work up to 1.5x slower in this machine's
/// slow spells (10M integer pairs: read 0.53 s against 0.36); 8 MB later, 0.36 to 0.37 s
/// in every run.
const REUSE_AFTER_BYTES: usize = 8 << 20;

/// The most chunks replayed that wait to be filled again (more are freed).
const REUSABLE: usize = 256;

/// What every fact of a run of facts shares: its relation as read.
#[derive(Clone, Debug, PartialEq)]
struct Relation {
    spelled: String,
    relation: String,
    /// Whether `spelled` is `relation`.
    spelled_as_stored: bool,
    origin: Origin,
    columns: Vec<String>,
    doc: Option<String>,
    indexed: Option<Vec<String>>,
}

/// Facts recorded one after another, of consecutive lines, that share their relation, unit
/// and number of fields: they go to the sink as one [`FactRun`].
#[derive(Clone, Debug)]
struct RecordedRun {
    /// The facts' relation, by number among those the read has met.
    relation: u32,
    /// How many fields each fact has.
    arity: u32,
    /// The facts' unit, by its index among the chunk's texts ([`NO_UNIT`]: none).
    unit: u32,
    /// How many facts the run holds.
    facts: u32,
    /// The first fact's first field in the chunk's fields; the others follow it.
    fields: u32,
    /// The first fact's line; the others are on the lines after it.
    line: u64,
}

/// A run's unit when its facts have none.
const NO_UNIT: u32 = u32::MAX;

/// Facts read and parsed, to hand to the sink.
#[derive(Default)]
struct Chunk {
    /// Relations first met in this chunk, numbered after those of the chunks before.
    relations: Vec<Relation>,
    runs: Vec<RecordedRun>,
    fields: Vec<Slot>,
    /// Each text recorded (a field's or a unit's), as a span of `text`.
    texts: Vec<(u32, u32)>,
    text: String,
    /// The progress to report once the chunk's facts are handed over (bytes, facts).
    progress: Option<(u64, u64)>,
}

/// The error a chunk answers when its texts outgrow the numbers that address them.
fn too_much_text() -> IngestError {
    IngestError::Invalid("a chunk of a dump holds over 4 GiB of text".to_owned())
}

impl Chunk {
    /// Records the text `s`; answers its index among the chunk's texts.
    #[inline]
    fn record_text(&mut self, s: &str) -> Result<u32> {
        let start = self.text.len();
        self.text.push_str(s);
        let end = self.text.len();
        let i = self.texts.len();
        match (u32::try_from(start), u32::try_from(end), u32::try_from(i)) {
            (Ok(a), Ok(b), Ok(i)) if i != NO_UNIT => {
                self.texts.push((a, b));
                Ok(i)
            }
            _ => Err(too_much_text()),
        }
    }

    /// Records `field` after the fields recorded before it.
    #[inline]
    fn record_field(&mut self, field: &Field<'_>) -> Result<()> {
        let slot = match field {
            Field::Absent => Slot::ABSENT,
            Field::Number(x) => Slot::number(*x),
            Field::Text(s) => Slot::text(self.record_text(s)?),
        };
        self.fields.push(slot);
        Ok(())
    }

    /// The text with index `i`.
    fn text(&self, i: u32) -> &str {
        self.texts
            .get(i as usize)
            .and_then(|&(a, b)| self.text.get(a as usize..b as usize))
            .unwrap_or_default()
    }

    /// A run's unit.
    fn unit(&self, unit: u32) -> Option<&str> {
        (unit != NO_UNIT).then(|| self.text(unit))
    }

    /// Makes the last run one of facts of `relation` with `arity` fields and `unit`: it
    /// is, or a new one is begun.
    fn open_run(&mut self, relation: u32, arity: u32, unit: Option<&str>) -> Result<()> {
        let continues = self.runs.last().is_some_and(|r| {
            r.relation == relation && r.arity == arity && self.unit(r.unit) == unit
        });
        if continues {
            return Ok(());
        }
        let unit = match unit {
            Some(u) => self.record_text(u)?,
            None => NO_UNIT,
        };
        let fields = u32::try_from(self.fields.len()).map_err(|_| too_much_text())?;
        self.runs.push(RecordedRun {
            relation,
            arity,
            unit,
            facts: 0,
            fields,
            line: 0,
        });
        Ok(())
    }

    /// Adds the fact of `line` to the last run, its fields recorded already: a line not
    /// next after the run's last begins a run of its own, alike.
    #[inline]
    fn add_fact(&mut self, line: u64) -> Result<()> {
        if let Some(r) = self.runs.last_mut()
            && r.facts > 0
            && r.line + u64::from(r.facts) == line
        {
            r.facts += 1;
            return Ok(());
        }
        self.begin_lines(line)
    }

    /// [`Chunk::add_fact`] when the fact is the last run's first, or not on the line next
    /// after its last.
    #[cold]
    #[inline(never)]
    fn begin_lines(&mut self, line: u64) -> Result<()> {
        let fields = self.fields.len();
        let Some(r) = self.runs.last_mut() else {
            return Err(IngestError::Invalid(
                "a fact was recorded outside any run".to_owned(),
            ));
        };
        if r.facts > 0 {
            let first = fields - r.arity as usize;
            let next = RecordedRun {
                facts: 0,
                fields: u32::try_from(first).map_err(|_| too_much_text())?,
                line,
                ..*r
            };
            self.runs.push(next);
        }
        if let Some(r) = self.runs.last_mut() {
            r.line = line;
            r.facts = 1;
        }
        Ok(())
    }

    /// The bytes the chunk's lists hold room for.
    fn bytes(&self) -> usize {
        self.runs.capacity() * std::mem::size_of::<RecordedRun>()
            + self.fields.capacity() * std::mem::size_of::<Slot>()
            + self.texts.capacity() * std::mem::size_of::<(u32, u32)>()
            + self.text.capacity()
    }

    /// Empties the chunk, keeping its allocations for a later one.
    fn clear(&mut self) {
        self.relations.clear();
        self.runs.clear();
        self.fields.clear();
        self.texts.clear();
        self.text.clear();
        self.progress = None;
    }

    /// An empty chunk with room for as much as this one holds: the next chunk, grown
    /// once, until the chunks replayed can be filled again ([`REUSE_AFTER_BYTES`]).
    fn alike(&self) -> Chunk {
        Chunk {
            relations: Vec::new(),
            runs: Vec::with_capacity(self.runs.len()),
            fields: Vec::with_capacity(self.fields.len()),
            texts: Vec::with_capacity(self.texts.len()),
            text: String::with_capacity(self.text.len()),
            progress: None,
        }
    }

    /// Hands the chunk's facts to `sink`, a run at a time, then its progress; `relations`
    /// are those of the chunks before, and gain this chunk's.
    fn replay(&mut self, relations: &mut Vec<Relation>, sink: &mut dyn FactSink) -> Result<()> {
        relations.append(&mut self.relations);
        let mut fields: Vec<Field<'_>> = Vec::new();
        let mut lines: Vec<u64> = Vec::new();
        for run in &self.runs {
            if run.facts == 0 {
                continue;
            }
            let rel = relations.get(run.relation as usize).ok_or_else(|| {
                IngestError::Invalid("a recorded fact names no relation".to_owned())
            })?;
            lines.clear();
            lines.extend(run.line..run.line + u64::from(run.facts));
            let arity = run.arity as usize;
            let first = run.fields as usize;
            fields.clear();
            fields.extend(
                self.fields
                    .get(first..first + arity * lines.len())
                    .ok_or_else(|| {
                        IngestError::Invalid("a recorded fact has no fields".to_owned())
                    })?
                    .iter()
                    .map(|s| match s.get() {
                        Recorded::Absent => Field::Absent,
                        Recorded::Number(x) => Field::Number(x),
                        Recorded::Text(i) => Field::Text(self.text(i).into()),
                    }),
            );
            let head = Fact {
                spelled: &rel.spelled,
                relation: &rel.relation,
                origin: rel.origin,
                columns: &rel.columns,
                doc: rel.doc.as_deref(),
                indexed: rel.indexed.as_deref(),
                fields: &fields[..arity],
                unit: self.unit(run.unit),
                line: run.line,
            };
            if arity == 0 {
                // No fields to tell the facts apart by: one at a time.
                for &line in &lines {
                    sink.fact(&Fact { line, ..head })?;
                }
            } else {
                sink.facts(&FactRun {
                    head,
                    arity,
                    fields: &fields,
                    lines: &lines,
                })?;
            }
        }
        if let Some((bytes, facts)) = self.progress {
            sink.progress(bytes, facts);
        }
        Ok(())
    }
}

/// The sink the reading thread reads into: it records each fact into the chunk it fills,
/// and sends the chunk at each progress report.
pub(super) struct Recorder {
    chunk: Chunk,
    /// The relations met so far; the last one a fact named.
    relations: Vec<Relation>,
    /// The relations met so far by their spelling, as numbers.
    by_spelling: FxHashMap<String, SmallVec<[u32; 1]>>,
    last: Option<u32>,
    /// Whether the chunk's last run is the one [`Recorder::open`] last opened: a fact
    /// recorded since, or a chunk sent, closes it.
    open: bool,
    send: SyncSender<Chunk>,
    /// Chunks the sink's side has replayed, in the order it did.
    replayed: Receiver<Chunk>,
    /// Those received, oldest first, each with its bytes, to fill again once
    /// [`REUSE_AFTER_BYTES`] were replayed after it; and their bytes in all.
    reusable: VecDeque<(usize, Chunk)>,
    reusable_bytes: usize,
    /// Set once a send failed: the sink's side stopped.
    stopped: bool,
}

impl Recorder {
    /// The number of `fact`'s relation, recording it when new. A relation is known by its
    /// origin and its name as spelled and as stored: within one dump these fix its columns
    /// and doc line (a `.facts` file's are fixed before its first fact; the other formats'
    /// by the format), so those are not compared for each fact.
    #[inline]
    fn relation(&mut self, fact: &Fact<'_>) -> u32 {
        // A `.facts` dump spells its relation as it stores it: one comparison, not two.
        let alike = std::ptr::eq(fact.spelled, fact.relation);
        let same = |r: &Relation| {
            r.origin == fact.origin
                && same_text(&r.relation, fact.relation)
                && if alike {
                    r.spelled_as_stored
                } else {
                    same_text(&r.spelled, fact.spelled)
                }
        };
        if let Some(i) = self.last
            && same(&self.relations[i as usize])
        {
            debug_assert_eq!(self.relations[i as usize].columns, fact.columns);
            return i;
        }
        let known = self.by_spelling.get(fact.spelled).and_then(|c| {
            c.iter()
                .copied()
                .find(|&i| same(&self.relations[i as usize]))
        });
        let i = match known {
            Some(i) => i,
            None => {
                let r = Relation {
                    spelled: fact.spelled.to_owned(),
                    relation: fact.relation.to_owned(),
                    spelled_as_stored: fact.spelled == fact.relation,
                    origin: fact.origin,
                    columns: fact.columns.to_vec(),
                    doc: fact.doc.map(str::to_owned),
                    indexed: fact.indexed.map(<[String]>::to_vec),
                };
                self.chunk.relations.push(r.clone());
                self.relations.push(r);
                let i = (self.relations.len() - 1) as u32;
                self.by_spelling
                    .entry(fact.spelled.to_owned())
                    .or_default()
                    .push(i);
                i
            }
        };
        self.last = Some(i);
        i
    }

    /// Sends the chunk; an error when the sink's side has stopped.
    fn send(&mut self) -> Result<()> {
        for c in self.replayed.try_iter() {
            let bytes = c.bytes();
            self.reusable_bytes += bytes;
            self.reusable.push_back((bytes, c));
        }
        let reused = match self.reusable.front() {
            Some(&(bytes, _)) if self.reusable_bytes - bytes >= REUSE_AFTER_BYTES => {
                self.reusable_bytes -= bytes;
                self.reusable.pop_front()
            }
            _ => None,
        };
        let next = match reused {
            Some((_, mut c)) => {
                c.clear();
                c
            }
            None => self.chunk.alike(),
        };
        let chunk = std::mem::replace(&mut self.chunk, next);
        self.open = false;
        self.send.send(chunk).map_err(|_| stopped())
    }

    /// Whether the run [`Recorder::plain_line`] adds to is open.
    pub(super) fn is_open(&self) -> bool {
        self.open
    }

    /// Opens the run that [`Recorder::plain_line`] adds facts of `head`'s relation and unit
    /// to, each with `arity` fields (`head`'s own are not read).
    pub(super) fn open(&mut self, head: &Fact<'_>, arity: usize) -> Result<()> {
        if self.stopped {
            return Err(stopped());
        }
        let relation = self.relation(head);
        let arity = u32::try_from(arity).map_err(|_| too_much_text())?;
        self.chunk.open_run(relation, arity, head.unit)?;
        self.open = true;
        Ok(())
    }

    /// Records the fact of `text`, a `.facts` line read as line `line`, into the open run
    /// and answers true, when it holds no backslash and as many tab-separated fields as
    /// the run's facts have; else records nothing and answers false. Each field is read as
    /// [`Field::from_tsv`] reads it.
    pub(super) fn plain_line(&mut self, text: &str, line: u64) -> Result<bool> {
        let chunk = &mut self.chunk;
        let Some(arity) = chunk.runs.last().map(|r| r.arity as usize) else {
            return Ok(false);
        };
        let (before, texts, chars) = (chunk.fields.len(), chunk.texts.len(), chunk.text.len());
        // A flag, not the error: the closure's state stays a byte.
        let mut fits = true;
        let plain = plain_fields(text, |f| {
            let slot = match f {
                Field::Number(x) => Slot::number(x),
                Field::Absent => Slot::ABSENT,
                Field::Text(s) => match chunk.record_text(&s) {
                    Ok(i) => Slot::text(i),
                    Err(_) => {
                        fits = false;
                        Slot::ABSENT
                    }
                },
            };
            chunk.fields.push(slot);
        });
        if !fits {
            return Err(too_much_text());
        }
        if !plain || chunk.fields.len() - before != arity {
            chunk.fields.truncate(before);
            chunk.texts.truncate(texts);
            chunk.text.truncate(chars);
            return Ok(false);
        }
        chunk.add_fact(line)?;
        Ok(true)
    }
}

/// Whether two short texts (relation names) are the same: compared in a loop, not by a
/// call to `memcmp`, which cost more than the comparison for each fact.
fn same_text(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| x == y)
}

/// What the reading thread stops with when the sink's side stopped first (the sink's error
/// is the one reported).
fn stopped() -> IngestError {
    IngestError::Invalid("the read stopped: its facts were refused".to_owned())
}

impl FactSink for Recorder {
    fn fact(&mut self, fact: &Fact<'_>) -> Result<()> {
        if self.stopped {
            return Err(stopped());
        }
        let relation = self.relation(fact);
        self.open = false;
        let chunk = &mut self.chunk;
        chunk.open_run(relation, fact.fields.len() as u32, fact.unit)?;
        for f in fact.fields {
            chunk.record_field(f)?;
        }
        chunk.add_fact(fact.line)
    }

    fn progress(&mut self, bytes: u64, facts: u64) {
        self.chunk.progress = Some((bytes, facts));
        // The reader stops at its next fact.
        if self.send().is_err() {
            self.stopped = true;
        }
    }
}

/// Runs `read` (which reads a whole dump into the sink it is given) on a thread of its own,
/// and hands what it reads to `sink` on this one; answers what `read` answers, or the sink's
/// first error.
pub(super) fn read_on_thread(
    sink: &mut dyn FactSink,
    read: impl FnOnce(&mut Recorder) -> Result<u64> + Send,
) -> Result<u64> {
    let (send, receive) = sync_channel::<Chunk>(CHUNKS_AHEAD);
    let (give_back, replayed) = sync_channel::<Chunk>(REUSABLE);
    std::thread::scope(|s| {
        let reader = s.spawn(move || {
            let mut recorder = Recorder {
                chunk: Chunk::default(),
                relations: Vec::new(),
                by_spelling: FxHashMap::default(),
                last: None,
                open: false,
                send,
                replayed,
                reusable: VecDeque::new(),
                reusable_bytes: 0,
                stopped: false,
            };
            let read = read(&mut recorder);
            // What was read before an error goes to the sink first.
            let sent = recorder.send();
            read.and_then(|n| sent.map(|()| n))
        });
        let refused = hand_over(&receive, &give_back, sink);
        // The reader sees the sink's side gone at its next send.
        drop(receive);
        let read = reader
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        match refused {
            Err(e) => Err(e),
            Ok(()) => read,
        }
    })
}

/// Hands every chunk received to `sink`, until the reader stops or the sink refuses a fact;
/// gives each back to the reader, to fill again later ([`REUSE_AFTER_BYTES`]).
fn hand_over(
    receive: &Receiver<Chunk>,
    replayed: &SyncSender<Chunk>,
    sink: &mut dyn FactSink,
) -> Result<()> {
    let mut relations = Vec::new();
    for mut chunk in receive {
        chunk.replay(&mut relations, sink)?;
        // A full or closed channel: the chunk is dropped here instead.
        let _ = replayed.try_send(chunk);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use crate::dump::seen::Lines;
    use crate::dump::{DumpSpec, Format, read};

    fn spec(label: &str, format: Format, relation: Option<&str>) -> DumpSpec {
        DumpSpec {
            label: label.to_owned(),
            format,
            relation: relation.map(str::to_owned),
            unit: None,
            checkout: None,
        }
    }

    #[test]
    fn the_sink_gets_every_fact_as_read_in_order() {
        let text = "a\\tz\tCALLS\tb\nb\tcalls\t7\tu1\n\nc\tIMPORTS\td\n";
        let mut sink = Lines::default();
        let n = read(
            text.as_bytes(),
            &spec("e.edges.tsv", Format::Edges, None),
            &mut sink,
        );
        assert_eq!(n.unwrap(), 3, "{:?}", sink.seen);
        let text = "# doc: pairs\n# columns: x, y\n1\tb\\tc\n2\t\\N\n";
        let n = read(
            text.as_bytes(),
            &spec("p.facts", Format::Facts, Some("p")),
            &mut sink,
        );
        assert_eq!(n.unwrap(), 2);
        assert_eq!(
            sink.seen,
            [
                "1:CALLS calls(src,dst) None Text(\"a\\tz\") Text(\"b\") None",
                "2:calls calls(src,dst) None Text(\"b\") Number(7.0) Some(\"u1\")",
                "4:IMPORTS imports(src,dst) None Text(\"c\") Text(\"d\") None",
                "3:p p(x,y) Some(\"pairs\") Number(1.0) Text(\"b\\tc\") None",
                "4:p p(x,y) Some(\"pairs\") Number(2.0) Absent None",
            ]
        );
        // Each read reports its progress once at its end.
        assert_eq!(sink.progress.len(), 2);
    }

    #[test]
    fn facts_come_right_across_chunks() {
        // More chunks than are replayed before one is filled again, and a part: nothing of a
        // chunk's facts, texts or relations goes into the next, or into one that fills it
        // again.
        let kinds = ["CALLS", "IMPORTS", "defines"];
        // Each chunk holds about 0.5 MB: more than 8 MB of them before one is filled again.
        let chunks = 40;
        let n = chunks * 8192 + 100;
        let mut text = String::new();
        let mut want = Vec::new();
        for i in 0..n {
            let kind = kinds[(i / 5000) % 3];
            text.push_str(&format!("s{i}\t{kind}\t{}\tu{}\n", i * 7, i % 4));
            want.push(format!(
                "{}:{kind} {}(src,dst) None Text(\"s{i}\") Number({}.0) Some(\"u{}\")",
                i + 1,
                kind.to_lowercase(),
                i * 7,
                i % 4
            ));
        }
        let mut sink = Lines::default();
        let read = read(
            text.as_bytes(),
            &spec("e.edges.tsv", Format::Edges, None),
            &mut sink,
        );
        assert_eq!(read.unwrap(), n as u64);
        assert_eq!(sink.seen, want);
        assert_eq!(sink.progress.len(), chunks + 1);
    }

    /// Reads `lines` pairs and then a malformed line as `e.facts` into `sink`; answers the
    /// error.
    fn read_then_malformed(lines: u64, sink: &mut Lines) -> String {
        let mut text = String::new();
        for i in 0..lines {
            text.push_str(&format!("{i}\t{}\n", i + 1));
        }
        text.push_str("1\t2\t3\n");
        let spec = spec("e.facts", Format::Facts, Some("e"));
        read(text.as_bytes(), &spec, sink).unwrap_err().to_string()
    }

    #[test]
    fn a_malformed_line_is_reported_after_every_fact_before_it() {
        let mut sink = Lines::default();
        let err = read_then_malformed(20_000, &mut sink);
        assert!(err.contains("e.facts:20001"), "{err}");
        assert_eq!(sink.seen.len(), 20_000);
        assert!(sink.seen[19_999].starts_with("20000:e"));
    }

    #[test]
    fn the_sink_s_refusal_wins_over_a_later_malformed_line() {
        let mut sink = Lines {
            refuse: 9_000,
            ..Lines::default()
        };
        let err = read_then_malformed(30_000, &mut sink);
        assert_eq!(err, "refused line 9000");
        assert_eq!(sink.seen.len(), 8_999);
        // Progress was reported once, at line 8,192, before the refusal.
        assert_eq!(sink.progress, [(sink.progress[0].0, 8_192)]);
    }
}
