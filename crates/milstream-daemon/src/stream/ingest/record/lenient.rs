//! The lenient parse of payloads with non-finite numbers: the tokens are rewritten into
//! marker objects so the payload parses and only the record holding them is rejected.

/// The key of the one-entry object that stands in for a non-finite token in a leniently
/// parsed payload. Only looked for when the payload needed that rewrite (`Decoder::lenient`),
/// so ordinary data can never be mistaken for it.
pub(super) const NON_FINITE_KEY: &str = "$milstream_non_finite";

/// Rewrites the tokens `NaN`, `Infinity`, `-Infinity` and numbers that overflow `f64`
/// (outside strings) into `{"$milstream_non_finite":"<token>"}`, so the payload can be
/// parsed and the record that holds them rejected alone. `None` if there were none.
pub(super) fn replace_non_finite(payload: &[u8]) -> Option<Vec<u8>> {
    fn push_marker(out: &mut Vec<u8>, token: &[u8]) {
        out.extend_from_slice(b"{\"");
        out.extend_from_slice(NON_FINITE_KEY.as_bytes());
        out.extend_from_slice(b"\":\"");
        out.extend_from_slice(token);
        out.extend_from_slice(b"\"}");
    }

    let mut out = Vec::with_capacity(payload.len() + 64);
    let mut replaced = false;
    let mut i = 0;
    while i < payload.len() {
        let rest = &payload[i..];
        let token_len = if rest.starts_with(b"NaN") {
            3
        } else if rest.starts_with(b"Infinity") {
            8
        } else if rest.starts_with(b"-Infinity") {
            9
        } else {
            0
        };
        if token_len > 0 {
            push_marker(&mut out, &rest[..token_len]);
            replaced = true;
            i += token_len;
            continue;
        }
        match rest[0] {
            b'"' => {
                // Copy a string through its closing quote; escapes never end it.
                let mut j = 1;
                while j < rest.len() {
                    match rest[j] {
                        b'\\' => j += 2,
                        b'"' => {
                            j += 1;
                            break;
                        }
                        _ => j += 1,
                    }
                }
                let j = j.min(rest.len());
                out.extend_from_slice(&rest[..j]);
                i += j;
            }
            b'-' | b'0'..=b'9' => {
                let len = rest
                    .iter()
                    .position(|b| !matches!(b, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-'))
                    .unwrap_or(rest.len());
                let token = &rest[..len];
                // Rust's float parser saturates to infinity where serde_json reports
                // "number out of range".
                let overflows = std::str::from_utf8(token)
                    .ok()
                    .and_then(|s| s.parse::<f64>().ok())
                    .is_some_and(f64::is_infinite);
                if overflows {
                    push_marker(&mut out, token);
                    replaced = true;
                } else {
                    out.extend_from_slice(token);
                }
                i += len;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    replaced.then_some(out)
}
