//! Fresh after every commit: re-reading a whole new index of a repository with `--replace`
//! rewrites only the documents that changed.
//!
//! Every document's facts include `document_hash(path, hash)`, a hash of the document's bytes
//! in the index (with the path and this reader's version). While a batch replaces, a document
//! whose hash is the one stored is skipped without being decoded (its stored facts stay, as
//! they are what it would state again); any other document replaces its unit; and every
//! document the store holds under the repository (`REPO/...`) that the new index lacks is
//! retracted. [`DocumentChanges`] counts each.

use std::hash::{Hash, Hasher};
use std::ops::ControlFlow;

use rustc_hash::FxHashSet;
use strata_eval::{FactSource, SourceError, Value};

type Result<T> = std::result::Result<T, SourceError>;

/// Bumped whenever the facts read from a document change for the same bytes, so that a
/// re-ingest after an upgrade rewrites every document.
const READER_VERSION: u32 = 1;

/// What a replacing read did with each document of an index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
}

impl DocumentChanges {
    /// Adds another read's counts (a batch reading several indexes).
    pub fn add(&mut self, other: &DocumentChanges) {
        self.read += other.read;
        self.unchanged += other.unchanged;
        self.replaced += other.replaced;
        self.added += other.added;
        self.removed += other.removed;
    }
}

impl DocumentChanges {
    /// Whether a replacing read compared the documents with the stored ones (otherwise the
    /// counts but `read` are zero).
    pub fn compared(&self) -> bool {
        self.unchanged + self.replaced + self.added + self.removed > 0
    }
}

/// `N documents unchanged, M replaced, A added, K removed` for a replacing read, `N documents
/// read` for one that adds to what is stored.
impl std::fmt::Display for DocumentChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.compared() {
            let s = if self.read == 1 { "" } else { "s" };
            return write!(f, "{} document{s} read", self.read);
        }
        write!(
            f,
            "{} documents unchanged, {} replaced, {} added, {} removed",
            self.unchanged, self.replaced, self.added, self.removed
        )
    }
}

/// The content hash of a document: 128 bits, as 32 hex digits.
///
/// SipHash from std with two domain prefixes: should a Rust release change it, the next
/// replacing ingest rewrites every document once, nothing worse.
pub(crate) fn content_hash(path: &str, bytes: &[u8]) -> String {
    let half = |domain: u8| {
        let mut h = std::hash::DefaultHasher::new();
        (domain, READER_VERSION, path).hash(&mut h);
        h.write(bytes);
        h.finish()
    };
    format!("{:016x}{:016x}", half(0), half(1))
}

/// The documents a replacing read compares against: the store as the batch began.
pub(crate) struct Fresh {
    stored: crate::Snapshot,
    /// The stored documents under the repository, read on the first document.
    under_repo: Option<FxHashSet<String>>,
    /// The documents of the new index.
    seen: FxHashSet<String>,
    pub(crate) changes: DocumentChanges,
}

impl Fresh {
    /// Compares against `stored`.
    pub(crate) fn new(stored: crate::Snapshot) -> Self {
        Fresh {
            stored,
            under_repo: None,
            seen: FxHashSet::default(),
            changes: DocumentChanges::default(),
        }
    }

    /// Whether the document at `path` with content `hash` is stored as it is; counts it.
    pub(crate) fn unchanged(&mut self, repo: &str, path: &str, hash: &str) -> Result<bool> {
        if self.under_repo.is_none() {
            self.under_repo = Some(self.documents_under(repo)?);
        }
        self.seen.insert(path.to_owned());
        if !self.under_repo.as_ref().is_some_and(|d| d.contains(path)) {
            self.changes.added += 1;
            return Ok(false);
        }
        if self.stored_hash(path)?.as_deref() == Some(hash) {
            self.changes.unchanged += 1;
            return Ok(true);
        }
        self.changes.replaced += 1;
        Ok(false)
    }

    /// The stored documents under the repository that the new index lacks, sorted.
    pub(crate) fn missing(&mut self, repo: &str) -> Result<Vec<String>> {
        let stored = match self.under_repo.take() {
            Some(s) => s,
            None => self.documents_under(repo)?,
        };
        let mut gone: Vec<String> = stored.difference(&self.seen).cloned().collect();
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

    fn stored_hash(&self, path: &str) -> Result<Option<String>> {
        if self.stored.relation("document_hash")?.is_none() {
            return Ok(None);
        }
        let Some(term) = self.stored.term(&Value::text(path))? else {
            return Ok(None);
        };
        let mut found = None;
        self.stored
            .lookup("document_hash", &[(0, term)], &mut |row| {
                found = Some(row[1]);
                ControlFlow::Break(())
            })?;
        match found {
            Some(t) => match self.stored.value(t)? {
                Value::Text(h) => Ok(Some(h.to_string())),
                _ => Ok(None),
            },
            None => Ok(None),
        }
    }
}
