//! A series' index of closed history blocks (`history.rs`): a deque of [`Closed`] entries
//! in fixed chunks of [`CHUNK`].
//!
//! Every live series keeps one, and it grows a block at a time until the history's cap, then
//! drops one at the front for each it adds at the back. A `VecDeque` grown by reallocation
//! leaves each series' previous, smaller buffer behind in the allocator at a size no other
//! series asks for any more (a 10,000-series run at the cap held about 1.3 bytes a kept point
//! where the entries need 0.25-0.45); chunks of one size are reused exactly, and a
//! series holds at most one chunk it does not fill at each end.

use std::collections::VecDeque;

use crate::stream::join::history_log::Closed;

/// Entries a chunk: 16 × 32 bytes.
pub const CHUNK: usize = 16;

type Chunk = [Option<Closed>; CHUNK];

/// Closed blocks, oldest first.
#[derive(Default)]
pub struct BlockIndex {
    chunks: VecDeque<Box<Chunk>>,
    /// Where the first entry is in the first chunk.
    head: usize,
    len: usize,
}

impl BlockIndex {
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn get(&self, i: usize) -> Option<&Closed> {
        if i >= self.len {
            return None;
        }
        let at = self.head + i;
        self.chunks[at / CHUNK][at % CHUNK].as_ref()
    }

    pub fn front(&self) -> Option<&Closed> {
        self.get(0)
    }

    pub fn back(&self) -> Option<&Closed> {
        self.len.checked_sub(1).and_then(|i| self.get(i))
    }

    pub fn push_back(&mut self, c: Closed) {
        let at = self.head + self.len;
        if at / CHUNK == self.chunks.len() {
            self.chunks.push_back(Box::new([None; CHUNK]));
        }
        self.chunks[at / CHUNK][at % CHUNK] = Some(c);
        self.len += 1;
    }

    pub fn pop_front(&mut self) -> Option<Closed> {
        if self.len == 0 {
            return None;
        }
        let c = self.chunks[0][self.head].take();
        self.head += 1;
        self.len -= 1;
        if self.head == CHUNK || self.len == 0 {
            // The first chunk is spent (or the index empty): it goes back to the allocator.
            self.chunks.pop_front();
            self.head = 0;
        }
        c
    }

    /// The first index whose entry fails `pred` (entries for which it holds come first).
    pub fn partition_point(&self, mut pred: impl FnMut(&Closed) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.get(mid).expect("in range")) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Entries from `from` on, oldest first.
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = &Closed> + '_ {
        (from..self.len).filter_map(move |i| self.get(i))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Closed> + '_ {
        self.iter_from(0)
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Closed> + '_ {
        let (head, len) = (self.head, self.len);
        self.chunks
            .iter_mut()
            .flat_map(|c| c.iter_mut())
            .skip(head)
            .take(len)
            .filter_map(Option::as_mut)
    }

    /// Replaces entry `i` with `with` (a late point re-encoded its block into one or two):
    /// the entries after it move, which a late point into a closed block can afford.
    pub fn replace(&mut self, i: usize, with: Vec<Closed>) -> Closed {
        let mut rest: Vec<Closed> = Vec::with_capacity(self.len - i);
        while self.len > i {
            rest.push(self.pop_back().expect("len > i"));
        }
        let old = rest.pop().expect("entry i");
        for c in with.into_iter().chain(rest.into_iter().rev()) {
            self.push_back(c);
        }
        old
    }

    fn pop_back(&mut self) -> Option<Closed> {
        let i = self.len.checked_sub(1)?;
        let at = self.head + i;
        let c = self.chunks[at / CHUNK][at % CHUNK].take();
        self.len -= 1;
        if at.is_multiple_of(CHUNK) || self.len == 0 {
            self.chunks.pop_back();
            if self.len == 0 {
                self.chunks.clear();
                self.head = 0;
            }
        }
        c
    }

    /// Heap bytes held: the chunks and the deque of their pointers.
    #[cfg(test)]
    pub fn heap_bytes(&self) -> usize {
        self.chunks.len() * std::mem::size_of::<Chunk>()
            + self.chunks.capacity() * std::mem::size_of::<Box<Chunk>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_32_bytes_and_chunks_carry_no_tag() {
        assert_eq!(std::mem::size_of::<Closed>(), 32);
        assert_eq!(std::mem::size_of::<Chunk>(), CHUNK * 32);
    }

    /// Random pushes, pops, replacements and searches agree with a `VecDeque`.
    #[test]
    fn behaves_as_a_deque() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let (mut index, mut plain) = (BlockIndex::default(), VecDeque::new());
        let mut t = 0i64;
        for step in 0..20_000 {
            match next() % 10 {
                0..=4 => {
                    t += 1 + (next() % 5) as i64;
                    index.push_back(Closed::for_test(t, t, 1));
                    plain.push_back(t);
                }
                5..=7 => assert_eq!(index.pop_front().map(|c| c.first_ts), plain.pop_front()),
                8 if !plain.is_empty() => {
                    // Split entry i in two, as a late point does.
                    let i = (next() as usize) % plain.len();
                    let x = plain[i];
                    let old = index.replace(
                        i,
                        vec![Closed::for_test(x, x, 1), Closed::for_test(x, x, 2)],
                    );
                    assert_eq!(old.first_ts, x);
                    plain.insert(i, x);
                }
                _ => {
                    let probe = t - (next() % 50) as i64;
                    assert_eq!(
                        index.partition_point(|c| c.first_ts < probe),
                        plain.partition_point(|&x| x < probe),
                        "step {step}"
                    );
                }
            }
            assert_eq!(index.len(), plain.len());
            assert_eq!(index.front().map(|c| c.first_ts), plain.front().copied());
            assert_eq!(index.back().map(|c| c.first_ts), plain.back().copied());
            assert!(index.chunks.len() <= plain.len().div_ceil(CHUNK) + 1);
            if step % 97 == 0 {
                let got: Vec<i64> = index.iter().map(|c| c.first_ts).collect();
                assert_eq!(got, plain.iter().copied().collect::<Vec<_>>());
                let n = index.iter_mut().count();
                assert_eq!(n, plain.len());
            }
        }
    }
}
