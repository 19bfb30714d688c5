//! The protobuf framing of a SCIP `Index`, read field by field from a stream so that only one
//! top-level field (one document) is in memory at a time.

use std::io::{BufRead, Read};

use super::error::Problem;

/// Protobuf's wire types.
pub(crate) const VARINT: u8 = 0;
/// A 64-bit fixed-width field.
pub(crate) const FIXED64: u8 = 1;
/// A length-delimited field (strings, bytes, messages, packed repeated scalars).
pub(crate) const LEN: u8 = 2;
/// A 32-bit fixed-width field.
pub(crate) const FIXED32: u8 = 5;

/// The largest length-delimited field protobuf allows.
const MAX_LEN: u64 = i32::MAX as u64;

/// A failure while reading a field: a problem with the bytes, or with reading them.
#[derive(Debug)]
pub(crate) enum WireError {
    /// The bytes are not what protobuf allows.
    Bytes(Problem),
    /// The input could not be read.
    Read(std::io::Error),
}

/// One top-level field of the index, its payload in [`Fields::payload`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FieldHead {
    /// The field number.
    pub(crate) number: u64,
    /// Its wire type.
    pub(crate) wire_type: u8,
    /// The offset of its tag in the input.
    pub(crate) offset: u64,
}

/// Reads an index's top-level fields one at a time.
pub(crate) struct Fields<R> {
    input: R,
    offset: u64,
    /// The payload of the last length-delimited field read (reused between fields).
    pub(crate) payload: Vec<u8>,
}

impl<R: BufRead> Fields<R> {
    /// Reads from `input`.
    pub(crate) fn new(input: R) -> Self {
        Fields {
            input,
            offset: 0,
            payload: Vec::new(),
        }
    }

    /// Bytes read so far.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads the next field's tag, or `None` at the end of the input. A length-delimited
    /// field's payload is then read with [`Fields::read_payload`]; any other is skipped
    /// with [`Fields::skip`].
    pub(crate) fn next_head(&mut self) -> Result<Option<FieldHead>, WireError> {
        let offset = self.offset;
        let Some(tag) = self.varint(true)? else {
            return Ok(None);
        };
        let number = tag >> 3;
        let wire_type = (tag & 7) as u8;
        if number == 0 || !matches!(wire_type, VARINT | FIXED64 | LEN | FIXED32) {
            return Err(WireError::Bytes(Problem::InvalidTag {
                tag,
                field: number,
                wire_type,
            }));
        }
        Ok(Some(FieldHead {
            number,
            wire_type,
            offset,
        }))
    }

    /// Reads the payload of a length-delimited field into [`Fields::payload`]. When the input
    /// ends early, the bytes that were there stay in the payload and the error says how many.
    pub(crate) fn read_payload(&mut self, head: FieldHead) -> Result<(), WireError> {
        self.payload.clear();
        let len = self.len(head)?;
        let got = Read::take(&mut self.input, len)
            .read_to_end(&mut self.payload)
            .map_err(WireError::Read)?;
        self.offset += got as u64;
        if (got as u64) < len {
            return Err(WireError::Bytes(Problem::TruncatedField {
                field: head.number,
                declared: len,
                found: got as u64,
            }));
        }
        Ok(())
    }

    /// Skips a field the reader does not use.
    pub(crate) fn skip(&mut self, head: FieldHead) -> Result<(), WireError> {
        let len = match head.wire_type {
            VARINT => {
                self.varint(false)?;
                return Ok(());
            }
            FIXED64 => 8,
            FIXED32 => 4,
            _ => self.len(head)?,
        };
        let got = std::io::copy(&mut Read::take(&mut self.input, len), &mut std::io::sink())
            .map_err(WireError::Read)?;
        self.offset += got;
        if got < len {
            return Err(WireError::Bytes(Problem::TruncatedField {
                field: head.number,
                declared: len,
                found: got,
            }));
        }
        Ok(())
    }

    fn len(&mut self, head: FieldHead) -> Result<u64, WireError> {
        let len = self.varint(false)?.unwrap_or_default();
        if len > MAX_LEN {
            return Err(WireError::Bytes(Problem::TooLong {
                field: head.number,
                declared: len,
            }));
        }
        Ok(len)
    }

    /// Reads a varint; `None` only when `eof_ok` and the input ends before its first byte.
    fn varint(&mut self, eof_ok: bool) -> Result<Option<u64>, WireError> {
        let start = self.offset;
        let mut value = 0u64;
        for i in 0..10 {
            let buf = self.input.fill_buf().map_err(WireError::Read)?;
            let Some(&byte) = buf.first() else {
                if i == 0 && eof_ok {
                    return Ok(None);
                }
                return Err(WireError::Bytes(Problem::TruncatedVarint { offset: start }));
            };
            self.input.consume(1);
            self.offset += 1;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(Some(value));
            }
        }
        Err(WireError::Bytes(Problem::LongVarint { offset: start }))
    }
}

/// The string field `number` of a message's bytes as a protobuf decoder reads it (the last
/// one, when the field repeats), read leniently (lossy UTF-8, stopping at the first malformed
/// byte with what was found before it): names a document, in its unit and in errors.
pub(crate) fn peek_string(message: &[u8], number: u64) -> Option<String> {
    let mut last = None;
    let mut at = 0usize;
    while at < message.len() {
        let Some((tag, n)) = slice_varint(&message[at..]) else {
            break;
        };
        at += n;
        let wire_type = (tag & 7) as u8;
        let len = match wire_type {
            VARINT => {
                let Some((_, n)) = slice_varint(&message[at..]) else {
                    break;
                };
                at += n;
                continue;
            }
            FIXED64 => 8,
            FIXED32 => 4,
            LEN => {
                let Some((len, n)) = slice_varint(&message[at..]) else {
                    break;
                };
                at += n;
                match usize::try_from(len) {
                    Ok(len) => len,
                    Err(_) => break,
                }
            }
            _ => break,
        };
        if wire_type == LEN && tag >> 3 == number {
            let end = at.saturating_add(len).min(message.len());
            last = Some(String::from_utf8_lossy(&message[at..end]).into_owned());
        }
        match at.checked_add(len) {
            Some(next) => at = next,
            None => break,
        }
    }
    last
}

/// Checks the framing of a message's own fields (not the messages nested in them): every
/// tag valid, every length within the message, and each field in `schema` (number, wire
/// type, what it holds) of its wire type. A protobuf decoder reads a known field of the wrong
/// wire type as an unknown one and drops it; this says so instead.
pub(crate) fn check_fields(
    message: &[u8],
    schema: &[(u64, u8, &'static str)],
) -> Result<(), Problem> {
    let mut at = 0usize;
    let total = message.len() as u64;
    while at < message.len() {
        let (tag, n) =
            slice_varint(&message[at..]).ok_or(Problem::Truncated { offset: at as u64 })?;
        at += n;
        let (number, wire_type) = (tag >> 3, (tag & 7) as u8);
        if number == 0 || !matches!(wire_type, VARINT | FIXED64 | LEN | FIXED32) {
            return Err(Problem::InvalidTag {
                tag,
                field: number,
                wire_type,
            });
        }
        if let Some(&(_, expected, what)) = schema.iter().find(|f| f.0 == number)
            && expected != wire_type
        {
            return Err(Problem::WrongWireType {
                field: number,
                found: wire_type,
                expected,
                what,
            });
        }
        let len = match wire_type {
            VARINT => {
                let (_, n) =
                    slice_varint(&message[at..]).ok_or(Problem::Truncated { offset: at as u64 })?;
                n as u64
            }
            FIXED64 => 8,
            FIXED32 => 4,
            _ => {
                let (len, n) =
                    slice_varint(&message[at..]).ok_or(Problem::Truncated { offset: at as u64 })?;
                at += n;
                len
            }
        };
        let left = total - at as u64;
        if len > left {
            return Err(Problem::TruncatedField {
                field: number,
                declared: len,
                found: left,
            });
        }
        at += len as usize;
    }
    Ok(())
}

/// A varint at the start of `bytes` and its length.
pub(crate) fn slice_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().take(10).enumerate() {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}
