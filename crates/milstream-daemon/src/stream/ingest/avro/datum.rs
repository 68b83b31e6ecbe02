//! Binary Avro data (the spec's "binary encoding") read with the writer's schema into JSON
//! values. Nothing is allocated from a length on the wire before it is checked against the
//! bytes that remain: a string or bytes of n bytes needs n bytes, and every array or map
//! item takes at least one byte, so a length prefix of 2^40 is an error, not an allocation,
//! and what one message can make the daemon hold is bounded by its size
//! (`limits.max_message_bytes`), as for JSON.

use serde_json::{Map, Value};

use super::schema::{Record, Schema, MAX_DEPTH};
use crate::stream::ingest::record::number_value;

/// A reader over one datum's bytes.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// A double or float was NaN or infinite: it is a marker in the value.
    pub non_finite: bool,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self {
            buf,
            pos: 0,
            non_finite: false,
        }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.remaining() {
            return Err(format!(
                "truncated: {n} bytes needed at byte {}, {} left",
                self.pos,
                self.remaining()
            ));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// A zig-zag varint of at most 10 bytes.
    pub fn long(&mut self) -> Result<i64, String> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let b = self.take(1)?[0];
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
            }
        }
        Err(format!(
            "a varint longer than 10 bytes at byte {}",
            self.pos
        ))
    }

    fn int(&mut self) -> Result<i64, String> {
        let v = self.long()?;
        i32::try_from(v)
            .map(i64::from)
            .map_err(|_| format!("int {v} out of range"))
    }

    /// A length (of a string, bytes) that the remaining bytes can hold.
    fn len(&mut self) -> Result<usize, String> {
        let n = self.long()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.remaining())
            .ok_or_else(|| {
                format!(
                    "truncated: a length of {n} at byte {} with {} bytes left",
                    self.pos,
                    self.remaining()
                )
            })
    }

    /// The item count of the next block of an array or map (0 at the end): at most the
    /// bytes left, as every item takes at least one.
    pub fn block(&mut self) -> Result<usize, String> {
        let n = self.long()?;
        if n < 0 {
            // A negative count is followed by the block's size in bytes.
            self.long()?;
        }
        let count = n.unsigned_abs();
        usize::try_from(count)
            .ok()
            .filter(|&c| c <= self.remaining())
            .ok_or_else(|| {
                format!(
                    "truncated: a block of {count} items at byte {} with {} bytes left",
                    self.pos,
                    self.remaining()
                )
            })
    }

    fn float(&mut self, v: f64) -> Value {
        number_value(v, &mut self.non_finite)
    }

    /// A string borrowed from the datum.
    pub fn str_ref(&mut self) -> Result<&'a str, String> {
        let n = self.len()?;
        let at = self.pos;
        std::str::from_utf8(self.take(n)?)
            .map_err(|_| format!("a string at byte {at} is not UTF-8"))
    }

    /// A double as it is (NaN and infinities too).
    pub fn double(&mut self) -> Result<f64, String> {
        let b = self.take(8)?;
        Ok(f64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    fn string(&mut self) -> Result<String, String> {
        let n = self.len()?;
        let at = self.pos;
        let bytes = self.take(n)?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| format!("a string at byte {at} is not UTF-8"))
    }

    /// One value of `schema`. A record's fields keep their writer names; use
    /// [`Reader::record`] to rename them.
    pub fn value(&mut self, schema: &Schema, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(format!("values nested deeper than {MAX_DEPTH}"));
        }
        Ok(match schema {
            Schema::Null => Value::Null,
            Schema::Boolean => match self.take(1)?[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => return Err(format!("a boolean byte of {b}")),
            },
            Schema::Int => Value::from(self.int()?),
            Schema::Long { .. } => Value::from(self.long()?),
            Schema::Float => {
                let b = self.take(4)?;
                let v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                self.float(f64::from(v))
            }
            Schema::Double => {
                let b = self.take(8)?;
                let v = f64::from_le_bytes(b.try_into().expect("8 bytes"));
                self.float(v)
            }
            Schema::Bytes | Schema::String => Value::String(self.string()?),
            Schema::Fixed(n) => {
                self.take(*n)?;
                Value::Null
            }
            Schema::Enum(symbols) => {
                let i = self.int()?;
                let s = usize::try_from(i)
                    .ok()
                    .and_then(|i| symbols.get(i))
                    .ok_or_else(|| format!("enum index {i} of {} symbols", symbols.len()))?;
                Value::String(s.clone())
            }
            Schema::Union(branches) => {
                let i = self.long()?;
                let branch = usize::try_from(i)
                    .ok()
                    .and_then(|i| branches.get(i))
                    .ok_or_else(|| format!("union branch {i} of {}", branches.len()))?;
                self.value(branch, depth + 1)?
            }
            Schema::Array(items) => {
                let mut out = Vec::new();
                self.items(|r| {
                    out.push(r.value(items, depth + 1)?);
                    Ok(())
                })?;
                Value::Array(out)
            }
            Schema::Map(values) => {
                let mut out = Map::new();
                self.items(|r| {
                    let k = r.string()?;
                    out.insert(k, r.value(values, depth + 1)?);
                    Ok(())
                })?;
                Value::Object(out)
            }
            Schema::Record(rec) => {
                let mut out = Map::new();
                for f in &rec.fields {
                    out.insert(f.name.clone(), self.value(&f.schema, depth + 1)?);
                }
                Value::Object(out)
            }
        })
    }

    /// Reads the blocks of an array or map, `item` once per item; an item that takes no
    /// bytes is refused (so a count cannot make it loop without reading).
    fn items(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Result<(), String>,
    ) -> Result<(), String> {
        loop {
            let count = self.block()?;
            if count == 0 {
                return Ok(());
            }
            for _ in 0..count {
                let at = self.pos;
                item(self)?;
                if self.pos == at {
                    return Err("array or map items of zero bytes".into());
                }
            }
        }
    }

    /// A record as a JSON object: field `i` under `names[i]` (milstream's name for it), or
    /// read and dropped when `None`. A null (an absent optional field) is left out, as an
    /// absent JSON key.
    pub fn record(&mut self, rec: &Record, names: &[Option<String>]) -> Result<Value, String> {
        let mut out = Map::new();
        for (f, name) in rec.fields.iter().zip(names) {
            let v = self.value(&f.schema, 1)?;
            if let (Some(name), false) = (name, v.is_null()) {
                out.insert(name.clone(), v);
            }
        }
        Ok(Value::Object(out))
    }

    /// An array of records, each as [`Reader::record`].
    pub fn records(&mut self, rec: &Record, names: &[Option<String>]) -> Result<Value, String> {
        let mut out = Vec::new();
        self.items(|r| {
            out.push(r.record(rec, names)?);
            Ok(())
        })?;
        Ok(Value::Array(out))
    }
}

#[cfg(test)]
mod tests {
    use super::super::schema::parse;
    use super::*;
    use crate::stream::ingest::record::non_finite_marker;

    fn zigzag(v: i64) -> Vec<u8> {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        let mut out = Vec::new();
        loop {
            let b = (z & 0x7f) as u8;
            z >>= 7;
            if z == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    #[test]
    fn varints_round_trip() {
        for v in [0, -1, 1, 63, -64, 64, i64::MAX, i64::MIN, 1_732_550_400_123] {
            assert_eq!(Reader::new(&zigzag(v)).long().unwrap(), v);
        }
        assert!(Reader::new(&[0xff; 11]).long().is_err());
    }

    /// A length prefix of 2^40 (array, string, map) is refused before anything is allocated.
    #[test]
    fn huge_lengths_are_errors_not_allocations() {
        for ty in [
            r#"{"type":"array","items":"double"}"#,
            r#"{"type":"map","values":"long"}"#,
            r#""string""#,
        ] {
            let schema = parse(ty).unwrap();
            let mut bytes = zigzag(1 << 40);
            bytes.extend([0u8; 16]);
            let e = Reader::new(&bytes).value(&schema, 0).unwrap_err();
            assert!(e.starts_with("truncated"), "{ty}: {e}");
        }
        // Items of no bytes cannot spin: an array of nulls is refused.
        let nulls = parse(r#"{"type":"array","items":"null"}"#).unwrap();
        let e = Reader::new(&[2, 0]).value(&nulls, 0).unwrap_err();
        assert!(e.contains("zero bytes"), "{e}");
    }

    #[test]
    fn non_finite_doubles_become_markers() {
        let schema = parse(r#"{"type":"array","items":"double"}"#).unwrap();
        let mut bytes = vec![4];
        bytes.extend(f64::NAN.to_le_bytes());
        bytes.extend(0.5f64.to_le_bytes());
        bytes.push(0);
        let mut r = Reader::new(&bytes);
        let v = r.value(&schema, 0).unwrap();
        assert!(r.non_finite);
        assert_eq!(v[1], 0.5);
        assert_eq!(v[0], non_finite_marker("NaN"));
    }
}
