//! Fresh after every commit: re-reading a whole new index of a repository with `--replace`
//! rewrites only the documents that changed.
//!
//! Every document's facts include `document_hash(path, hash)`, a hash of the document's bytes
//! in the index (with the path and this reader's version). While a batch replaces, a document
//! whose hash is the one stored is skipped without being decoded (its stored facts stay, as
//! they are what it would state again); any other document replaces its unit; and every
//! document the store holds under the repository (`REPO/...`) that the new index lacks is
//! retracted. [`DocumentChanges`] counts each.

use std::ops::ControlFlow;

use rustc_hash::FxHashSet;
use strata_eval::{FactSource, SourceError, Value};

type Result<T> = std::result::Result<T, SourceError>;

/// Bumped whenever the facts read from a document change for the same bytes, so that a
/// re-ingest after an upgrade rewrites every document.
const READER_VERSION: u32 = 3;

/// What a replacing read did with each document of an index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DocumentChanges {
    /// Documents read from the index (skipped or not).
    pub read: u64,
    /// Documents whose stored facts were kept, their content unchanged.
    pub unchanged: u64,
    /// Documents the store held with other content, whose facts were replaced.
    pub replaced: u64,
    /// Documents the store did not hold.
    pub added: u64,
    /// Documents of the repository the store held that the new index lacks, retracted.
    pub removed: u64,
    /// Strings of the index that were not valid UTF-8, each made valid (every invalid
    /// sequence, a lone UTF-16 surrogate included, replaced by U+FFFD) rather than refusing
    /// the index.
    pub repaired: u64,
    /// Documents left out because their path cannot name a unit of the repository, or
    /// because their positions are out of range, in the index's order (the rest of the
    /// index is read).
    pub skipped: Vec<SkippedDocument>,
    /// The documents whose source file was hashed from the repository's checkout, and
    /// those whose file could not be read there.
    pub sources: super::SourceCounts,
    /// Documents whose path an earlier document of the same index has: their facts are
    /// merged under that path (each path is counted once above).
    pub merged: u64,
}

/// A document left out of a read: its number in the index, its path as written, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedDocument {
    /// Its 1-based position among the index's documents.
    pub number: u64,
    /// Its `relative_path`, as the index has it (lossy UTF-8).
    pub path: String,
    /// What is wrong with the path.
    pub why: String,
}

/// How many skipped documents a summary names; the rest are counted.
const NAMED: usize = 5;

impl DocumentChanges {
    /// Adds another read's counts (a batch reading several indexes).
    pub fn add(&mut self, other: &DocumentChanges) {
        self.read += other.read;
        self.unchanged += other.unchanged;
        self.replaced += other.replaced;
        self.added += other.added;
        self.removed += other.removed;
        self.repaired += other.repaired;
        self.skipped.extend(other.skipped.iter().cloned());
        self.sources.add(&other.sources);
        self.merged += other.merged;
    }
}

impl DocumentChanges {
    /// Whether a replacing read compared the documents with the stored ones (otherwise the
    /// counts but `read` are zero).
    pub fn compared(&self) -> bool {
        self.unchanged + self.replaced + self.added + self.removed > 0
    }
}

/// `N documents unchanged, M replaced, A added, K removed` for a replacing read (each path
/// counted once), `N documents read` for one that adds to what is stored; then `, N strings
/// repaired`, `, N documents merged into an earlier one of the same path` and each skipped
/// document (`, skipped document 3 ("../x.py"): its path leaves the repository`) when any.
impl std::fmt::Display for DocumentChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.compared() {
            write!(
                f,
                "{} documents unchanged, {} replaced, {} added, {} removed",
                self.unchanged, self.replaced, self.added, self.removed
            )?;
        } else {
            let s = if self.read == 1 { "" } else { "s" };
            write!(f, "{} document{s} read", self.read)?;
        }
        if self.repaired > 0 {
            let s = if self.repaired == 1 { "" } else { "s" };
            write!(f, ", {} string{s} repaired", self.repaired)?;
        }
        write!(f, "{}", self.sources)?;
        if self.merged > 0 {
            let s = if self.merged == 1 { "" } else { "s" };
            write!(
                f,
                ", {} document{s} merged into an earlier one of the same path",
                self.merged
            )?;
        }
        for d in self.skipped.iter().take(NAMED) {
            write!(
                f,
                ", skipped document {} ({:?}): {}",
                d.number, d.path, d.why
            )?;
        }
        if self.skipped.len() > NAMED {
            write!(f, ", and {} more skipped", self.skipped.len() - NAMED)?;
        }
        Ok(())
    }
}

/// The content hash of a document: 128 bits, as 32 hex digits.
///
/// A hash defined here ([`stable_hash`]), not by the compiler or a crate, so a stored hash
/// means the same after any upgrade of either. Hashes stored by earlier versions (std's
/// SipHash, which may change between Rust releases) simply differ from these: the first
/// replacing ingest after the change rewrites every document once, nothing worse.
pub(crate) fn content_hash(path: &str, bytes: &[u8]) -> String {
    let mut head = Vec::with_capacity(path.len() + 4);
    head.extend_from_slice(&READER_VERSION.to_le_bytes());
    head.extend_from_slice(path.as_bytes());
    let seed = stable_hash([0, 0], &head);
    let [a, b] = stable_hash(seed, bytes);
    format!("{a:016x}{b:016x}")
}

/// Constants of [`stable_hash`] (wyhash's).
const K: [u64; 4] = [
    0xa076_1d64_78bd_642f,
    0xe703_7ed1_a0b4_28db,
    0x8ebc_6af0_9c88_c6e3,
    0x5899_65cc_7537_4cc3,
];

/// The 64-bit folded product of two words.
fn fold(a: u64, b: u64) -> u64 {
    let r = u128::from(a) * u128::from(b);
    (r as u64) ^ ((r >> 64) as u64)
}

/// A fast non-cryptographic 128-bit hash of `bytes` from `seed`, fixed by this code (two
/// lanes of folded multiplies over 16-byte blocks, after wyhash): it tells a changed
/// document from an unchanged one, it is no defence against an index made to collide.
pub(super) fn stable_hash(seed: [u64; 2], bytes: &[u8]) -> [u64; 2] {
    let mut h = [seed[0] ^ K[0], seed[1] ^ K[2]];
    let mut block = |chunk: &[u8]| {
        let mut buf = [0u8; 16];
        buf[..chunk.len()].copy_from_slice(chunk);
        let lo = u64::from_le_bytes([
            buf[0], buf[1], buf[2], buf[3], buf[4], buf[5], buf[6], buf[7],
        ]);
        let hi = u64::from_le_bytes([
            buf[8], buf[9], buf[10], buf[11], buf[12], buf[13], buf[14], buf[15],
        ]);
        h[0] = h[0].rotate_left(29) ^ fold(lo ^ h[0] ^ K[1], hi ^ K[2]);
        h[1] = h[1].rotate_left(37) ^ fold(hi ^ h[1] ^ K[3], lo ^ K[0]);
    };
    let mut chunks = bytes.chunks_exact(16);
    for c in &mut chunks {
        block(c);
    }
    block(chunks.remainder());
    let len = bytes.len() as u64;
    [
        fold(h[0] ^ K[3], len ^ K[1] ^ h[1]),
        fold(h[1] ^ K[0], len ^ K[2] ^ h[0].rotate_left(17)),
    ]
}

/// A document whose bytes a replacing read holds back: its path's stored copy may stay.
pub(crate) struct Held {
    /// Its number in the index.
    pub(crate) number: u64,
    /// Its path.
    pub(crate) path: String,
    /// Its content hashes.
    pub(crate) hash: super::worker::Hashed,
    /// Its bytes.
    pub(crate) payload: Vec<u8>,
    /// Where the index was read up to after it.
    pub(crate) offset: u64,
}

/// What a replacing read does with one document.
pub(crate) enum Verdict {
    /// Its bytes are stored as they are: it is not read.
    Unchanged,
    /// Its path was stored merged from several documents, not all seen yet: the caller
    /// hands its bytes to [`Fresh::hold`] until it is known whether the stored facts stay.
    Hold,
    /// It is read, replacing its path's stored facts: after `held`, the documents of its
    /// path held back before it.
    Read {
        /// The documents of the path held back earlier, in the index's order.
        held: Vec<Held>,
    },
    /// It is read, adding to its path's stored facts, which stay (the stored copy matched an
    /// earlier document of the path); `keep` when the sink must first be told to keep them.
    Add {
        /// Whether this is the first document added to the path.
        keep: bool,
    },
}

/// What a replacing read knows of one path of the new index.
enum State {
    /// Read, replacing the stored facts (or stored for the first time).
    Read,
    /// Every stored copy matched a document of the index (the hashes of those seen): the
    /// stored facts stay, and further documents of the path add to them (`added` once one
    /// did).
    Kept {
        seen: FxHashSet<String>,
        added: bool,
    },
    /// Stored merged from several documents: the stored hashes not matched yet, those
    /// matched, and the matching documents' bytes.
    Pending {
        left: FxHashSet<String>,
        matched: FxHashSet<String>,
        held: Vec<Held>,
    },
}

/// The documents a replacing read compares against: the store as the batch began.
///
/// A path may be held by several documents of one index: their facts are merged under the
/// path's unit, and each one's hash is stored. A path stored that way stays when every stored
/// hash matches a document of the new index; otherwise it is replaced by the new documents,
/// so the bytes of matching documents are held back until that is known (only for paths
/// stored merged, until their last stored copy is seen).
pub(crate) struct Fresh {
    stored: crate::Snapshot,
    /// The stored documents under the repository, read on the first document.
    under_repo: Option<FxHashSet<String>>,
    /// The paths of the new index.
    paths: rustc_hash::FxHashMap<String, State>,
    pub(crate) changes: DocumentChanges,
}

impl Fresh {
    /// Compares against `stored`.
    pub(crate) fn new(stored: crate::Snapshot) -> Self {
        Fresh {
            stored,
            under_repo: None,
            paths: Default::default(),
            changes: DocumentChanges::default(),
        }
    }

    /// What to do with the document at `path` whose content hash is `hash`.
    pub(crate) fn verdict(&mut self, repo: &str, path: &str, hash: &str) -> Result<Verdict> {
        if self.under_repo.is_none() {
            self.under_repo = Some(self.documents_under(repo)?);
        }
        let verdict = match self.paths.get_mut(path) {
            None => {
                let stored = self.under_repo.as_ref().is_some_and(|d| d.contains(path));
                let mut hashes = if stored {
                    self.stored_hashes(path)?
                } else {
                    FxHashSet::default()
                };
                let state = if !hashes.remove(hash) {
                    State::Read
                } else if hashes.is_empty() {
                    State::Kept {
                        seen: std::iter::once(hash.to_owned()).collect(),
                        added: false,
                    }
                } else {
                    State::Pending {
                        left: hashes,
                        matched: std::iter::once(hash.to_owned()).collect(),
                        held: Vec::new(),
                    }
                };
                let verdict = match state {
                    State::Read => Verdict::Read { held: Vec::new() },
                    State::Kept { .. } => Verdict::Unchanged,
                    State::Pending { .. } => Verdict::Hold,
                };
                self.paths.insert(path.to_owned(), state);
                return Ok(verdict);
            }
            Some(state) => state,
        };
        self.changes.merged += 1;
        Ok(match verdict {
            State::Read => Verdict::Read { held: Vec::new() },
            State::Kept { seen, added } => {
                if seen.insert(hash.to_owned()) {
                    let keep = !*added;
                    *added = true;
                    Verdict::Add { keep }
                } else {
                    Verdict::Unchanged
                }
            }
            State::Pending {
                left,
                matched,
                held,
            } => {
                if matched.contains(hash) {
                    Verdict::Unchanged
                } else if left.remove(hash) {
                    matched.insert(hash.to_owned());
                    if left.is_empty() {
                        *verdict = State::Kept {
                            seen: std::mem::take(matched),
                            added: false,
                        };
                        Verdict::Unchanged
                    } else {
                        Verdict::Hold
                    }
                } else {
                    let held = std::mem::take(held);
                    *verdict = State::Read;
                    Verdict::Read { held }
                }
            }
        })
    }

    /// Holds back the bytes of a document [`Fresh::verdict`] answered [`Verdict::Hold`] for.
    pub(crate) fn hold(&mut self, path: &str, document: Held) {
        if let Some(State::Pending { held, .. }) = self.paths.get_mut(path) {
            held.push(document);
        }
    }

    /// At the end of the index: the documents still held back, of paths whose stored copies
    /// the index does not all have, which are read now (replacing those paths), in the
    /// index's order.
    pub(crate) fn release(&mut self) -> Vec<Held> {
        let mut out = Vec::new();
        for state in self.paths.values_mut() {
            if let State::Pending { held, .. } = state {
                out.append(held);
                *state = State::Read;
            }
        }
        out.sort_unstable_by_key(|h| h.number);
        out
    }

    /// Whether some document of the index named a path that is stored as it is, or was
    /// read (`written` holds the paths whose facts were written).
    pub(crate) fn anything(&self, written: &FxHashSet<String>) -> bool {
        self.paths
            .iter()
            .any(|(p, s)| matches!(s, State::Kept { .. }) || written.contains(p))
    }

    /// The stored paths under the repository that the new index no longer has (or whose
    /// every new document was left out, `written` holding the paths whose facts were
    /// written), to retract, sorted; counts every path.
    pub(crate) fn finish(
        &mut self,
        repo: &str,
        written: &FxHashSet<String>,
    ) -> Result<Vec<String>> {
        let stored = match self.under_repo.take() {
            Some(s) => s,
            None => self.documents_under(repo)?,
        };
        let mut gone: Vec<String> = Vec::new();
        for p in &stored {
            match self.paths.get(p) {
                None => gone.push(p.clone()),
                Some(State::Kept { .. }) if written.contains(p) => self.changes.replaced += 1,
                Some(State::Kept { .. }) => self.changes.unchanged += 1,
                Some(_) if written.contains(p) => self.changes.replaced += 1,
                Some(_) => gone.push(p.clone()),
            }
        }
        self.changes.added += self
            .paths
            .keys()
            .filter(|p| !stored.contains(*p) && written.contains(*p))
            .count() as u64;
        gone.sort_unstable();
        self.changes.removed = gone.len() as u64;
        Ok(gone)
    }

    fn documents_under(&self, repo: &str) -> Result<FxHashSet<String>> {
        let mut out = FxHashSet::default();
        if self.stored.relation("document")?.is_none() {
            return Ok(out);
        }
        let prefix = format!("{repo}/");
        let mut terms = Vec::new();
        self.stored.scan("document", &mut |row| {
            terms.push(row[0]);
            ControlFlow::Continue(())
        })?;
        for t in terms {
            if let Value::Text(p) = self.stored.value(t)?
                && p.starts_with(&prefix)
            {
                out.insert(p.to_string());
            }
        }
        Ok(out)
    }

    /// Every hash stored for the document at `path`: one, or several when documents of one
    /// index were merged under it.
    fn stored_hashes(&self, path: &str) -> Result<FxHashSet<String>> {
        let mut out = FxHashSet::default();
        if self.stored.relation("document_hash")?.is_none() {
            return Ok(out);
        }
        let Some(term) = self.stored.term(&Value::text(path))? else {
            return Ok(out);
        };
        let mut found = Vec::new();
        self.stored
            .lookup("document_hash", &[(0, term)], &mut |row| {
                found.push(row[1]);
                ControlFlow::Continue(())
            })?;
        for t in found {
            if let Value::Text(h) = self.stored.value(t)? {
                out.insert(h.to_string());
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_content_hash_is_fixed() {
        // Stored on disk: a change here makes every replacing ingest rewrite every document.
        // Reader version 3 (a reference inside its own definition is an other site).
        assert_eq!(
            content_hash("r/a.ts", b"hello"),
            "0174e51aca3c967019d28fdf730739b3"
        );
        assert_eq!(
            content_hash("r/a.ts", b""),
            "47a63997661cec153f804d55a9f1b605"
        );
    }

    #[test]
    fn the_content_hash_tells_paths_and_bytes_apart() {
        let bytes: Vec<u8> = (0..100u8).collect();
        let base = content_hash("r/a.ts", &bytes);
        assert_ne!(base, content_hash("r/b.ts", &bytes));
        assert_ne!(base, content_hash("r/a.ts", &bytes[..99]));
        for i in 0..bytes.len() {
            let mut changed = bytes.clone();
            changed[i] ^= 1;
            assert_ne!(base, content_hash("r/a.ts", &changed), "byte {i}");
        }
        let mut padded = bytes.clone();
        padded.push(0);
        assert_ne!(base, content_hash("r/a.ts", &padded));
    }
}
