//! Closed blocks of a series' kept points, encoded exactly and compactly for the label-join
//! history (`history.rs`).
//!
//! Labels join into training examples, so a block gives back every event time, value bit
//! pattern (NaN payloads and -0.0 included) and source offset as it was recorded. The
//! encoding follows Gorilla (Pelkonen et al., VLDB 2015, section 4.1): event times and offsets
//! as deltas of deltas in variable-length bit buckets, each channel's values as the XOR with
//! that channel's previous value, stored as its meaningful bits inside a leading/trailing-zero
//! window. Regular sensors cost about two bits a point for time and offset; the values cost
//! what their bits change.
//!
//! No crate fits: `tsz` keeps (u64 seconds, f64) pairs only, and `pco` compresses long
//! arrays whose per-chunk headers outweigh a 128-point block.

/// Points per closed block: a block closes when the open one reaches this many.
pub const BLOCK_POINTS: usize = 128;

/// Points in order, uncompressed: the open block, or a decoded one.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Points {
    pub ts: Vec<i64>,
    /// `channels` values per point, point by point.
    pub values: Vec<f64>,
    pub offsets: Vec<i64>,
    /// Each point's source index; empty when every point came from source 0.
    pub source_of: Vec<u16>,
}

impl Points {
    pub fn len(&self) -> usize {
        self.ts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ts.is_empty()
    }

    pub fn clear(&mut self) {
        self.ts.clear();
        self.values.clear();
        self.offsets.clear();
        self.source_of.clear();
    }

    /// The source index of point `i` (0 while there is one source).
    pub fn source(&self, i: usize) -> u16 {
        self.source_of.get(i).copied().unwrap_or(0)
    }

    /// Inserts a point of `channels` values in time order; false (and nothing changes) when
    /// a point at `ts` is there already.
    pub fn insert(
        &mut self,
        channels: usize,
        ts: i64,
        values: &[f64],
        offset: i64,
        source: u16,
    ) -> bool {
        let n = self.len();
        let at = if self.ts.last().is_none_or(|&t| t < ts) {
            n
        } else {
            let at = self.ts.partition_point(|&t| t < ts);
            if self.ts.get(at) == Some(&ts) {
                return false;
            }
            at
        };
        let sourced = source != 0 || !self.source_of.is_empty();
        if sourced {
            self.source_of.resize(n, 0);
        }
        if at == n {
            self.ts.push(ts);
            self.values.extend_from_slice(values);
            self.offsets.push(offset);
            if sourced {
                self.source_of.push(source);
            }
        } else {
            self.ts.insert(at, ts);
            self.values
                .splice(at * channels..at * channels, values.iter().copied());
            self.offsets.insert(at, offset);
            if sourced {
                self.source_of.insert(at, source);
            }
        }
        true
    }

    /// Points `range` of these.
    pub fn slice(&self, channels: usize, range: std::ops::Range<usize>) -> Points {
        Points {
            ts: self.ts[range.clone()].to_vec(),
            values: self.values[range.start * channels..range.end * channels].to_vec(),
            offsets: self.offsets[range.clone()].to_vec(),
            source_of: self
                .source_of
                .get(range)
                .map_or(Vec::new(), <[u16]>::to_vec),
        }
    }

    /// Appends `other`'s points, keeping `source_of` in step with `ts`.
    pub fn extend_from(&mut self, other: &Points) {
        let start = self.len();
        if !other.source_of.is_empty() && self.source_of.len() < start {
            self.source_of.resize(start, 0);
        }
        if !self.source_of.is_empty() || !other.source_of.is_empty() {
            self.source_of
                .extend((0..other.len()).map(|i| other.source(i)));
        }
        self.ts.extend_from_slice(&other.ts);
        self.values.extend_from_slice(&other.values);
        self.offsets.extend_from_slice(&other.offsets);
    }

    /// Heap bytes held (capacity, not length).
    #[cfg(test)]
    pub fn heap_bytes(&self) -> usize {
        8 * (self.ts.capacity() + self.values.capacity() + self.offsets.capacity())
            + 2 * self.source_of.capacity()
    }
}

/// A closed block: its points' time range and their encoding.
#[derive(Debug, Clone)]
pub struct Block {
    pub first_ts: i64,
    pub last_ts: i64,
    n: u32,
    /// Each point carries its source index (a series fed from more than one partition).
    sourced: bool,
    bits: Box<[u8]>,
}

impl Block {
    /// Encodes `points` (at least one, in time order) of `channels` values each.
    pub fn encode(channels: usize, points: &Points) -> Block {
        assert!(!points.is_empty(), "a block holds at least one point");
        let n = points.len();
        let sourced = points.source_of.iter().any(|&s| s != 0);
        let mut w = BitWriter::default();
        w.put(points.offsets[0] as u64, 64);
        let mut windows = vec![Window::NONE; channels];
        for &v in &points.values[..channels] {
            w.put(v.to_bits(), 64);
        }
        if sourced {
            w.put(u64::from(points.source(0)), 16);
        }
        let (mut ts_delta, mut offset_delta) = (0i64, 0i64);
        for i in 1..n {
            // Gorilla 4.1.1: delta of deltas of the time stamps (and here of the offsets).
            let d = points.ts[i].wrapping_sub(points.ts[i - 1]);
            w.put_signed(d.wrapping_sub(ts_delta));
            ts_delta = d;
            let d = points.offsets[i].wrapping_sub(points.offsets[i - 1]);
            w.put_signed(d.wrapping_sub(offset_delta));
            offset_delta = d;
            // Gorilla 4.1.2: XOR with the channel's previous value.
            for (c, window) in windows.iter_mut().enumerate() {
                let x = points.values[i * channels + c].to_bits()
                    ^ points.values[(i - 1) * channels + c].to_bits();
                w.put_xor(x, window);
            }
            if sourced {
                let s = points.source(i);
                if s == points.source(i - 1) {
                    w.put(0, 1);
                } else {
                    w.put(1, 1);
                    w.put(u64::from(s), 16);
                }
            }
        }
        Block {
            first_ts: points.ts[0],
            last_ts: points.ts[n - 1],
            n: n as u32,
            sourced,
            bits: w.finish().into_boxed_slice(),
        }
    }

    pub fn len(&self) -> usize {
        self.n as usize
    }

    /// Heap bytes held, and the block itself.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        std::mem::size_of::<Block>() + self.bits.len()
    }

    /// Appends the block's points to `out` (which has `source_of` filled for its own points
    /// when `out.source_of` is not empty or this block is sourced).
    pub fn decode_into(&self, channels: usize, out: &mut Points) {
        const INTACT: &str = "a history block decodes: this module encoded it";
        let start = out.len();
        if self.sourced && out.source_of.len() < start {
            out.source_of.resize(start, 0);
        }
        let keep_sources = self.sourced || !out.source_of.is_empty();
        let mut r = BitReader::new(&self.bits);
        let mut offset = r.get(64).expect(INTACT) as i64;
        let mut ts = self.first_ts;
        let first_values = out.values.len();
        for _ in 0..channels {
            out.values.push(f64::from_bits(r.get(64).expect(INTACT)));
        }
        let mut source = if self.sourced {
            r.get(16).expect(INTACT) as u16
        } else {
            0
        };
        out.ts.push(ts);
        out.offsets.push(offset);
        if keep_sources {
            out.source_of.push(source);
        }
        let mut windows = vec![Window::NONE; channels];
        let (mut ts_delta, mut offset_delta) = (0i64, 0i64);
        for i in 1..self.n as usize {
            ts_delta = ts_delta.wrapping_add(r.get_signed().expect(INTACT));
            ts = ts.wrapping_add(ts_delta);
            offset_delta = offset_delta.wrapping_add(r.get_signed().expect(INTACT));
            offset = offset.wrapping_add(offset_delta);
            for (c, window) in windows.iter_mut().enumerate() {
                let prev = out.values[first_values + (i - 1) * channels + c].to_bits();
                let x = r.get_xor(window).expect(INTACT);
                out.values.push(f64::from_bits(prev ^ x));
            }
            if self.sourced && r.get(1).expect(INTACT) == 1 {
                source = r.get(16).expect(INTACT) as u16;
            }
            out.ts.push(ts);
            out.offsets.push(offset);
            if keep_sources {
                out.source_of.push(source);
            }
        }
    }
}

/// The meaningful-bit window of the previous XOR of a channel (Gorilla 4.1.2).
#[derive(Debug, Clone, Copy)]
struct Window {
    leading: u32,
    trailing: u32,
}

impl Window {
    /// No window yet: the next non-zero XOR writes its own.
    const NONE: Window = Window {
        leading: u32::MAX,
        trailing: u32::MAX,
    };
}

/// Bits, most significant first.
#[derive(Default)]
struct BitWriter {
    bytes: Vec<u8>,
    acc: u128,
    pending: u32,
}

impl BitWriter {
    /// The low `n` bits of `v` (n <= 64).
    fn put(&mut self, v: u64, n: u32) {
        if n == 0 {
            return;
        }
        let v = if n == 64 { v } else { v & ((1u64 << n) - 1) };
        self.acc = (self.acc << n) | u128::from(v);
        self.pending += n;
        while self.pending >= 8 {
            self.pending -= 8;
            self.bytes.push((self.acc >> self.pending) as u8);
        }
        self.acc &= (1u128 << self.pending) - 1;
    }

    /// A signed delta in buckets by size: 0 in one bit, small ones in 9-17 bits, any i64 in 68.
    fn put_signed(&mut self, v: i64) {
        let z = ((v << 1) ^ (v >> 63)) as u64; // zigzag: small magnitudes, small numbers
        if z == 0 {
            self.put(0, 1);
        } else if z < 1 << 7 {
            self.put(0b10, 2);
            self.put(z, 7);
        } else if z < 1 << 12 {
            self.put(0b110, 3);
            self.put(z, 12);
        } else if z < 1 << 20 {
            self.put(0b1110, 4);
            self.put(z, 20);
        } else {
            self.put(0b1111, 4);
            self.put(z, 64);
        }
    }

    /// Gorilla 4.1.2: '0' for an unchanged value; '10' and the meaningful bits inside the
    /// previous window; '11', 5 bits of leading zeros, 6 of length - 1, and the bits.
    fn put_xor(&mut self, x: u64, window: &mut Window) {
        if x == 0 {
            self.put(0, 1);
            return;
        }
        let leading = x.leading_zeros().min(31);
        let trailing = x.trailing_zeros();
        if window.leading != u32::MAX && leading >= window.leading && trailing >= window.trailing {
            self.put(0b10, 2);
            self.put(x >> window.trailing, 64 - window.leading - window.trailing);
        } else {
            let len = 64 - leading - trailing;
            self.put(0b11, 2);
            self.put(u64::from(leading), 5);
            self.put(u64::from(len - 1), 6);
            self.put(x >> trailing, len);
            *window = Window { leading, trailing };
        }
    }

    fn finish(mut self) -> Vec<u8> {
        if self.pending > 0 {
            self.bytes.push((self.acc << (8 - self.pending)) as u8);
        }
        self.bytes
    }
}

struct BitReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> BitReader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// The next `n` bits (n <= 64); None past the end.
    fn get(&mut self, n: u32) -> Option<u64> {
        let mut v = 0u64;
        let mut left = n;
        while left > 0 {
            let byte = *self.bytes.get(self.pos / 8)?;
            let used = (self.pos % 8) as u32;
            let take = (8 - used).min(left);
            let bits = (u64::from(byte) >> (8 - used - take)) & ((1u64 << take) - 1);
            v = (v << take) | bits;
            left -= take;
            self.pos += take as usize;
        }
        Some(v)
    }

    fn get_signed(&mut self) -> Option<i64> {
        let z = if self.get(1)? == 0 {
            0
        } else if self.get(1)? == 0 {
            self.get(7)?
        } else if self.get(1)? == 0 {
            self.get(12)?
        } else if self.get(1)? == 0 {
            self.get(20)?
        } else {
            self.get(64)?
        };
        Some(((z >> 1) as i64) ^ -((z & 1) as i64))
    }

    fn get_xor(&mut self, window: &mut Window) -> Option<u64> {
        if self.get(1)? == 0 {
            return Some(0);
        }
        if self.get(1)? == 0 {
            let len = 64 - window.leading - window.trailing;
            return Some(self.get(len)? << window.trailing);
        }
        let leading = self.get(5)? as u32;
        let len = self.get(6)? as u32 + 1;
        let trailing = 64 - leading - len;
        *window = Window { leading, trailing };
        Some(self.get(len)? << trailing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(channels: usize, points: &Points) -> Points {
        let mut out = Points::default();
        Block::encode(channels, points).decode_into(channels, &mut out);
        out
    }

    /// Bit patterns, not values: NaN payloads and -0.0 must come back as they went in.
    fn same_bits(a: &Points, b: &Points) -> bool {
        a.ts == b.ts
            && a.offsets == b.offsets
            && a.values.len() == b.values.len()
            && a.values
                .iter()
                .zip(&b.values)
                .all(|(x, y)| x.to_bits() == y.to_bits())
            && (0..a.len()).all(|i| a.source(i) == b.source(i))
    }

    /// Values that stress the XOR windows: repeats, sign flips, NaN payloads, infinities,
    /// subnormals, and plain random bits.
    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(1.5),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::MIN_POSITIVE / 4.0),
            (0u64..1 << 52).prop_map(|p| f64::from_bits(0x7ff0_0000_0000_0001 | p)),
            any::<u64>().prop_map(f64::from_bits),
            (-1000i32..1000).prop_map(|k| f64::from(k) * 0.125),
        ]
    }

    fn points(max: usize) -> impl Strategy<Value = (usize, Points)> {
        (1usize..4, 1usize..max).prop_flat_map(|(channels, n)| {
            (
                Just(channels),
                (
                    // Irregular steps, including none and huge ones (wrapping deltas).
                    any::<i64>(),
                    prop::collection::vec(
                        prop_oneof![Just(0i64), Just(10), 0i64..5_000, any::<i64>()],
                        n - 1,
                    ),
                    any::<i64>(),
                    prop::collection::vec(prop_oneof![Just(1i64), 0i64..100, any::<i64>()], n - 1),
                    prop::collection::vec(value(), n * channels),
                    prop::collection::vec(prop_oneof![3 => Just(0u16), 1 => any::<u16>()], n),
                ),
            )
                .prop_map(|(channels, (ts0, steps, off0, off_steps, values, src))| {
                    let mut p = Points {
                        values,
                        source_of: src,
                        ..Points::default()
                    };
                    p.ts.push(ts0);
                    p.offsets.push(off0);
                    for (s, o) in steps.iter().zip(&off_steps) {
                        p.ts.push(p.ts.last().unwrap().wrapping_add(*s));
                        p.offsets.push(p.offsets.last().unwrap().wrapping_add(*o));
                    }
                    (channels, p)
                })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]
        #[test]
        fn blocks_round_trip_every_bit((channels, p) in points(300)) {
            let back = round_trip(channels, &p);
            prop_assert!(same_bits(&p, &back), "{p:?} came back as {back:?}");
        }
    }

    #[test]
    fn a_regular_sensor_costs_a_few_bits_a_point() {
        let mut p = Points::default();
        for i in 0..BLOCK_POINTS as i64 {
            p.ts.push(1_700_000_000_000 + 1_000 * i);
            p.offsets.push(5 + 64 * i);
            p.values.push(20.0 + (i % 4) as f64 * 0.5);
        }
        let b = Block::encode(1, &p);
        assert!(same_bits(&round_trip(1, &p), &p));
        // Time and offset 1 bit each; a quarter-step value about 13 bits; 24 bytes raw.
        assert!(
            b.bits.len() < 3 * BLOCK_POINTS,
            "{} bytes for {BLOCK_POINTS} points",
            b.bits.len()
        );
    }

    #[test]
    fn decoding_after_a_single_source_block_keeps_indices_aligned() {
        let mut a = Points::default();
        let mut b = Points::default();
        for i in 0..3 {
            a.ts.push(i);
            a.offsets.push(i);
            a.values.push(i as f64);
            b.ts.push(10 + i);
            b.offsets.push(10 + i);
            b.values.push(i as f64);
            b.source_of.push(i as u16);
        }
        let mut out = Points::default();
        Block::encode(1, &a).decode_into(1, &mut out);
        Block::encode(1, &b).decode_into(1, &mut out);
        assert_eq!(out.source_of, vec![0, 0, 0, 0, 1, 2]);
    }
}
