//! A field as the reading thread records it for the sink's thread: eight bytes, so that
//! what crosses between the two threads' caches for a line of numbers is little more
//! than its numbers.

/// One field as recorded: a number is its `f64` bits; absent and a text (by its index among
/// the chunk's texts) take bit patterns of NaN, which no recorded number keeps (a NaN is
/// recorded as one pattern of its own).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Slot(u64);

/// What a [`Slot`] holds.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Recorded {
    Absent,
    Number(f64),
    /// A text, by its index among the chunk's texts.
    Text(u32),
}

/// The pattern of a number that is NaN; those of absent and of a text (its index in the
/// low 32 bits). Each is a quiet NaN, told apart by its high 16 bits.
const NAN: u64 = 0x7FF8_0000_0000_0000;
const ABSENT: u64 = 0x7FF9_0000_0000_0000;
const TEXT: u64 = 0x7FFA_0000_0000_0000;
/// The high bits that tell the patterns apart.
const KIND: u64 = 0xFFFF_FFFF_0000_0000;

impl Slot {
    /// An absent field.
    pub(super) const ABSENT: Slot = Slot(ABSENT);

    /// The number `x` (every NaN is recorded as one).
    #[inline]
    pub(super) fn number(x: f64) -> Slot {
        if x.is_nan() {
            Slot(NAN)
        } else {
            Slot(x.to_bits())
        }
    }

    /// The text with index `i` among the chunk's texts.
    #[inline]
    pub(super) fn text(i: u32) -> Slot {
        Slot(TEXT | u64::from(i))
    }

    /// What the slot holds.
    #[inline]
    pub(super) fn get(self) -> Recorded {
        let x = f64::from_bits(self.0);
        if !x.is_nan() {
            return Recorded::Number(x);
        }
        match self.0 & KIND {
            ABSENT => Recorded::Absent,
            TEXT => Recorded::Text(self.0 as u32),
            _ => Recorded::Number(f64::NAN),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn every_kind_of_field_comes_back_as_recorded() {
        assert_eq!(Slot::ABSENT.get(), Recorded::Absent);
        for i in [0, 1, 7, u32::MAX] {
            assert_eq!(Slot::text(i).get(), Recorded::Text(i));
        }
        for x in [
            0.0,
            -0.0,
            1.0,
            -3.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE / 2.0,
            f64::MAX,
            9_007_199_254_740_993.0,
        ] {
            assert_eq!(Slot::number(x).get(), Recorded::Number(x), "{x}");
            let Recorded::Number(y) = Slot::number(x).get() else {
                panic!("{x} came back as no number");
            };
            assert_eq!(y.to_bits(), x.to_bits(), "{x}: the sign of zero too");
        }
        // Every NaN, whatever its bits (among them those of absent and of a text), is a
        // NaN number.
        for bits in [
            NAN,
            ABSENT,
            TEXT | 5,
            0xFFF8_0000_0000_0000,
            0x7FF0_0000_0000_0001,
        ] {
            let x = f64::from_bits(bits);
            assert!(x.is_nan());
            assert!(matches!(Slot::number(x).get(), Recorded::Number(y) if y.is_nan()));
        }
    }

    proptest! {
        #[test]
        fn any_number_comes_back_bit_for_bit(bits in any::<u64>()) {
            let x = f64::from_bits(bits);
            match Slot::number(x).get() {
                Recorded::Number(y) if x.is_nan() => prop_assert!(y.is_nan()),
                Recorded::Number(y) => prop_assert_eq!(y.to_bits(), bits),
                other => prop_assert!(false, "{:?} came back as {:?}", x, other),
            }
        }
    }
}
