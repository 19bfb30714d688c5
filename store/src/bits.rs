//! The integers of format version 3's compact encodings: LEB128 varints and bit-packed
//! arrays of unsigned integers of one width (little-endian bit order: value `i` of width
//! `w` occupies bits `i * w ..` of the packed bytes, least significant first).

use crate::error::Damage;

/// Appends `v` as a LEB128 varint (7 bits a byte, least significant first).
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads bytes in order, as the compact encodings' decoders do.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    /// What the bytes are, for errors.
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`, which are `what` (named in errors).
    pub(crate) fn new(bytes: &'a [u8], what: &'static str) -> Reader<'a> {
        Reader { bytes, at: 0, what }
    }

    /// The error for malformed bytes.
    pub(crate) fn bad(&self) -> Damage {
        Damage::Format(format!("{} is malformed", self.what))
    }

    /// Where the reader is.
    pub(crate) fn position(&self) -> usize {
        self.at
    }

    /// Whether every byte was read.
    pub(crate) fn is_done(&self) -> bool {
        self.at == self.bytes.len()
    }

    /// The next varint (at most 10 bytes, fitting a u64).
    pub(crate) fn varint(&mut self) -> Result<u64, Damage> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let &b = self.bytes.get(self.at).ok_or_else(|| self.bad())?;
            self.at += 1;
            let part = u64::from(b & 0x7f);
            if shift == 63 && part > 1 {
                return Err(self.bad());
            }
            v |= part << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.bad())
    }

    /// The next varint, which must fit a u32.
    pub(crate) fn varint_u32(&mut self) -> Result<u32, Damage> {
        let v = self.varint()?;
        u32::try_from(v).map_err(|_| self.bad())
    }

    /// Steps over `n` varints without decoding them.
    pub(crate) fn skip_varints(&mut self, mut n: u64) -> Result<(), Damage> {
        while n > 0 {
            let &b = self.bytes.get(self.at).ok_or_else(|| self.bad())?;
            self.at += 1;
            if b & 0x80 == 0 {
                n -= 1;
            }
        }
        Ok(())
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], Damage> {
        let end = self.at.checked_add(n).ok_or_else(|| self.bad())?;
        let s = self.bytes.get(self.at..end).ok_or_else(|| self.bad())?;
        self.at = end;
        Ok(s)
    }

    /// The next byte.
    pub(crate) fn u8(&mut self) -> Result<u8, Damage> {
        Ok(self.take(1)?[0])
    }

    /// The next little-endian u16.
    pub(crate) fn u16(&mut self) -> Result<u16, Damage> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    /// The next little-endian u32.
    pub(crate) fn u32(&mut self) -> Result<u32, Damage> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// The bits needed to hold `v` (0 for 0).
pub(crate) fn width(v: u32) -> u8 {
    (32 - v.leading_zeros()) as u8
}

/// Bytes of `n` values of `width` bits, packed.
pub(crate) fn packed_len(n: usize, width: u8) -> usize {
    (n * usize::from(width)).div_ceil(8)
}

/// Appends `values` packed at `width` bits each (each must fit).
pub(crate) fn pack(out: &mut Vec<u8>, values: impl Iterator<Item = u32>, width: u8) {
    let start = out.len();
    let mut n = 0usize;
    if width == 0 {
        values.for_each(|_| n += 1);
        debug_assert_eq!(out.len() - start, packed_len(n, width));
        return;
    }
    // Four bytes at a time: below 32 bits held, a value of at most 32 more fits the word.
    let mut acc = 0u64;
    let mut held = 0u32;
    for v in values {
        n += 1;
        acc |= u64::from(v) << held;
        held += u32::from(width);
        if held >= 32 {
            out.extend_from_slice(&(acc as u32).to_le_bytes());
            acc >>= 32;
            held -= 32;
        }
    }
    while held > 0 {
        out.push(acc as u8);
        acc >>= 8;
        held = held.saturating_sub(8);
    }
    debug_assert_eq!(out.len() - start, packed_len(n, width));
}

/// Value `i` of values packed at `width` bits (at most 32) in `packed`; bits past the end of
/// `packed` read as 0 (callers check lengths first).
#[inline]
pub(crate) fn unpack(packed: &[u8], width: u8, i: usize) -> u32 {
    if width == 0 {
        return 0;
    }
    let bit = i * usize::from(width);
    let at = bit / 8;
    let word = match packed.get(at..at + 8) {
        Some(w) => u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]),
        None => {
            let mut word = [0u8; 8];
            for (k, b) in packed.iter().skip(at).take(8).enumerate() {
                word[k] = *b;
            }
            u64::from_le_bytes(word)
        }
    };
    ((word >> (bit % 8)) & ((1u64 << width) - 1)) as u32
}

/// Appends values `0 .. n` packed at `width` bits in `packed` to `out`, each plus `base`
/// (wrapping).
pub(crate) fn unpack_all(packed: &[u8], width: u8, n: usize, base: u32, out: &mut Vec<u32>) {
    out.reserve(n);
    if width == 0 {
        out.extend(std::iter::repeat_n(base, n));
        return;
    }
    let w = usize::from(width);
    let mask = (1u64 << width) - 1;
    // A value whose eight bytes from its first lie inside `packed` is one unaligned word
    // read; the last few go through `unpack`, which reads past the end as zeros.
    out.extend((0..n).map(|i| {
        let bit = i * w;
        let at = bit / 8;
        let v = match packed.get(at..at + 8) {
            Some(bytes) => {
                let mut word = [0u8; 8];
                word.copy_from_slice(bytes);
                ((u64::from_le_bytes(word) >> (bit % 8)) & mask) as u32
            }
            None => unpack(packed, width, i),
        };
        base.wrapping_add(v)
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_refuse_overlong() {
        let mut out = Vec::new();
        let vals = [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX];
        for &v in &vals {
            put_varint(&mut out, v);
        }
        let mut r = Reader::new(&out, "test");
        for &v in &vals {
            assert_eq!(r.varint().unwrap(), v);
        }
        assert!(r.is_done());
        assert!(Reader::new(&[0xff; 11], "t").varint().is_err());
        assert!(Reader::new(&[0x80], "t").varint().is_err());
        let mut r = Reader::new(&out, "t");
        r.skip_varints(6).unwrap();
        assert_eq!(r.varint().unwrap(), u64::MAX);
    }

    #[test]
    fn packing_round_trips_at_every_width() {
        for w in 0..=32u8 {
            let max = if w == 0 { 0 } else { u32::MAX >> (32 - w) };
            let vals: Vec<u32> = (0..100u32)
                .map(|i| i.wrapping_mul(2_654_435_761) & max)
                .collect();
            // Every length (a partial last word, byte, or none), after bytes already held.
            for n in 0..vals.len() {
                let mut out = vec![0xA5];
                pack(&mut out, vals[..n].iter().copied(), w);
                assert_eq!(out.len(), 1 + packed_len(n, w), "width {w}, {n} values");
                assert_eq!(out[0], 0xA5);
                for (i, &v) in vals[..n].iter().enumerate() {
                    assert_eq!(unpack(&out[1..], w, i), v, "width {w}, {n} values");
                }
            }
            let mut out = Vec::new();
            pack(&mut out, vals.iter().copied(), w);
            assert_eq!(out.len(), packed_len(vals.len(), w));
            for (i, &v) in vals.iter().enumerate() {
                assert_eq!(unpack(&out, w, i), v, "width {w} value {i}");
            }
            let mut all = Vec::new();
            unpack_all(&out, w, vals.len(), 3, &mut all);
            let plus: Vec<u32> = vals.iter().map(|v| v.wrapping_add(3)).collect();
            assert_eq!(all, plus, "width {w}");
        }
        assert_eq!(width(0), 0);
        assert_eq!(width(1), 1);
        assert_eq!(width(u32::MAX), 32);
    }
}
