//! Reading a dump on a thread of its own: lines are read, split and parsed there into
//! [`Chunk`]s of facts, which the caller's thread hands to the sink one fact at a time, as
//! a read on one thread would (same facts, same order, same errors). Reading and parsing a
//! line costs about what interning and gathering its fact does, so the two overlap.

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::{Fact, FactRun, FactSink, Field, Origin, Result};
use crate::error::IngestError;

/// Chunks read ahead of the sink, at most: a chunk is what is read between two progress
/// reports (8,192 lines).
const CHUNKS_AHEAD: usize = 4;

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

/// One field as recorded: a text is a span of the chunk's text.
#[derive(Clone, Copy, Debug)]
enum Slot {
    Absent,
    Number(f64),
    Text(u32, u32),
}

/// One fact as recorded.
#[derive(Clone, Copy, Debug)]
struct Recorded {
    /// Its relation, by number among those the read has met.
    relation: u32,
    /// Its first field in the chunk's fields, and how many it has.
    fields: (u32, u32),
    /// Its unit, a span of the chunk's text.
    unit: Option<(u32, u32)>,
    line: u64,
}

/// Facts read and parsed, to hand to the sink.
#[derive(Default)]
struct Chunk {
    /// Relations first met in this chunk, numbered after those of the chunks before.
    relations: Vec<Relation>,
    facts: Vec<Recorded>,
    fields: Vec<Slot>,
    text: String,
    /// The progress to report once the chunk's facts are handed over (bytes, facts).
    progress: Option<(u64, u64)>,
}

impl Chunk {
    fn span(&mut self, s: &str) -> Result<(u32, u32)> {
        let start = self.text.len();
        self.text.push_str(s);
        let end = self.text.len();
        match (u32::try_from(start), u32::try_from(end)) {
            (Ok(a), Ok(b)) => Ok((a, b)),
            _ => Err(IngestError::Invalid(
                "a chunk of a dump holds over 4 GiB of text".to_owned(),
            )),
        }
    }

    /// Records `fields` one after another; answers where the first is.
    fn record_fields(&mut self, fields: &[Field<'_>]) -> Result<u32> {
        let first = self.fields.len() as u32;
        self.fields.reserve(fields.len());
        for f in fields {
            let slot = match f {
                Field::Absent => Slot::Absent,
                Field::Number(x) => Slot::Number(*x),
                Field::Text(s) => {
                    let (a, b) = self.span(s)?;
                    Slot::Text(a, b)
                }
            };
            self.fields.push(slot);
        }
        Ok(first)
    }

    /// Records a fact's unit, if any, as a span of the chunk's text.
    fn record_unit(&mut self, unit: Option<&str>) -> Result<Option<(u32, u32)>> {
        unit.map(|u| self.span(u)).transpose()
    }

    fn text(&self, (a, b): (u32, u32)) -> &str {
        &self.text[a as usize..b as usize]
    }

    /// Empties the chunk, keeping its allocations for the next.
    fn clear(&mut self) {
        self.relations.clear();
        self.facts.clear();
        self.fields.clear();
        self.text.clear();
        self.progress = None;
    }

    /// Hands the chunk's facts to `sink`, then its progress; `relations` are those of the
    /// chunks before, and gain this chunk's. Facts of one relation and unit with as many
    /// fields, one after another, go over as one [`FactRun`].
    fn replay(&mut self, relations: &mut Vec<Relation>, sink: &mut dyn FactSink) -> Result<()> {
        relations.append(&mut self.relations);
        // One list of fields and one of lines for every run of the chunk: runs of one fact
        // each (edges of alternating kinds) would otherwise take two allocations a fact.
        let mut lines = Vec::new();
        let mut fields: Vec<Field<'_>> = Vec::new();
        let mut i = 0;
        while let Some(f) = self.facts.get(i) {
            let rel = relations.get(f.relation as usize).ok_or_else(|| {
                IngestError::Invalid("a recorded fact names no relation".to_owned())
            })?;
            let unit = f.unit.map(|u| self.text(u));
            let alike = |g: &Recorded| {
                g.relation == f.relation
                    && g.fields.1 == f.fields.1
                    && g.unit.map(|u| self.text(u)) == unit
            };
            let end = i + 1 + self.facts[i + 1..].iter().take_while(|g| alike(g)).count();
            let (first, arity) = (f.fields.0 as usize, f.fields.1 as usize);
            // The facts of a run are recorded one after another, their fields too.
            fields.clear();
            fields.extend(
                self.fields
                    .get(first..first + arity * (end - i))
                    .ok_or_else(|| {
                        IngestError::Invalid("a recorded fact has no fields".to_owned())
                    })?
                    .iter()
                    .map(|s| match *s {
                        Slot::Absent => Field::Absent,
                        Slot::Number(x) => Field::Number(x),
                        Slot::Text(a, b) => Field::Text(self.text((a, b)).into()),
                    }),
            );
            lines.clear();
            lines.extend(self.facts[i..end].iter().map(|g| g.line));
            let head = Fact {
                spelled: &rel.spelled,
                relation: &rel.relation,
                origin: rel.origin,
                columns: &rel.columns,
                doc: rel.doc.as_deref(),
                indexed: rel.indexed.as_deref(),
                fields: &fields[..arity],
                unit,
                line: f.line,
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
            i = end;
        }
        if let Some((bytes, facts)) = self.progress {
            sink.progress(bytes, facts);
        }
        Ok(())
    }
}

/// The sink the reading thread reads into: it records each fact into the chunk it fills,
/// and sends the chunk at each progress report.
struct Recorder {
    chunk: Chunk,
    /// The relations met so far; the last one a fact named.
    relations: Vec<Relation>,
    /// The relations met so far by their spelling, as numbers.
    by_spelling: FxHashMap<String, SmallVec<[u32; 1]>>,
    last: Option<u32>,
    send: SyncSender<Chunk>,
    /// Chunks the sink's side has replayed, emptied, to fill again: a chunk's lists are
    /// grown once, not for each 8,192 lines, and freed by the thread that made them.
    spare: Receiver<Chunk>,
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
        let next = self.spare.try_recv().unwrap_or_default();
        let chunk = std::mem::replace(&mut self.chunk, next);
        self.send.send(chunk).map_err(|_| stopped())
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
        let first = self.chunk.record_fields(fact.fields)?;
        let unit = self.chunk.record_unit(fact.unit)?;
        self.chunk.facts.push(Recorded {
            relation,
            fields: (first, fact.fields.len() as u32),
            unit,
            line: fact.line,
        });
        Ok(())
    }

    fn facts(&mut self, run: &FactRun<'_>) -> Result<()> {
        if self.stopped {
            return Err(stopped());
        }
        let relation = self.relation(&run.head);
        let mut at = self.chunk.record_fields(run.fields)?;
        // The run's facts share one copy of their unit.
        let unit = self.chunk.record_unit(run.head.unit)?;
        let arity = run.arity as u32;
        self.chunk.facts.extend(run.lines.iter().map(|&line| {
            let fields = (at, arity);
            at += arity;
            Recorded {
                relation,
                fields,
                unit,
                line,
            }
        }));
        Ok(())
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
    read: impl FnOnce(&mut dyn FactSink) -> Result<u64> + Send,
) -> Result<u64> {
    let (send, receive) = sync_channel::<Chunk>(CHUNKS_AHEAD);
    let (give_back, spare) = sync_channel::<Chunk>(2);
    std::thread::scope(|s| {
        let reader = s.spawn(move || {
            let mut recorder = Recorder {
                chunk: Chunk::default(),
                relations: Vec::new(),
                by_spelling: FxHashMap::default(),
                last: None,
                send,
                spare,
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
/// gives each back to the reader, emptied, while it has room for one.
fn hand_over(
    receive: &Receiver<Chunk>,
    spare: &SyncSender<Chunk>,
    sink: &mut dyn FactSink,
) -> Result<()> {
    let mut relations = Vec::new();
    for mut chunk in receive {
        chunk.replay(&mut relations, sink)?;
        chunk.clear();
        // A full or closed channel: the chunk is dropped here instead.
        let _ = spare.try_send(chunk);
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
    fn facts_come_right_from_chunks_filled_again() {
        // Five chunks and a part: each after the first the reader fills again once the sink
        // has replayed it; nothing of a chunk's facts, texts or relations stays in the next.
        let kinds = ["CALLS", "IMPORTS", "defines"];
        let n = 5 * 8192 + 100;
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
        assert_eq!(sink.progress.len(), 6);
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
