//! Writing binary Avro, the inverse of `datum`: what the bench's Avro feed and the tests'
//! records are made with.

/// A `long` (or `int`): zig-zag, then a little-endian base-128 varint.
pub fn long(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// A `string` (or `bytes`): its length, then its bytes.
pub fn string(out: &mut Vec<u8>, s: &str) {
    long(out, s.len() as i64);
    out.extend_from_slice(s.as_bytes());
}

/// A `double`: 8 bytes, little-endian.
pub fn double(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(&v.to_le_bytes());
}
