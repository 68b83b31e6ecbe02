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
}

/// A closed block's header: its points' time range, count and whether they carry sources:
/// what the index keeps in memory (`history_log.rs`'s `Closed`). Where the three byte-aligned
/// sections of the encoding (event times; offsets and sources; values) start is in the bytes
/// themselves, a prefix of two varints, so a search by time decodes the times alone and the
/// header stays small: it is what every live series keeps per 128 points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub first_ts: i64,
    pub last_ts: i64,
    pub n: u16,
    /// Each point carries its source index (a series fed from more than one partition).
    pub sourced: bool,
}

/// Bytes that do not decode as the block their header describes (read back damaged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

impl std::fmt::Display for Corrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the block's bytes do not decode")
    }
}

impl Block {
    /// Encodes `points` (at least one and at most 65,535, in time order) of `channels`
    /// values each: the header and the bytes.
    pub fn encode(channels: usize, points: &Points) -> (Block, Vec<u8>) {
        assert!(!points.is_empty(), "a block holds at least one point");
        OpenBlock::from_points(channels, points).close()
    }

    /// The sections of `bits` after their prefix, checked against it (bytes read back may
    /// be short or damaged).
    fn sections<'a>(&self, bits: &'a [u8]) -> Result<[&'a [u8]; 3], Corrupt> {
        let (o, rest) = get_varint(bits).ok_or(Corrupt)?;
        let (v, rest) = get_varint(rest).ok_or(Corrupt)?;
        let (o, v) = (o as usize, v as usize);
        if o > v || v > rest.len() {
            return Err(Corrupt);
        }
        Ok([&rest[..o], &rest[o..v], &rest[v..]])
    }

    /// Appends the block's event times (decoded from its `bits`) to `out`. On `Corrupt`,
    /// `out` may hold part of them.
    pub fn decode_ts_into(&self, bits: &[u8], out: &mut Vec<i64>) -> Result<(), Corrupt> {
        self.decode_ts_section(self.sections(bits)?[0], out)
    }

    /// [`decode_ts_into`](Self::decode_ts_into) on the times' section alone.
    fn decode_ts_section(&self, section: &[u8], out: &mut Vec<i64>) -> Result<(), Corrupt> {
        let mut r = BitReader::new(section);
        let mut ts = self.first_ts;
        out.push(ts);
        let mut delta = 0i64;
        for _ in 1..self.n {
            delta = delta.wrapping_add(r.get_signed().ok_or(Corrupt)?);
            ts = ts.wrapping_add(delta);
            out.push(ts);
        }
        // The header's last time is a check the damaged bytes of a time rarely pass.
        if ts != self.last_ts {
            return Err(Corrupt);
        }
        Ok(())
    }

    /// Appends the block's points (decoded from its `bits`) to `out`, keeping
    /// `out.source_of` in step with its times. Without `offsets`, `out.offsets` and
    /// `out.source_of` stay as they are: a join of values needs neither.
    pub fn decode_into(
        &self,
        bits: &[u8],
        channels: usize,
        out: &mut Points,
        offsets: bool,
    ) -> Result<(), Corrupt> {
        let start = out.len();
        let [ts_bits, offsets_bits, values_bits] = self.sections(bits)?;
        self.decode_ts_section(ts_bits, &mut out.ts)?;
        if offsets {
            self.decode_offsets_into(offsets_bits, start, out)?;
        }
        self.decode_values_into(values_bits, channels, out)
    }

    /// Offsets and sources of the points from `start` on in `out`.
    fn decode_offsets_into(
        &self,
        bits: &[u8],
        start: usize,
        out: &mut Points,
    ) -> Result<(), Corrupt> {
        let keep_sources = self.sourced || !out.source_of.is_empty();
        if keep_sources {
            out.source_of.resize(start, 0);
        }
        let mut r = BitReader::new(bits);
        let mut offset = r.get(64).ok_or(Corrupt)? as i64;
        let mut source = if self.sourced {
            r.get(16).ok_or(Corrupt)? as u16
        } else {
            0
        };
        out.offsets.push(offset);
        if keep_sources {
            out.source_of.push(source);
        }
        let mut delta = 0i64;
        for _ in 1..self.n {
            delta = delta.wrapping_add(r.get_signed().ok_or(Corrupt)?);
            offset = offset.wrapping_add(delta);
            out.offsets.push(offset);
            if self.sourced && r.get(1).ok_or(Corrupt)? == 1 {
                source = r.get(16).ok_or(Corrupt)? as u16;
            }
            if keep_sources {
                out.source_of.push(source);
            }
        }
        Ok(())
    }

    fn decode_values_into(
        &self,
        bits: &[u8],
        channels: usize,
        out: &mut Points,
    ) -> Result<(), Corrupt> {
        let mut r = BitReader::new(bits);
        let first = out.values.len();
        for _ in 0..channels {
            out.values.push(f64::from_bits(r.get(64).ok_or(Corrupt)?));
        }
        let mut windows = vec![Window::NONE; channels];
        for i in 1..self.n as usize {
            for (c, window) in windows.iter_mut().enumerate() {
                let prev = out.values[first + (i - 1) * channels + c].to_bits();
                let x = r.get_xor(window).ok_or(Corrupt)?;
                out.values.push(f64::from_bits(prev ^ x));
            }
        }
        Ok(())
    }
}

/// The open block: the newest points of a series, encoded as they arrive in the closed
/// blocks' format (Gorilla, as [`Block::encode`] would), event times included: every live
/// series holds one, so an open point costs what its time, offset and values change (about
/// 1-9 bytes) instead of 24, and closing the block only joins the sections. A search of the
/// open points decodes their times (a join's, not a point's cost). A point that does not
/// come last (late), or a first point from a second source, re-encodes the block (at most
/// [`BLOCK_POINTS`] points).
#[derive(Debug, Default, Clone)]
pub struct OpenBlock {
    /// Event times after the first, as deltas of deltas (Gorilla 4.1.1).
    times: BitWriter,
    n: u16,
    first_ts: i64,
    last_ts: i64,
    ts_delta: i64,
    channels: usize,
    /// Offsets (and sources, when `sourced`) so far, then values so far: two sections.
    offsets: BitWriter,
    values: BitWriter,
    last_offset: i64,
    offset_delta: i64,
    last_source: u16,
    sourced: bool,
    /// Each channel's last value (bits) and XOR window.
    last_values: Vec<u64>,
    windows: Vec<Window>,
}

impl OpenBlock {
    fn from_points(channels: usize, points: &Points) -> OpenBlock {
        let mut o = OpenBlock {
            channels,
            sourced: points.source_of.iter().any(|&s| s != 0),
            ..OpenBlock::default()
        };
        for i in 0..points.len() {
            let values = &points.values[i * channels..(i + 1) * channels];
            o.push(points.ts[i], values, points.offsets[i], points.source(i));
        }
        o
    }

    pub fn len(&self) -> usize {
        self.n as usize
    }

    pub fn first_ts(&self) -> Option<i64> {
        (self.n > 0).then_some(self.first_ts)
    }

    pub fn last_ts(&self) -> Option<i64> {
        (self.n > 0).then_some(self.last_ts)
    }

    /// The event times of the points, decoded.
    pub fn times(&self) -> Vec<i64> {
        let mut out = Vec::with_capacity(self.len());
        if self.n > 0 {
            let header = Block {
                first_ts: self.first_ts,
                last_ts: self.last_ts,
                n: self.n,
                sourced: self.sourced,
            };
            header
                .decode_ts_section(&self.times.clone().finish(), &mut out)
                .expect("an open block decodes: it was encoded just now");
        }
        out
    }

    /// Appends a point after the last one (`sourced` already, if `source` is not 0).
    fn push(&mut self, ts: i64, values: &[f64], offset: i64, source: u16) {
        if self.n == 0 {
            self.first_ts = ts;
            self.offsets.put(offset as u64, 64);
            if self.sourced {
                self.offsets.put(u64::from(source), 16);
            }
            self.last_values = values.iter().map(|v| v.to_bits()).collect();
            for &v in &self.last_values {
                self.values.put(v, 64);
            }
            self.windows = vec![Window::NONE; values.len()];
        } else {
            // Gorilla 4.1.1: delta of deltas, of the times and of the offsets.
            let d = ts.wrapping_sub(self.last_ts);
            self.times.put_signed(d.wrapping_sub(self.ts_delta));
            self.ts_delta = d;
            let d = offset.wrapping_sub(self.last_offset);
            self.offsets.put_signed(d.wrapping_sub(self.offset_delta));
            self.offset_delta = d;
            if self.sourced {
                if source == self.last_source {
                    self.offsets.put(0, 1);
                } else {
                    self.offsets.put(1, 1);
                    self.offsets.put(u64::from(source), 16);
                }
            }
            // Gorilla 4.1.2: XOR with the channel's previous value.
            for ((v, last), window) in values
                .iter()
                .zip(self.last_values.iter_mut())
                .zip(self.windows.iter_mut())
            {
                self.values.put_xor(v.to_bits() ^ *last, window);
                *last = v.to_bits();
            }
        }
        self.n = self
            .n
            .checked_add(1)
            .expect("a block holds at most 65,535 points");
        self.last_ts = ts;
        self.last_offset = offset;
        self.last_source = source;
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
        if self.n == 0 {
            self.channels = channels;
            self.sourced = source != 0;
        }
        if self.last_ts().is_none_or(|t| t < ts) && (source == 0 || self.sourced) {
            self.push(ts, values, offset, source);
            return true;
        }
        let mut p = Points::default();
        self.decode_into(&mut p, true);
        if !p.insert(channels, ts, values, offset, source) {
            return false;
        }
        *self = OpenBlock::from_points(channels, &p);
        true
    }

    /// The header these points would close into, and the finished sections so far.
    fn finished(&self) -> (Block, Vec<u8>, Vec<u8>) {
        let header = Block {
            first_ts: self.first_ts,
            last_ts: self.last_ts,
            n: self.n,
            sourced: self.sourced,
        };
        (
            header,
            self.offsets.clone().finish(),
            self.values.clone().finish(),
        )
    }

    /// Appends the points to `out`, as [`Block::decode_into`] does.
    pub fn decode_into(&self, out: &mut Points, offsets: bool) {
        if self.n == 0 {
            return;
        }
        const INTACT: &str = "an open block decodes: it was encoded just now";
        let (header, offset_bits, value_bits) = self.finished();
        let start = out.len();
        header
            .decode_ts_section(&self.times.clone().finish(), &mut out.ts)
            .expect(INTACT);
        if offsets {
            header
                .decode_offsets_into(&offset_bits, start, out)
                .expect(INTACT);
        }
        header
            .decode_values_into(&value_bits, self.channels, out)
            .expect(INTACT);
    }

    /// The closed block of these points (at least one), and its bytes.
    pub fn close(self) -> (Block, Vec<u8>) {
        let (block, offset_bits, value_bits) = self.finished();
        let ts_bits = self.times.finish();
        let offsets_at = ts_bits.len();
        let values_at = offsets_at + offset_bits.len();
        let mut bits = Vec::with_capacity(8 + values_at + value_bits.len());
        put_varint(&mut bits, offsets_at as u64);
        put_varint(&mut bits, values_at as u64);
        bits.extend_from_slice(&ts_bits);
        bits.extend_from_slice(&offset_bits);
        bits.extend_from_slice(&value_bits);
        (block, bits)
    }

    /// Heap bytes held (capacity, not length).
    #[cfg(test)]
    pub fn heap_bytes(&self) -> usize {
        8 * self.last_values.capacity()
            + std::mem::size_of::<Window>() * self.windows.capacity()
            + self.times.bytes.capacity()
            + self.offsets.bytes.capacity()
            + self.values.bytes.capacity()
    }
}

/// The meaningful-bit window of the previous XOR of a channel (Gorilla 4.1.2).
#[derive(Debug, Clone, Copy, PartialEq)]
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

/// LEB128: seven bits a byte, low first, the high bit set on every byte but the last.
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The LEB128 number at the start of `bytes`, and the bytes after it (None: cut short or
/// longer than a u64).
fn get_varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f).checked_shl(7 * i as u32)?;
        if b & 0x80 == 0 {
            return Some((v, &bytes[i + 1..]));
        }
    }
    None
}

/// Bits, most significant first, appended to a byte buffer 32 at a time.
#[derive(Debug, Default, Clone)]
struct BitWriter {
    bytes: Vec<u8>,
    /// The last `used` (< 32) bits not yet in `bytes`.
    acc: u64,
    used: u32,
}

impl BitWriter {
    /// The low `n` bits of `v` (n <= 64).
    fn put(&mut self, v: u64, n: u32) {
        if n > 32 {
            self.put(v >> 32, n - 32);
            self.put(v, 32);
            return;
        }
        if n == 0 {
            return;
        }
        let v = v & (u64::MAX >> (64 - n));
        self.acc = (self.acc << n) | v;
        self.used += n;
        if self.used >= 32 {
            self.used -= 32;
            self.bytes
                .extend_from_slice(&((self.acc >> self.used) as u32).to_be_bytes());
            self.acc &= (1u64 << self.used) - 1;
        }
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

    /// The bytes, the last one padded with zeros.
    fn finish(mut self) -> Vec<u8> {
        while self.used >= 8 {
            self.used -= 8;
            self.bytes.push((self.acc >> self.used) as u8);
        }
        if self.used > 0 {
            self.bytes.push((self.acc << (8 - self.used)) as u8);
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
        if n == 0 {
            return Some(0);
        }
        if n > 56 {
            // One 8-byte load holds 57 bits past any bit position: split longer reads.
            let high = self.get(n - 32)?;
            return Some((high << 32) | self.get(32)?);
        }
        if self.pos + n as usize > self.bytes.len() * 8 {
            return None;
        }
        let at = self.pos / 8;
        let word = match self.bytes.get(at..at + 8) {
            Some(eight) => u64::from_be_bytes(eight.try_into().expect("eight bytes")),
            None => {
                // The last bytes of a section: pad with zeros.
                let mut word = [0u8; 8];
                word[..self.bytes.len() - at].copy_from_slice(&self.bytes[at..]);
                u64::from_be_bytes(word)
            }
        };
        let w = word << (self.pos % 8);
        self.pos += n as usize;
        Some(w >> (64 - n))
    }

    /// The next 4 bits without moving (zeros past the end): a bucket's prefix.
    fn peek4(&self) -> u64 {
        let at = self.pos / 8;
        let two = [
            self.bytes.get(at).copied().unwrap_or(0),
            self.bytes.get(at + 1).copied().unwrap_or(0),
        ];
        (u64::from(u16::from_be_bytes(two)) >> (12 - self.pos % 8)) & 0b1111
    }

    fn get_signed(&mut self) -> Option<i64> {
        // The prefixes '0', '10', '110', '1110', '1111' of `put_signed`, read at once.
        let (prefix, len) = match self.peek4() {
            0b0000..=0b0111 => (1, 0),
            0b1000..=0b1011 => (2, 7),
            0b1100..=0b1101 => (3, 12),
            0b1110 => (4, 20),
            _ => (4, 64),
        };
        if self.pos + prefix > self.bytes.len() * 8 {
            return None;
        }
        self.pos += prefix;
        let z = self.get(len)?;
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
        let (b, bits) = Block::encode(channels, points);
        b.decode_into(&bits, channels, &mut out, true).unwrap();
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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// Points arriving in any order (repeats refused) into the open block decode as the
        /// uncompressed points do, and close into the bytes `Block::encode` gives them.
        #[test]
        fn an_open_block_takes_points_in_any_order(
            (channels, p) in points(200),
            order in any::<u64>(),
        ) {
            let mut idx: Vec<usize> = (0..p.len()).collect();
            let mut x = order | 1;
            for i in (1..idx.len()).rev() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                idx.swap(i, (x % (i as u64 + 1)) as usize);
            }
            let (mut open, mut plain) = (OpenBlock::default(), Points::default());
            for &i in &idx {
                let v = &p.values[i * channels..(i + 1) * channels];
                let (t, o, s) = (p.ts[i], p.offsets[i], p.source(i));
                prop_assert_eq!(open.insert(channels, t, v, o, s), plain.insert(channels, t, v, o, s));
            }
            let mut back = Points::default();
            open.decode_into(&mut back, true);
            prop_assert!(same_bits(&plain, &back), "{plain:?} came back as {back:?}");
            let (a, a_bits) = open.close();
            let (b, b_bits) = Block::encode(channels, &plain);
            prop_assert_eq!(a_bits, b_bits);
            prop_assert_eq!(a, b);
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
        let (_, bits) = Block::encode(1, &p);
        assert!(same_bits(&round_trip(1, &p), &p));
        // Time and offset 1 bit each; a quarter-step value about 13 bits; 24 bytes raw.
        assert!(
            bits.len() < 3 * BLOCK_POINTS,
            "{} bytes for {BLOCK_POINTS} points",
            bits.len()
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
        for p in [&a, &b] {
            let (block, bits) = Block::encode(1, p);
            block.decode_into(&bits, 1, &mut out, true).unwrap();
        }
        assert_eq!(out.source_of, vec![0, 0, 0, 0, 1, 2]);
    }
}
