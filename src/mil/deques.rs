//! The monotonic deques of one window scorer's hypothesis groups, all in one arena.
//!
//! A live series holds one deque per hypothesis group and a daemon holds many series, so
//! an entry is 10 bytes (the subsequence's start as a wrapping `u16` beside its exact
//! value; 12 with a `u32` start for windows of 2^15 points or more) and no deque has an
//! allocation or a capacity of its own: each is a ring in one arena per scorer. A full ring moves to the arena's end with twice the room (never more
//! than its deque can hold in the window); when the arena has no room left it is
//! compacted, rings holding more than twice their length (and a few) cut down to 3/2 of
//! it, with a quarter free, so the arena follows what the deques hold now, not the longest
//! each ever was.
//!
//! Values stay exact `f64`s: a rounded key would leave equal keys to be recomputed, and
//! some data (ACSF1's, quantised) ties dozens of times a point.

/// A ring in the arena: `len` entries from `head` within `cap` slots at `base`.
#[derive(Debug, Clone, Copy, Default)]
struct Ring {
    base: u32,
    cap: u32,
    head: u32,
    len: u32,
}

impl Ring {
    #[inline]
    fn slot(&self, i: u32) -> usize {
        let j = self.head + i;
        (self.base + if j >= self.cap { j - self.cap } else { j }) as usize
    }

    /// Its entries' slots, front to back, as at most two ranges.
    fn runs(&self) -> [std::ops::Range<usize>; 2] {
        let (base, head) = (self.base as usize, self.head as usize);
        let first = (self.len as usize).min((self.cap - self.head) as usize);
        [
            base + head..base + head + first,
            base..base + self.len as usize - first,
        ]
    }
}

/// A subsequence's start as a deque keeps it: its point index wrapping at 2^16 or 2^32.
/// The starts a scorer compares are within half that range of each other (its kept
/// points, see `WindowScorer::new`), so the wrapped difference orders them.
pub(super) trait Start: Copy + Default + std::fmt::Debug + PartialEq {
    /// The most points apart two compared starts may be.
    const SPAN: u64;
    fn wrap(index: u64) -> Self;
    /// The point index of this start, given that it is at most `SPAN` points behind `n`.
    fn unwrap(self, n: u64) -> u64;
    /// Whether this start is before `other`.
    fn before(self, other: Self) -> bool;
}

impl Start for u16 {
    const SPAN: u64 = 1 << 15;
    #[inline]
    fn wrap(index: u64) -> Self {
        index as u16
    }
    #[inline]
    fn unwrap(self, n: u64) -> u64 {
        n - u64::from((n as u16).wrapping_sub(self))
    }
    #[inline]
    fn before(self, other: Self) -> bool {
        (self.wrapping_sub(other) as i16) < 0
    }
}

impl Start for u32 {
    const SPAN: u64 = 1 << 31;
    #[inline]
    fn wrap(index: u64) -> Self {
        index as u32
    }
    #[inline]
    fn unwrap(self, n: u64) -> u64 {
        n - u64::from((n as u32).wrapping_sub(self))
    }
    #[inline]
    fn before(self, other: Self) -> bool {
        (self.wrapping_sub(other) as i32) < 0
    }
}

/// One entry: a subsequence's start (wrapping) beside its exact value, 10 or 12 bytes
/// (packed to 2-byte alignment), so one access reads one place.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, packed(2))]
struct Slot<S: Start> {
    start: S,
    value: f64,
}

/// A scorer's deques, with the narrowest starts its window allows.
#[derive(Debug, Clone)]
pub(super) enum Deques {
    Narrow(Rings<u16>),
    Wide(Rings<u32>),
}

impl Deques {
    /// `groups` deques of starts compared within `keep` points of each other.
    pub fn new(groups: usize, keep: usize) -> Self {
        if (keep as u64) < u16::SPAN {
            Self::Narrow(Rings::new(groups))
        } else {
            Self::Wide(Rings::new(groups))
        }
    }

    /// See [`Rings::push_max`].
    #[inline]
    pub fn push_max(&mut self, g: usize, start: u64, v: f64, window_start: u64, bound: u32) {
        match self {
            Self::Narrow(d) => d.push_max(g, S16::wrap(start), v, S16::wrap(window_start), bound),
            Self::Wide(d) => d.push_max(g, S32::wrap(start), v, S32::wrap(window_start), bound),
        }
    }

    /// The front of deque `g` as (point index of its start, value); `n` points pushed.
    #[inline]
    pub fn front(&self, g: usize, n: u64) -> Option<(u64, f64)> {
        match self {
            Self::Narrow(d) => d.front(g).map(|(s, v)| (s.unwrap(n), v)),
            Self::Wide(d) => d.front(g).map(|(s, v)| (s.unwrap(n), v)),
        }
    }

    /// Drops the front entries of deque `g` starting before point `start`.
    pub fn pop_before(&mut self, g: usize, start: u64) {
        match self {
            Self::Narrow(d) => d.pop_before(g, S16::wrap(start)),
            Self::Wide(d) => d.pop_before(g, S32::wrap(start)),
        }
    }

    /// See [`Rings::heap_bytes`].
    pub fn heap_bytes(&self) -> (usize, usize) {
        match self {
            Self::Narrow(d) => d.heap_bytes(),
            Self::Wide(d) => d.heap_bytes(),
        }
    }
}

type S16 = u16;
type S32 = u32;

#[derive(Debug, Clone, Default)]
pub(super) struct Rings<S: Start> {
    /// The arena: a subsequence's start (wrapping) and its value, slot by slot.
    slots: Vec<Slot<S>>,
    rings: Vec<Ring>,
}

impl<S: Start> Rings<S> {
    pub fn new(groups: usize) -> Self {
        Self {
            slots: Vec::new(),
            rings: vec![Ring::default(); groups],
        }
    }

    /// Drops the front entries of deque `g` starting before `start`.
    pub fn pop_before(&mut self, g: usize, start: S) {
        while self.front(g).is_some_and(|(st, _)| st.before(start)) {
            self.pop_front(g);
        }
    }

    /// The front of deque `g`: (start, value).
    #[inline]
    pub fn front(&self, g: usize) -> Option<(S, f64)> {
        let r = &self.rings[g];
        (r.len > 0).then(|| {
            let k = r.slot(0);
            (self.slots[k].start, self.slots[k].value)
        })
    }

    /// The value at the back of deque `g`.
    #[cfg(test)]
    #[inline]
    pub fn back(&self, g: usize) -> Option<f64> {
        let r = &self.rings[g];
        (r.len > 0).then(|| self.slots[r.slot(r.len - 1)].value)
    }

    #[cfg(test)]
    #[inline]
    pub fn pop_back(&mut self, g: usize) {
        self.rings[g].len -= 1;
    }

    #[inline]
    pub fn pop_front(&mut self, g: usize) {
        let r = &mut self.rings[g];
        r.len -= 1;
        r.head = if r.head + 1 == r.cap { 0 } else { r.head + 1 };
    }

    /// Appends a subsequence starting at `start` (wrapping) of value `v` to deque `g`.
    #[cfg(test)]
    #[inline]
    pub fn push_back(&mut self, g: usize, start: S, v: f64) {
        if self.rings[g].len == self.rings[g].cap {
            self.grow(g, u32::MAX);
        }
        let r = &mut self.rings[g];
        r.len += 1;
        let k = r.slot(r.len - 1);
        self.slots[k] = Slot { start, value: v };
    }

    /// One step of a sliding-window maximum on deque `g`: drops the back entries smaller
    /// than `v` (strict: an equal earlier value stays in front, as the from-scratch argmax
    /// keeps the first maximiser), appends (`start`, `v`), then drops the front entries
    /// starting before `window_start` (wrapping, see [`Start::before`]). The same as
    /// `back`/`pop_back`/`push_back`/`front`/`pop_front` in that order, with the ring
    /// read once: this is the scorer's hot path. `bound` is the most entries the deque can
    /// hold (the window's subsequences and the one entering), so no ring grows past it.
    #[inline]
    pub fn push_max(&mut self, g: usize, start: S, v: f64, window_start: S, bound: u32) {
        let mut r = self.rings[g];
        while r.len > 0 && self.slots[r.slot(r.len - 1)].value < v {
            r.len -= 1;
        }
        if r.len == r.cap {
            self.rings[g] = r;
            self.grow(g, bound);
            r = self.rings[g];
        }
        r.len += 1;
        let k = r.slot(r.len - 1);
        self.slots[k] = Slot { start, value: v };
        while r.len > 0 && self.slots[r.slot(0)].start.before(window_start) {
            r.len -= 1;
            r.head = if r.head + 1 == r.cap { 0 } else { r.head + 1 };
        }
        self.rings[g] = r;
    }

    /// Deque `g` is full: it moves to the arena's end with twice the room (at most
    /// `bound`, the most it can hold), or, when the arena has no room for that, the arena
    /// is compacted.
    #[cold]
    fn grow(&mut self, g: usize, bound: u32) {
        let r = self.rings[g];
        let cap = (2 * r.cap).max(4).min(bound.max(r.cap + 1));
        if self.slots.len() + cap as usize > self.slots.capacity() {
            self.compact(g, cap);
            return;
        }
        let base = self.slots.len();
        for run in r.runs() {
            self.slots.extend_from_within(run);
        }
        self.slots.resize(base + cap as usize, Slot::default());
        self.rings[g] = Ring {
            base: base as u32,
            cap,
            head: 0,
            len: r.len,
        };
    }

    /// A new arena holding every deque in order (deque `g` with room for `cap`), and a
    /// quarter of it free for rings that move later (an eighth: 1 KB less per GunPoint
    /// series, but GunPoint scored about 5 % slower beside main's binary).
    fn compact(&mut self, g: usize, cap: u32) {
        let cap_of = |i: usize, r: &Ring| {
            if i == g {
                cap
            } else if r.cap > 2 * r.len + 8 {
                r.len + r.len / 2 + 4
            } else {
                r.cap
            }
        };
        let total: usize = self
            .rings
            .iter()
            .enumerate()
            .map(|(i, r)| cap_of(i, r) as usize)
            .sum();
        let room = total + total / 4 + 16;
        let mut slots = Vec::with_capacity(room);
        for (i, r) in self.rings.iter_mut().enumerate() {
            let cap = cap_of(i, r);
            let base = slots.len();
            for run in r.runs() {
                slots.extend_from_slice(&self.slots[run]);
            }
            slots.resize(base + cap as usize, Slot::default());
            *r = Ring {
                base: base as u32,
                cap,
                head: 0,
                len: r.len,
            };
        }
        self.slots = slots;
    }

    /// Heap bytes: (entries in use, the arena and the rings).
    pub fn heap_bytes(&self) -> (usize, usize) {
        let entry = std::mem::size_of::<Slot<S>>();
        (
            self.rings.iter().map(|r| r.len as usize).sum::<usize>() * entry,
            self.slots.capacity() * entry + self.rings.capacity() * std::mem::size_of::<Ring>(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// `push_max` is the separate steps of a sliding-window maximum, on random values
    /// (ties included) and window starts that wrap past 2^16 and 2^32.
    fn push_max_steps<S: Start>() {
        let (mut fused, mut steps) = (Rings::<S>::new(3), Rings::<S>::new(3));
        let mut next = xorshift(987654321);
        let origin = (1u64 << 32) - 5_000;
        for i in 0..40_000u64 {
            let g = (next() % 3) as usize;
            let start = origin + i;
            let v = (next() % 50) as f64;
            let ws = start - next() % 64;
            fused.push_max(g, S::wrap(start), v, S::wrap(ws), u32::MAX);
            while steps.back(g).is_some_and(|b| b < v) {
                steps.pop_back(g);
            }
            steps.push_back(g, S::wrap(start), v);
            while steps.front(g).is_some_and(|(st, _)| st.before(S::wrap(ws))) {
                steps.pop_front(g);
            }
            for h in 0..3 {
                assert_eq!(fused.front(h), steps.front(h), "step {i}");
                assert_eq!(fused.back(h), steps.back(h), "step {i}");
                if let Some((st, _)) = fused.front(h) {
                    assert!(st.unwrap(start + 1) <= start, "step {i}");
                }
            }
        }
    }

    #[test]
    fn push_max_is_the_sliding_maximum_steps() {
        push_max_steps::<u16>();
        push_max_steps::<u32>();
    }

    /// Random pushes and pops on several deques against `VecDeque`s, through growth,
    /// moves and compactions; the arena stays within a bound of what is live.
    fn rings_against_vecdeques<S: Start>() {
        let mut d = Rings::<S>::new(5);
        let mut refs: Vec<VecDeque<(S, f64)>> = vec![VecDeque::new(); 5];
        let mut next = xorshift(12345);
        for step in 0..200_000u64 {
            let g = (next() % 5) as usize;
            // Deques drift between long and short, so rings grow, move and shrink.
            let op = next() % 10;
            let push = match (step / 5_000) % 3 {
                0 => op < 7,
                1 => op < 5,
                _ => op < 3,
            };
            if push {
                let v = (next() % 1000) as f64 / 7.0;
                d.push_back(g, S::wrap(step), v);
                refs[g].push_back((S::wrap(step), v));
            } else if op.is_multiple_of(2) && !refs[g].is_empty() {
                d.pop_front(g);
                refs[g].pop_front();
            } else if !refs[g].is_empty() {
                d.pop_back(g);
                refs[g].pop_back();
            }
            assert_eq!(d.front(g), refs[g].front().copied(), "step {step}");
            assert_eq!(d.back(g), refs[g].back().map(|e| e.1), "step {step}");
        }
        let live: usize = refs.iter().map(VecDeque::len).sum();
        let (used, held) = d.heap_bytes();
        assert_eq!(used, live * std::mem::size_of::<Slot<S>>());
        assert!(
            held < 4 * used + 4096,
            "{held} bytes held for {used} in use"
        );
    }

    #[test]
    fn rings_behave_as_deques() {
        assert_eq!(std::mem::size_of::<Slot<u16>>(), 10);
        assert_eq!(std::mem::size_of::<Slot<u32>>(), 12);
        rings_against_vecdeques::<u16>();
        rings_against_vecdeques::<u32>();
    }

    /// A scorer's deques take the narrow starts below 2^15 kept points, and give back
    /// point indices either way.
    #[test]
    fn the_width_follows_the_window() {
        for (keep, narrow) in [(300, true), ((1 << 15) - 1, true), (1 << 15, false)] {
            let mut d = Deques::new(1, keep);
            assert_eq!(matches!(d, Deques::Narrow(_)), narrow, "keep {keep}");
            let n = (1u64 << 33) + 70_000;
            d.push_max(0, n - 5, 2.0, n - 10, u32::MAX);
            d.push_max(0, n - 4, 1.0, n - 10, u32::MAX);
            assert_eq!(d.front(0, n), Some((n - 5, 2.0)));
            d.pop_before(0, n - 4);
            assert_eq!(d.front(0, n), Some((n - 4, 1.0)));
        }
    }
}
