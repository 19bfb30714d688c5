//! The redb tables of a database and the encodings of their keys and values.
//!
//! `docs/design.md` is the prose version of this file; change both together. Every integer
//! is little-endian; redb orders tuple keys element by element.

use redb::TableDefinition;

/// The format version this build writes into new files and the newest it reads.
pub const FORMAT_VERSION: u32 = 6;

/// The oldest format version this build reads (and writes into files of that version).
pub const OLDEST_VERSION: u32 = 1;

/// The first format version whose values carry checksums (see `docs/design.md`).
pub const SEALED_VERSION: u32 = 2;

/// The first format version whose values use the compact encodings (see [`Codec`]).
pub const COMPACT_VERSION: u32 = 3;

/// The first format version whose blocks may lie on a line and whose postings may follow on
/// (see [`Codec::Compact4`]).
pub const COMPACT4_VERSION: u32 = 4;

/// The first format version that stores a column block in parts of at most 1 KiB, each
/// under its own key (see `docs/design.md`); its values' encodings are version 4's.
pub const PARTED_VERSION: u32 = 5;

/// The first format version whose catalog may declare a relation's later columns without
/// postings (`RelationMeta::unindexed`; see `docs/design.md`); its values' encodings are
/// version 5's. Only a base file records it: an older build refuses the file as newer
/// rather than read an unindexed column's missing postings as no rows.
pub const DECLARED_INDEX_VERSION: u32 = 6;

/// How a file encodes the values of `blocks`, `postings`, `dead`, `owners` and `text_by_id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// Format versions 1 and 2: rkyv-archived blocks, postings as u32 lists or roaring
    /// bitmaps, roaring `dead` and `owners`, texts as they are.
    Plain,
    /// Format version 3: bit-packed blocks (frame of reference, or runs), postings and row
    /// sets as delta-coded varints or runs (roaring where it is smaller), texts front-coded in
    /// frames of 16.
    Compact,
    /// Format version 4: version 3's encodings and three more forms, which only a file of
    /// version 4 or later may hold: a block whose terms lie near a line through its rows
    /// (`crate::column`), a posting that is one run starting right after the previous
    /// posting of its chunk, and a chunk whose rows are bit-packed (`crate::index`).
    Compact4,
}

impl Codec {
    /// The encoding of a file of format version `version`.
    pub fn of_version(version: u32) -> Codec {
        if version >= COMPACT4_VERSION {
            Codec::Compact4
        } else if version >= COMPACT_VERSION {
            Codec::Compact
        } else {
            Codec::Plain
        }
    }

    /// Whether the codec is version 3's or a later one built on it.
    pub fn is_compact(self) -> bool {
        self != Codec::Plain
    }

    /// Whether the codec has version 4's forms.
    pub fn has_version_4_forms(self) -> bool {
        self == Codec::Compact4
    }
}

/// A stored value's payload (its checksum, if any, verified and taken off) with the
/// encoding its file uses. Plain byte slices convert to it as [`Codec::Plain`] payloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Payload<'a> {
    /// The bytes.
    pub bytes: &'a [u8],
    /// How they are encoded.
    pub codec: Codec,
}

impl<'a> Payload<'a> {
    /// `bytes` in the encoding `codec`.
    pub fn new(codec: Codec, bytes: &'a [u8]) -> Payload<'a> {
        Payload { bytes, codec }
    }
}

impl<'a> From<&'a [u8]> for Payload<'a> {
    fn from(bytes: &'a [u8]) -> Payload<'a> {
        Payload::new(Codec::Plain, bytes)
    }
}

impl<'a> From<&'a Vec<u8>> for Payload<'a> {
    fn from(bytes: &'a Vec<u8>) -> Payload<'a> {
        Payload::new(Codec::Plain, bytes)
    }
}

/// Rows per column block: row `r` lives in block `r / BLOCK_ROWS` at `r % BLOCK_ROWS`.
pub const BLOCK_ROWS: u32 = 4096;

/// The name of the default tier, whose relations live in `strata.redb`.
pub const DEFAULT_TIER: &str = "default";

/// The file of the default tier (and of the catalog and dictionary).
pub const BASE_FILE: &str = "strata.redb";

// ---- tables of the base file only -------------------------------------------------------

/// `meta`: named scalars. Keys: `format_version` (u32), `seq` (u64, the last committed
/// batch), `texts` (u32, text ids handed out), `numbers` (u32), `units` (u32), `relations`
/// (u32, relation ids handed out).
pub const META: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("meta");
/// `text_by_id`: `id >> 8` → a chunk of up to 256 texts (see `crate::intern`).
pub const TEXT_BY_ID: TableDefinition<'_, u32, &[u8]> = TableDefinition::new("text_by_id");
/// `id_by_text`: `crate::intern::text_hash` of a text → its id.
pub const ID_BY_TEXT: TableDefinition<'_, u64, u32> = TableDefinition::new("id_by_text");
/// `text_collisions`: a text whose hash another text has in `id_by_text` → its id.
pub const TEXT_COLLISIONS: TableDefinition<'_, &str, u32> = TableDefinition::new("text_collisions");
/// `number_by_id`: number id (0-based) → the `f64`'s bits. Integers in `0 .. 2^30` are held
/// in their terms and never appear here.
pub const NUMBER_BY_ID: TableDefinition<'_, u32, u64> = TableDefinition::new("number_by_id");
/// `id_by_number`: the `f64`'s bits → its id.
pub const ID_BY_NUMBER: TableDefinition<'_, u64, u32> = TableDefinition::new("id_by_number");
/// `relations`: relation id → the relation's [`crate::catalog::RelationMeta`] as JSON.
pub const RELATIONS: TableDefinition<'_, u32, &[u8]> = TableDefinition::new("relations");
/// `relation_ids`: relation name → relation id.
pub const RELATION_IDS: TableDefinition<'_, &str, u32> = TableDefinition::new("relation_ids");
/// `batches`: sequence number → the batch's [`crate::catalog::BatchRecord`] as JSON.
pub const BATCHES: TableDefinition<'_, u64, &[u8]> = TableDefinition::new("batches");
/// `batch_ids`: a batch id a client gave → the sequence number it was committed as.
pub const BATCH_IDS: TableDefinition<'_, &str, u64> = TableDefinition::new("batch_ids");
/// `unit_ids`: unit name → unit id (1-based; 0 stands for "stated without a unit").
pub const UNIT_IDS: TableDefinition<'_, &str, u32> = TableDefinition::new("unit_ids");
/// `unit_names`: unit id → unit name.
pub const UNIT_NAMES: TableDefinition<'_, u32, &str> = TableDefinition::new("unit_names");
/// `unit_relations`: (unit id, relation id) → nothing: the relations a unit owns facts in.
pub const UNIT_RELATIONS: TableDefinition<'_, (u32, u32), ()> =
    TableDefinition::new("unit_relations");
/// `tier_seq`: tier name → the sequence number of the last batch that wrote to the tier.
pub const TIER_SEQ: TableDefinition<'_, &str, u64> = TableDefinition::new("tier_seq");

// ---- tables of every tier file (the default tier's are in the base file) -----------------

/// `blocks`: (relation id, column, block number) → the block's terms (see `crate::column`
/// for their encoding in each [`Codec`]).
pub const BLOCKS: TableDefinition<'_, (u32, u16, u32), &[u8]> = TableDefinition::new("blocks");
/// `postings`: (relation id, column, `term >> 6`) → a chunk of the postings of up to 64
/// terms: for each, the live rows whose column holds it (see `crate::index`). Terms with
/// no live row have no posting; a chunk with no posting is not stored.
pub const POSTINGS: TableDefinition<'_, (u32, u16, u32), &[u8]> = TableDefinition::new("postings");
/// `postings_runs`: (flush, relation id, column, `term >> 6`) → the postings a batch's
/// earlier flush added to that chunk (a [`POSTINGS`] value, sealed under the chunk's
/// `postings` key). A batch that flushes more than once keeps each flush's new postings here
/// and merges them into `postings` once, at its commit, so that each chunk is written once
/// per batch; the table never outlives the batch's transaction.
pub const POSTINGS_RUNS: TableDefinition<'_, (u32, u32, u16, u32), &[u8]> =
    TableDefinition::new("postings_runs");
/// `dead`: relation id → the row ids whose fact was removed (a set of rows, see
/// `crate::index`).
pub const DEAD: TableDefinition<'_, u32, &[u8]> = TableDefinition::new("dead");
/// `owners`: (relation id, unit id) → the live rows the unit states (a set of rows, see
/// `crate::index`).
pub const OWNERS: TableDefinition<'_, (u32, u32), &[u8]> = TableDefinition::new("owners");
/// `shared`: (relation id, row) → how many units (counting "no unit") state the row, for
/// rows stated by two or more. A row absent here has exactly one owner.
pub const SHARED: TableDefinition<'_, (u32, u32), u32> = TableDefinition::new("shared");
/// `tier_meta`: named scalars of a tier file: `format_version` (u32), `applied_seq` (u64,
/// the last batch written to this file), `savepoint` (u64, the persistent savepoint taken
/// before that batch, until the base file acknowledges it).
pub const TIER_META: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("tier_meta");

/// Reads a little-endian u32 stored in a `meta` value.
pub fn get_u32(bytes: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

/// Reads a little-endian u64 stored in a `meta` value.
pub fn get_u64(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// Whether `name` may name a tier: 1 to 64 of `a-z 0-9 _ -`, starting with a letter.
pub fn valid_tier_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.as_bytes()[0].is_ascii_lowercase()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// The file name of a tier: `strata.redb` for the default tier, `tier-NAME.redb` otherwise.
pub fn tier_file(tier: &str) -> String {
    if tier == DEFAULT_TIER {
        BASE_FILE.to_owned()
    } else {
        format!("tier-{tier}.redb")
    }
}
