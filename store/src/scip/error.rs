//! What can be wrong with a SCIP index, each error naming the file and the part of the index
//! (`FILE: document N (path): what is wrong`). An I/O or store failure is the error's
//! source, not part of its message; what the protobuf decoder said is said in the message,
//! in terms of the bytes.

use std::fmt;

/// A SCIP index that cannot be read; nothing of the batch it belongs to is stored.
#[derive(Debug, thiserror::Error)]
pub enum ScipError {
    /// Reading the input failed.
    #[error("{file}: cannot read")]
    Read {
        /// The index file (`-` for standard input).
        file: String,
        /// What the operating system (or the gzip decoder) said.
        #[source]
        cause: std::io::Error,
    },
    /// A document of the index cannot be read.
    #[error("{file}: document {number} ({path}): {problem}")]
    Document {
        /// The index file (`-` for standard input).
        file: String,
        /// The document's 1-based position in the index.
        number: u64,
        /// Its `relative_path` as far as it could be read, or `no path`.
        path: String,
        /// What is wrong with it.
        problem: Problem,
    },
    /// Reading what the store holds, to compare a replacing read's documents with, failed.
    #[error("{file}: reading the stored documents to compare with failed")]
    Stored {
        /// The index file (`-` for standard input).
        file: String,
        /// What the store said.
        #[source]
        cause: strata_eval::SourceError,
    },
    /// The repository named for the index does not follow the rules of `--repo`.
    #[error(
        "{file}: {name:?} cannot name a repository: a repository's name is one path segment \
         (no `/`, not empty, not `.` or `..`), as its documents are named REPO/relative_path"
    )]
    Repository {
        /// The index file (`-` for standard input).
        file: String,
        /// The name.
        name: String,
    },
    /// A replacing read of an index that holds no document would retract every stored
    /// document of its repository; refused unless the batch allows it (`--allow-empty`).
    #[error(
        "{file}: the index holds {} of repository {repo}, so --replace would retract all \
         {stored} of its stored documents; nothing was changed. If the repository really has \
         no documents now, ingest again with --allow-empty",
        no_documents(*documents)
    )]
    Empty {
        /// The index file (`-` for standard input).
        file: String,
        /// The repository.
        repo: String,
        /// The documents the index holds (each left out, when not zero).
        documents: u64,
        /// The stored documents of the repository it would retract.
        stored: u64,
    },
    /// A part of the index outside its documents (its metadata, an external symbol, the
    /// framing between fields) cannot be read.
    #[error("{file}: {place}: {problem}")]
    Index {
        /// The index file (`-` for standard input).
        file: String,
        /// Which part.
        place: Place,
        /// What is wrong with it.
        problem: Problem,
    },
}

/// `no documents`, or `no document that can be read (N left out)`.
fn no_documents(documents: u64) -> String {
    match documents {
        0 => "no documents".to_owned(),
        n => format!("no document that can be read ({n} left out)"),
    }
}

/// A part of an index outside its documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The `metadata` field.
    Metadata,
    /// The Nth (1-based) of `external_symbols`.
    ExternalSymbol(u64),
    /// A field of the index starting at this byte offset.
    Byte(u64),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Metadata => f.write_str("metadata"),
            Place::ExternalSymbol(n) => write!(f, "external symbol {n}"),
            Place::Byte(b) => write!(f, "byte {b}"),
        }
    }
}

/// What is wrong with a part of an index.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    /// The input ends inside a varint (a field's tag or length).
    #[error("truncated: the input ends inside a varint at byte {offset}")]
    TruncatedVarint {
        /// Where the varint starts.
        offset: u64,
    },
    /// A varint inside a message is cut off or runs past ten bytes.
    #[error("malformed varint at byte {offset} of the message")]
    Truncated {
        /// Where the varint starts, from the start of the message.
        offset: u64,
    },
    /// A varint runs past the ten bytes a 64-bit value takes.
    #[error("malformed varint at byte {offset}: longer than ten bytes")]
    LongVarint {
        /// Where the varint starts.
        offset: u64,
    },
    /// The input ends inside a length-delimited field.
    #[error("truncated: field {field} declares {declared} bytes but only {found} follow")]
    TruncatedField {
        /// The field number.
        field: u64,
        /// The length its header declares.
        declared: u64,
        /// The bytes that were there.
        found: u64,
    },
    /// A field of the index has a wire type its schema does not allow.
    #[error("field {field} has wire type {found}, expected {expected} ({what})")]
    WrongWireType {
        /// The field number.
        field: u64,
        /// The wire type found.
        found: u8,
        /// The wire type the schema gives it.
        expected: u8,
        /// What the field holds, for the message.
        what: &'static str,
    },
    /// A tag names field 0 or a wire type protobuf does not define.
    #[error("invalid tag {tag:#x} (field {field}, wire type {wire_type})")]
    InvalidTag {
        /// The raw tag.
        tag: u64,
        /// Its field number.
        field: u64,
        /// Its wire type.
        wire_type: u8,
    },
    /// A length-delimited field declares more than 2 GiB, more than protobuf allows.
    #[error("field {field} declares {declared} bytes, more than a protobuf message may hold")]
    TooLong {
        /// The field number.
        field: u64,
        /// The declared length.
        declared: u64,
    },
    /// The message's bytes do not decode as its SCIP type.
    #[error("not a valid SCIP {what}: {}", explain(cause))]
    Decode {
        /// The message type (`Document`, `Metadata`...).
        what: &'static str,
        /// What the protobuf decoder said (part of the message, so not chained again).
        cause: protobuf::Error,
    },
    /// A document has no `relative_path`.
    #[error("the document has no relative_path")]
    NoPath,
    /// The repository that qualifies document paths is unknown.
    #[error(
        "the index names no repository (its metadata.project_root is empty or comes after \
         the documents); name it with --unit REPO"
    )]
    NoRepository,
    /// The metadata's project root ends in a segment that cannot name a repository.
    #[error(
        "the index's metadata.project_root {0:?} names no repository (its last segment is \
         empty, `.`, `..` or a URI scheme); name it with --repo REPO"
    )]
    RootNamesNoRepository(String),
}

/// The protobuf decoder's message, said in terms of the bytes (rust-protobuf 3.7's texts for
/// the failures a truncated or corrupted message gives; any other text as it is).
fn explain(cause: &protobuf::Error) -> String {
    let text = cause.to_string();
    match text.as_str() {
        "Unexpected EOF" | "Truncated message" => {
            "truncated: a nested message ends before its last field does".to_owned()
        }
        "New limit must not be greater than current limit" => {
            "truncated: a nested message declares more bytes than the message holding it".to_owned()
        }
        "Invalid UTF-8 sequence" | "UTF-8 decode error" => "a string is not valid UTF-8".to_owned(),
        "Incorrect varint" => {
            "malformed varint (longer than ten bytes) in a nested message".to_owned()
        }
        "Incorrect tag" => {
            "invalid tag (field 0 or wire type 6 or 7) in a nested message".to_owned()
        }
        "Over recursion limit" => "messages nested too deep".to_owned(),
        _ => text,
    }
}
