//! The message indexes of a Protobuf message in the Confluent wire format: which message of
//! the schema's file the body is. A zig-zag varint count, then that many zig-zag varint
//! indexes, the first into the file's top-level messages, each next one into the nested
//! messages of the one before; a count of 0 (the single byte 0) stands for `[0]`, the
//! file's first message.
//!
//! Bounded: a count past [`MAX_INDEXES`] (or past the bytes left, each index taking at least
//! one) is an error before anything is allocated.

/// Most indexes read: messages nested deeper than this cannot be named (protobuf's own
/// parsers stop at a depth of 100; schemas nest two or three deep).
pub const MAX_INDEXES: usize = 32;

/// Message indexes, kept inline (no allocation per message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Indexes {
    len: usize,
    items: [i32; MAX_INDEXES],
}

impl Indexes {
    fn new() -> Self {
        Self {
            len: 0,
            items: [0; MAX_INDEXES],
        }
    }

    fn push(&mut self, i: i32) {
        self.items[self.len] = i;
        self.len += 1;
    }

    pub fn as_slice(&self) -> &[i32] {
        &self.items[..self.len]
    }
}

/// The indexes at the start of `body` and the message bytes after them.
pub fn read(body: &[u8]) -> Result<(Indexes, &[u8]), String> {
    let mut rest = body;
    let mut out = Indexes::new();
    let count = varint(&mut rest)?;
    if count == 0 {
        out.push(0);
        return Ok((out, rest));
    }
    let count = usize::try_from(count)
        .ok()
        .filter(|&c| c <= MAX_INDEXES)
        .ok_or_else(|| format!("{count} message indexes (at most {MAX_INDEXES} are read)"))?;
    if count > rest.len() {
        return Err(format!(
            "truncated: {count} message indexes with {} bytes left",
            rest.len()
        ));
    }
    // At most MAX_INDEXES pushes (checked above).
    for _ in 0..count {
        let i = varint(&mut rest)?;
        out.push(
            i32::try_from(i)
                .ok()
                .filter(|i| *i >= 0)
                .ok_or_else(|| format!("a message index of {i}"))?,
        );
    }
    Ok((out, rest))
}

/// Writes `indexes` as a producer does (`[0]` as the single byte 0).
pub fn write(out: &mut Vec<u8>, indexes: &[i32]) {
    if indexes == [0] {
        out.push(0);
        return;
    }
    zigzag(out, indexes.len() as i64);
    indexes.iter().for_each(|&i| zigzag(out, i64::from(i)));
}

/// A zig-zag varint of at most 10 bytes, taken from the front of `rest`.
fn varint(rest: &mut &[u8]) -> Result<i64, String> {
    let mut value: u64 = 0;
    for i in 0..10 {
        let Some((&b, tail)) = rest.split_first() else {
            return Err("truncated: the message indexes end early".into());
        };
        *rest = tail;
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
        }
    }
    Err("a message index varint longer than 10 bytes".into())
}

fn zigzag(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_round_trip_and_zero_is_the_first_message() {
        let read = |b: &[u8]| read(b).map(|(ix, rest)| (ix.as_slice().to_vec(), rest.to_vec()));
        for indexes in [vec![0], vec![1], vec![0, 2], vec![3, 0, 70], vec![1000]] {
            let mut bytes = Vec::new();
            write(&mut bytes, &indexes);
            bytes.extend_from_slice(b"msg");
            assert_eq!(read(&bytes).unwrap(), (indexes, b"msg".to_vec()));
        }
        // The single byte 0 is [0]; the long form [1, 0] (count 1, index 0) is the same.
        assert_eq!(read(&[0]).unwrap(), (vec![0], vec![]));
        assert_eq!(read(&[2, 0, 9]).unwrap(), (vec![0], vec![9]));
        // Zig-zag: count 2 is the byte 4, index 1 is the byte 2.
        assert_eq!(read(&[4, 2, 4]).unwrap(), (vec![1, 2], vec![]));
    }

    #[test]
    fn broken_indexes_are_errors_not_allocations() {
        let cases: [(&[u8], &str); 6] = [
            (&[], "truncated"),
            (&[6, 2], "truncated"),
            // A count of 2^40: refused before any allocation.
            (
                &[0x80, 0x80, 0x80, 0x80, 0x80, 0x20],
                "message indexes (at most 32",
            ),
            (&[1], "message indexes"), // a count of -1
            (&[2, 1], "a message index of -1"),
            (&[0xff; 11], "longer than 10 bytes"),
        ];
        for (bytes, needle) in cases {
            let e = read(bytes).unwrap_err();
            assert!(e.contains(needle), "{bytes:?}: {e}");
        }
        assert!(read(&[2, 0xfe, 0xff, 0xff, 0xff, 0x1f])
            .unwrap_err()
            .contains("index of"));
    }
}
