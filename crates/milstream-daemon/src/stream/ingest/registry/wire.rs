//! The Confluent wire format's framing, common to its Avro and Protobuf messages: a zero
//! byte, the writer schema's id in the registry (4 bytes, big-endian), then the encoded
//! body (for Protobuf, after its message indexes).

use crate::stream::ingest::record::{DeadReason, DecodeLimits, Rejected};

/// The wire format's first byte.
const MAGIC: u8 = 0;

/// The bytes before the body: the magic byte and the schema id.
pub const HEADER_BYTES: usize = 5;

/// The schema id of a message in the wire format, if it is one.
pub fn schema_id(payload: &[u8]) -> Option<u32> {
    match payload {
        [MAGIC, a, b, c, d, ..] => Some(u32::from_be_bytes([*a, *b, *c, *d])),
        _ => None,
    }
}

/// Frames a body in the wire format (benchmarks and tests).
pub fn frame(id: u32, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES + body.len());
    out.push(MAGIC);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// A message's schema id and body, or its dead letter: `oversized` past
/// `max_message_bytes` (checked first, as for JSON), `parse` when it is not the wire format.
pub fn unframe<'a>(payload: &'a [u8], limits: &DecodeLimits) -> Result<(u32, &'a [u8]), Rejected> {
    if payload.len() > limits.max_message_bytes {
        return Err(Rejected::new(
            DeadReason::Oversized,
            format!(
                "message is {} bytes, more than max_message_bytes = {}",
                payload.len(),
                limits.max_message_bytes
            ),
        ));
    }
    match schema_id(payload) {
        Some(id) => Ok((id, &payload[HEADER_BYTES..])),
        None => Err(Rejected::new(
            DeadReason::Parse,
            "not the Confluent wire format (a zero byte and a 4-byte schema id first)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_other_bytes_are_refused() {
        let limits = DecodeLimits {
            max_message_bytes: 16,
            max_bag_instances: 1,
            max_id_bytes: 1,
        };
        let framed = frame(0x0102_0304, b"abc");
        assert_eq!(framed, [0, 1, 2, 3, 4, b'a', b'b', b'c']);
        assert_eq!(
            unframe(&framed, &limits).unwrap(),
            (0x0102_0304, &b"abc"[..])
        );
        assert_eq!(unframe(&frame(7, b""), &limits).unwrap(), (7, &b""[..]));
        for bad in [&b"{}"[..], &[0, 0, 0, 1], &[1, 0, 0, 0, 1, 2]] {
            let e = unframe(bad, &limits).unwrap_err();
            assert_eq!(e.reason, DeadReason::Parse, "{bad:?}");
        }
        let e = unframe(&[0; 17], &limits).unwrap_err();
        assert_eq!(e.reason, DeadReason::Oversized);
    }
}
