//! A list consumed from its end that gives its memory back as it shrinks ([`Shrinking`]):
//! what a batch holds once and reads through once (sorted keys as their rows are added, a
//! column's terms as its pairs are made, the pairs as its postings are encoded) is let go of
//! as it goes, so that it and what it becomes are never both held whole.

/// How many items a [`Shrinking`] list gives up between giving memory back.
const FREE_EVERY: usize = 1 << 20;

/// A list taken from its end, its allocation shrunk every [`FREE_EVERY`] items taken.
pub(crate) struct Shrinking<T> {
    items: Vec<T>,
}

impl<T> Shrinking<T> {
    /// `items`, to be taken last first.
    pub(crate) fn new(items: Vec<T>) -> Shrinking<T> {
        Shrinking { items }
    }

    /// `items`, to be taken first first (reversed once, in place).
    pub(crate) fn in_order(mut items: Vec<T>) -> Shrinking<T> {
        items.reverse();
        Shrinking { items }
    }

    /// How many items are left.
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// Takes the next item, if any.
    pub(crate) fn pop(&mut self) -> Option<T> {
        let item = self.items.pop();
        if self.items.len().is_multiple_of(FREE_EVERY) {
            self.items.shrink_to_fit();
        }
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_out_in_the_order_asked_and_memory_goes_back() {
        let n = FREE_EVERY + 5;
        let mut s = Shrinking::in_order((0..n).collect::<Vec<usize>>());
        for i in 0..6 {
            assert_eq!(s.pop(), Some(i));
        }
        // Past a multiple of FREE_EVERY left: shrunk to what is left.
        assert_eq!(s.len(), FREE_EVERY - 1);
        assert!(s.items.capacity() < n);
        let mut last = Shrinking::new(vec![1, 2, 3]);
        assert_eq!(
            (last.pop(), last.pop(), last.pop(), last.pop()),
            (Some(3), Some(2), Some(1), None)
        );
    }
}
