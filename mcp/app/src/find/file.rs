//! The persistent name index: one file per database, `DIR/find-<texts>.idx`, covering the
//! dictionary's texts `1..=texts`, written once (temporary file, then rename) and read
//! whole into memory ([`IndexFile`]): not mapped, so a file truncated or rewritten while in
//! use cannot fault the process (a mapped page past a shortened file's end is SIGBUS).
//!
//! Layout (little-endian): a 64-byte header (magic, format version, the texts covered, a
//! fingerprint of the first and last of them, the body's length and CRC-32), then the body:
//! a table of [`SECTIONS`] (offset, length) pairs and the sections. Texts are numbered by
//! their rank (shorter first, then by bytes: the order `find` ranks ties in), so the first
//! members of any set of numbers are its best. The sections: each number's dictionary id,
//! the texts in number order and their end offsets, the numbers of non-ASCII texts (not
//! filed under keys; a search classifies them one by one), three sorted key lists (segments,
//! first segments, words and the segment breaks each text holds: keys separated by `\n`,
//! their start offsets, and where each key's posting list is), the fuzzy candidates as an `fst` map to their posting lists, and the
//! posting lists.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use roaring::RoaringBitmap;

use super::keys::{break_keys, cand, decode_postings, encode_postings, lower_words, segments};

/// The file's first bytes.
const MAGIC: &[u8; 8] = b"STRFIND\0";

/// The layout's version: a file of another version is rebuilt.
pub(super) const VERSION: u32 = 1;

const HEADER_LEN: usize = 64;

/// The sections, in the table's order.
pub(super) const SECTIONS: usize = 15;
const ORD_ID: usize = 0;
const TEXT_ENDS: usize = 1;
const TEXTS: usize = 2;
const NON_ASCII: usize = 3;
/// Segments, first segments and words: each a key list (keys, offsets, posting offsets).
const SEGS: usize = 4;
const FIRSTS: usize = 7;
const WORDS: usize = 10;
const CANDS: usize = 13;
const POSTINGS: usize = 14;

/// Why an index file was not read.
#[derive(Debug, thiserror::Error)]
pub enum IndexFileError {
    /// Reading or writing it failed.
    #[error("find index {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// It is not a whole, intact index of this layout version.
    #[error("find index {path}: {what}")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: &'static str,
    },
}

/// The name of the index file covering `texts` texts.
pub(super) fn file_name(texts: u32) -> String {
    format!("find-{texts}.idx")
}

/// The texts an index file's name says it covers (`find-<texts>.idx`).
pub(super) fn covered_by_name(name: &str) -> Option<u32> {
    name.strip_prefix("find-")?
        .strip_suffix(".idx")?
        .parse()
        .ok()
}

/// A fingerprint of the dictionary a file covers: CRC-32 of its first and last text.
pub(super) fn fingerprint(first: &str, last: &str) -> u64 {
    u64::from(crc32fast::hash(first.as_bytes())) << 32 | u64::from(crc32fast::hash(last.as_bytes()))
}

/// The texts an index is built from: ids `1..=len`, back to back.
#[derive(Default)]
pub(super) struct Texts {
    buf: String,
    ends: Vec<usize>,
}

impl Texts {
    /// Adds the next text.
    pub(super) fn push(&mut self, text: &str) {
        self.buf.push_str(text);
        self.ends.push(self.buf.len());
    }

    /// How many it holds.
    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The text with 0-based number `i`.
    fn get(&self, i: usize) -> &str {
        let start = i.checked_sub(1).map_or(0, |j| self.ends[j]);
        &self.buf[start..self.ends[i]]
    }
}

/// Key lists being built: each key's text numbers, ascending.
#[derive(Default)]
struct Keyed(rustc_hash::FxHashMap<Box<str>, Vec<u32>>);

impl Keyed {
    fn add(&mut self, key: &str, ord: u32) {
        match self.0.get_mut(key) {
            Some(list) => {
                if list.last() != Some(&ord) {
                    list.push(ord);
                }
            }
            None => {
                self.0.insert(key.into(), vec![ord]);
            }
        }
    }

    /// The keys in byte order with their lists.
    fn sorted(self) -> Vec<(Box<str>, Vec<u32>)> {
        let mut all: Vec<_> = self.0.into_iter().collect();
        all.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        all
    }
}

/// Writes the index of `texts` to `path` (through a temporary file renamed over it, so a
/// reader sees a whole file or none).
pub(super) fn write(path: &Path, texts: &Texts) -> Result<(), IndexFileError> {
    let io = |source| IndexFileError::Io {
        path: path.to_owned(),
        source,
    };
    let sections = build(texts);
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let result = (|| {
        let mut file = BufWriter::new(File::create(&tmp)?);
        file.write_all(&[0u8; HEADER_LEN])?;
        let mut crc = crc32fast::Hasher::new();
        let mut table = Vec::with_capacity(SECTIONS * 16);
        let mut at = (HEADER_LEN + SECTIONS * 16) as u64;
        for s in &sections {
            table.extend_from_slice(&at.to_le_bytes());
            table.extend_from_slice(&(s.len() as u64).to_le_bytes());
            at += padded(s.len()) as u64;
        }
        crc.update(&table);
        file.write_all(&table)?;
        for s in &sections {
            let pad = [0u8; 8];
            let pad = &pad[..padded(s.len()) - s.len()];
            crc.update(s);
            crc.update(pad);
            file.write_all(s)?;
            file.write_all(pad)?;
        }
        let body = at - HEADER_LEN as u64;
        let n = texts.len() as u32;
        let fp = match n {
            0 => 0,
            _ => fingerprint(texts.get(0), texts.get(n as usize - 1)),
        };
        let mut header = [0u8; HEADER_LEN];
        header[..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&VERSION.to_le_bytes());
        header[12..16].copy_from_slice(&n.to_le_bytes());
        header[16..24].copy_from_slice(&fp.to_le_bytes());
        header[24..32].copy_from_slice(&body.to_le_bytes());
        header[32..36].copy_from_slice(&crc.finalize().to_le_bytes());
        header[36..40].copy_from_slice(&(SECTIONS as u32).to_le_bytes());
        let mut file = file.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&header)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io)
}

/// Sets the header fields of the index file `data` that say its body is whole (magic,
/// version, section count, body length, checksum) to what they must be for its body, as
/// [`write`] does: for the fuzz target, which then tries the body's structure.
pub(super) fn seal(data: &mut [u8]) {
    if data.len() < HEADER_LEN {
        return;
    }
    let body = (data.len() - HEADER_LEN) as u64;
    let crc = crc32fast::hash(&data[HEADER_LEN..]);
    data[..8].copy_from_slice(MAGIC);
    data[8..12].copy_from_slice(&VERSION.to_le_bytes());
    data[24..32].copy_from_slice(&body.to_le_bytes());
    data[32..36].copy_from_slice(&crc.to_le_bytes());
    data[36..40].copy_from_slice(&(SECTIONS as u32).to_le_bytes());
}

fn padded(n: usize) -> usize {
    n.div_ceil(8) * 8
}

/// The sections of the index of `texts`.
fn build(texts: &Texts) -> Vec<Vec<u8>> {
    let n = texts.len();
    let mut ords: Vec<u32> = (0..n as u32).collect();
    ords.sort_unstable_by(|&a, &b| {
        let (a, b) = (texts.get(a as usize), texts.get(b as usize));
        a.len().cmp(&b.len()).then_with(|| a.cmp(b))
    });
    let mut ord_id = Vec::with_capacity(n * 4);
    let mut ends = Vec::with_capacity(n * 8);
    let mut blob = Vec::new();
    let mut non_ascii = Vec::new();
    let (mut segs, mut firsts, mut words, mut cands) = Default::default();
    let (segs, firsts, words, cands): (&mut Keyed, &mut Keyed, &mut Keyed, &mut Keyed) =
        (&mut segs, &mut firsts, &mut words, &mut cands);
    let mut lower = String::new();
    for (ord, &i) in ords.iter().enumerate() {
        let ord = ord as u32;
        let text = texts.get(i as usize);
        ord_id.extend_from_slice(&(i + 1).to_le_bytes());
        blob.extend_from_slice(text.as_bytes());
        ends.extend_from_slice(&(blob.len() as u64).to_le_bytes());
        if !text.is_ascii() {
            non_ascii.extend_from_slice(&ord.to_le_bytes());
            continue;
        }
        lower.clear();
        lower.push_str(text);
        lower.make_ascii_lowercase();
        let mut first = true;
        for s in segments(&lower) {
            segs.add(s, ord);
            if first {
                firsts.add(s, ord);
                first = false;
            }
        }
        for w in lower_words(text) {
            words.add(&w, ord);
        }
        for k in break_keys(&lower) {
            // Break keys are ASCII.
            words.add(std::str::from_utf8(&k).unwrap_or_default(), ord);
        }
        cands.add(cand(&lower), ord);
    }
    let mut postings = Vec::new();
    let mut out = vec![ord_id, ends, blob, non_ascii];
    for keyed in [
        std::mem::take(segs),
        std::mem::take(firsts),
        std::mem::take(words),
    ] {
        let (mut keys, mut offs, mut posts) = (Vec::new(), Vec::new(), Vec::new());
        for (key, list) in keyed.sorted() {
            offs.extend_from_slice(&(keys.len() as u64).to_le_bytes());
            keys.extend_from_slice(key.as_bytes());
            keys.push(b'\n');
            posts.extend_from_slice(&(postings.len() as u64).to_le_bytes());
            encode_postings(&list, &mut postings);
        }
        offs.extend_from_slice(&(keys.len() as u64).to_le_bytes());
        out.extend([keys, offs, posts]);
    }
    let mut fst = fst::MapBuilder::memory();
    for (key, list) in std::mem::take(cands).sorted() {
        // Keys come sorted and distinct, so inserting cannot fail.
        let _ = fst.insert(key.as_bytes(), postings.len() as u64);
        encode_postings(&list, &mut postings);
    }
    out.push(fst.into_inner().unwrap_or_default());
    out.push(postings);
    out
}

/// A part of the mapped file, for the `fst` map.
#[derive(Clone)]
pub(super) struct Section {
    map: Arc<[u8]>,
    range: Range<usize>,
}

impl AsRef<[u8]> for Section {
    fn as_ref(&self) -> &[u8] {
        &self.map[self.range.clone()]
    }
}

/// One sorted key list of an index file.
#[derive(Clone, Copy)]
pub(super) struct KeyList<'a> {
    /// The keys, each followed by `\n`.
    pub(super) keys: &'a [u8],
    offs: &'a [u8],
    posts: &'a [u8],
}

impl<'a> KeyList<'a> {
    /// How many keys.
    pub(super) fn len(&self) -> usize {
        (self.offs.len() / 8).saturating_sub(1)
    }

    /// Where key `i` starts in [`KeyList::keys`].
    pub(super) fn start(&self, i: usize) -> Option<usize> {
        u64_at(self.offs, i).and_then(|x| usize::try_from(x).ok())
    }

    /// Key `i`.
    pub(super) fn key(&self, i: usize) -> Option<&'a [u8]> {
        let (a, b) = (self.start(i)?, self.start(i + 1)?);
        self.keys.get(a..b.checked_sub(1)?)
    }

    /// The number of the key whose bytes hold position `pos` of [`KeyList::keys`].
    pub(super) fn key_at(&self, pos: usize) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.start(mid + 1)? <= pos {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        (lo < self.len()).then_some(lo)
    }

    /// The first key not below `key` (or [`KeyList::len`]).
    pub(super) fn lower_bound(&self, key: &[u8]) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.key(mid)? < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    }

    /// The keys starting with `prefix`: a range of key numbers.
    pub(super) fn prefixed(&self, prefix: &[u8]) -> Option<Range<usize>> {
        let lo = self.lower_bound(prefix)?;
        let mut hi = lo;
        while hi < self.len() && self.key(hi)?.starts_with(prefix) {
            hi += 1;
        }
        Some(lo..hi)
    }

    /// The number of `key`, if listed.
    pub(super) fn find(&self, key: &[u8]) -> Option<Option<usize>> {
        let i = self.lower_bound(key)?;
        Some((i < self.len() && self.key(i)? == key).then_some(i))
    }

    /// Where key `i`'s posting list is.
    pub(super) fn posting(&self, i: usize) -> Option<u64> {
        u64_at(self.posts, i)
    }
}

fn u64_at(bytes: &[u8], i: usize) -> Option<u64> {
    let b = bytes.get(i.checked_mul(8)?..i.checked_mul(8)?.checked_add(8)?)?;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

fn u32_at(bytes: &[u8], i: usize) -> Option<u32> {
    let b = bytes.get(i.checked_mul(4)?..i.checked_mul(4)?.checked_add(4)?)?;
    Some(u32::from_le_bytes(b.try_into().ok()?))
}

/// An index file, checked and mapped.
pub(super) struct IndexFile {
    map: Arc<[u8]>,
    texts: u32,
    fingerprint: u64,
    sections: Vec<Range<usize>>,
    cands: fst::Map<Section>,
    path: PathBuf,
}

impl std::fmt::Debug for IndexFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexFile")
            .field("path", &self.path)
            .field("texts", &self.texts)
            .finish()
    }
}

impl IndexFile {
    /// Reads the file at `path` (a regular file: a FIFO or a directory there is an error at
    /// once) and checks it whole: magic, version, length, the CRC-32 of its body and its
    /// sections' bounds. What is checked is the copy in memory, which every later use reads.
    pub(super) fn open(path: &Path) -> Result<IndexFile, IndexFileError> {
        let io = |source| IndexFileError::Io {
            path: path.to_owned(),
            source,
        };
        let damaged = |what| IndexFileError::Damaged {
            path: path.to_owned(),
            what,
        };
        let (file, len) = crate::regular::open(path, u64::MAX).map_err(io)?;
        if len < HEADER_LEN as u64 {
            return Err(damaged("shorter than its header"));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        // One byte more than the file said, to see a file that grew meanwhile.
        file.take(len.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() as u64 != len {
            return Err(damaged("truncated or of the wrong length"));
        }
        let mut header = [0u8; HEADER_LEN];
        header.copy_from_slice(&bytes[..HEADER_LEN]);
        if &header[..8] != MAGIC {
            return Err(damaged("not a find index"));
        }
        let word =
            |a: usize| u32::from_le_bytes([header[a], header[a + 1], header[a + 2], header[a + 3]]);
        let dword = |a: usize| u64::from(word(a)) | u64::from(word(a + 4)) << 32;
        if word(8) != VERSION {
            return Err(damaged("of another layout version"));
        }
        if word(36) as usize != SECTIONS || dword(24) != len - HEADER_LEN as u64 {
            return Err(damaged("truncated or of the wrong length"));
        }
        if crc32fast::hash(&bytes[HEADER_LEN..]) != word(32) {
            return Err(damaged("its checksum does not match"));
        }
        let map: Arc<[u8]> = bytes.into();
        let texts = word(12);
        let mut sections = Vec::with_capacity(SECTIONS);
        for i in 0..SECTIONS {
            let at = HEADER_LEN + i * 16;
            let (off, n) = (u64_at(&map[at..], 0), u64_at(&map[at..], 1));
            let range = off
                .zip(n)
                .and_then(|(o, n)| {
                    Some(usize::try_from(o).ok()?..usize::try_from(o.checked_add(n)?).ok()?)
                })
                .filter(|r| r.end <= map.len())
                .ok_or_else(|| damaged("a section lies outside the file"))?;
            sections.push(range);
        }
        let n = texts as usize;
        if sections[ORD_ID].len() != n * 4 || sections[TEXT_ENDS].len() != n * 8 {
            return Err(damaged("its text tables do not match its text count"));
        }
        let cands = fst::Map::new(Section {
            map: map.clone(),
            range: sections[CANDS].clone(),
        })
        .map_err(|_| damaged("its fuzzy candidates are malformed"))?;
        Ok(IndexFile {
            map,
            texts,
            fingerprint: dword(16),
            sections,
            cands,
            path: path.to_owned(),
        })
    }

    /// The texts it covers: ids `1..=texts`.
    pub(super) fn texts(&self) -> u32 {
        self.texts
    }

    /// Its fingerprint of the dictionary ([`fingerprint`]).
    pub(super) fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// Its path.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    fn section(&self, i: usize) -> &[u8] {
        self.sections
            .get(i)
            .and_then(|r| self.map.get(r.clone()))
            .unwrap_or_default()
    }

    /// The dictionary id of text number `ord`.
    pub(super) fn id(&self, ord: u32) -> Option<u32> {
        u32_at(self.section(ORD_ID), ord as usize)
    }

    /// Text number `ord`.
    pub(super) fn text(&self, ord: u32) -> Option<&str> {
        let ends = self.section(TEXT_ENDS);
        let end = usize::try_from(u64_at(ends, ord as usize)?).ok()?;
        let start = match ord.checked_sub(1) {
            Some(p) => usize::try_from(u64_at(ends, p as usize)?).ok()?,
            None => 0,
        };
        std::str::from_utf8(self.section(TEXTS).get(start..end)?).ok()
    }

    /// The length of text number `ord`, in bytes.
    pub(super) fn text_len(&self, ord: u32) -> Option<usize> {
        let ends = self.section(TEXT_ENDS);
        let end = u64_at(ends, ord as usize)?;
        let start = ord
            .checked_sub(1)
            .map_or(Some(0), |p| u64_at(ends, p as usize))?;
        usize::try_from(end.checked_sub(start)?).ok()
    }

    /// The numbers of the non-ASCII texts.
    pub(super) fn non_ascii(&self) -> impl Iterator<Item = u32> + '_ {
        let s = self.section(NON_ASCII);
        (0..s.len() / 4).filter_map(move |i| u32_at(s, i))
    }

    /// The segments' key list.
    pub(super) fn segments(&self) -> KeyList<'_> {
        self.key_list(SEGS)
    }

    /// The first segments' key list.
    pub(super) fn firsts(&self) -> KeyList<'_> {
        self.key_list(FIRSTS)
    }

    /// The words' key list.
    pub(super) fn words(&self) -> KeyList<'_> {
        self.key_list(WORDS)
    }

    fn key_list(&self, at: usize) -> KeyList<'_> {
        KeyList {
            keys: self.section(at),
            offs: self.section(at + 1),
            posts: self.section(at + 2),
        }
    }

    /// The fuzzy candidates, each to where its posting list is.
    pub(super) fn cands(&self) -> &fst::Map<Section> {
        &self.cands
    }

    /// The posting list at `at`.
    pub(super) fn postings(&self, at: u64) -> Option<RoaringBitmap> {
        decode_postings(self.section(POSTINGS).get(usize::try_from(at).ok()?..)?)
    }
}
