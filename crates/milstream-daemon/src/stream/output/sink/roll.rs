//! Rolling by measured file size. A segment's `approx_bytes` estimates what its rows hold in
//! memory; Parquet dictionary-codes and compresses them, so the files come out several times
//! smaller, by a factor that depends on the data. Each written segment's Parquet files are
//! measured here, per source topic, and the next segments of that topic roll at the estimate
//! the measurements predict to make `roll_bytes` of files.

use std::collections::HashMap;
use std::sync::Mutex;

/// How much older measurements still weigh against a new one (per segment written).
const DECAY: f64 = 0.5;

/// Measured Parquet sizes per source topic, shared by the workers (which roll on them) and
/// the writers (which measure).
#[derive(Debug, Default)]
pub struct FileSizes {
    by_topic: Mutex<HashMap<String, Measured>>,
}

/// Decayed sums over a topic's written segments.
#[derive(Debug, Default, Clone, Copy)]
struct Measured {
    /// Encoded row bytes (file bytes less each file's fixed part).
    data: f64,
    /// The segments' `approx_bytes`.
    approx: f64,
    /// The fixed part per segment: magic numbers and footers (schema, statistics, metadata).
    fixed: f64,
    segments: f64,
}

/// One written segment's Parquet files: their total size and the fixed part of it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ParquetBytes {
    pub total: u64,
    pub fixed: u64,
}

impl ParquetBytes {
    /// The size of the encoded Parquet file `bytes`: all of it, and the part that does not
    /// grow with rows ("PAR1", the footer, its length and "PAR1" again).
    pub fn of(bytes: &[u8]) -> Self {
        let n = bytes.len();
        let footer = (n >= 12)
            .then(|| u32::from_le_bytes(bytes[n - 8..n - 4].try_into().expect("4 bytes")))
            .map_or(0, |f| f as u64);
        Self {
            total: n as u64,
            fixed: (footer + 12).min(n as u64),
        }
    }
}

impl std::ops::Add for ParquetBytes {
    type Output = Self;

    fn add(self, other: Self) -> Self {
        Self {
            total: self.total + other.total,
            fixed: self.fixed + other.fixed,
        }
    }
}

impl FileSizes {
    /// The `approx_bytes` at which a segment of `topic` rolls so that its Parquet files come
    /// to about `roll_bytes`: `roll_bytes` itself until a file of the topic was measured.
    pub fn roll_at(&self, topic: &str, roll_bytes: usize) -> usize {
        let by_topic = self.by_topic.lock().unwrap_or_else(|e| e.into_inner());
        let Some(m) = by_topic
            .get(topic)
            .filter(|m| m.approx > 0.0 && m.data > 0.0)
        else {
            return roll_bytes;
        };
        let fixed = m.fixed / m.segments;
        // At least an eighth of the target for the rows, should the fixed part come near it.
        let for_rows = (roll_bytes as f64 - fixed).max(roll_bytes as f64 / 8.0);
        (for_rows * m.approx / m.data).clamp(1.0, usize::MAX as f64 / 2.0) as usize
    }

    /// Records a written segment of `topic`: its `approx_bytes` and its Parquet files.
    pub fn record(&self, topic: &str, approx_bytes: usize, files: ParquetBytes) {
        if approx_bytes == 0 || files.total <= files.fixed {
            return;
        }
        let mut by_topic = self.by_topic.lock().unwrap_or_else(|e| e.into_inner());
        let m = by_topic.entry(topic.to_string()).or_default();
        m.data = m.data * DECAY + (files.total - files.fixed) as f64;
        m.approx = m.approx * DECAY + approx_bytes as f64;
        m.fixed = m.fixed * DECAY + files.fixed as f64;
        m.segments = m.segments * DECAY + 1.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolls_at_the_estimate_that_measured_files_predict_for_the_target() {
        let sizes = FileSizes::default();
        assert_eq!(sizes.roll_at("t", 64_000), 64_000, "nothing measured yet");
        // Files come to a fifth of the estimate plus 4,000 fixed bytes.
        sizes.record(
            "t",
            100_000,
            ParquetBytes {
                total: 24_000,
                fixed: 4_000,
            },
        );
        assert_eq!(sizes.roll_at("t", 64_000), 300_000);
        assert_eq!(sizes.roll_at("other", 64_000), 64_000, "per topic");
        // A target below the fixed part still leaves rows an eighth of it.
        assert_eq!(sizes.roll_at("t", 4_000), 2_500);
    }

    #[test]
    fn the_fixed_part_is_the_footer_and_magic_numbers() {
        use crate::stream::ingest::record::DeadLetterRecord;
        let rows: Vec<DeadLetterRecord> = (0..50)
            .map(|i| DeadLetterRecord {
                topic: "milstream.points".into(),
                partition: i % 3,
                offset: i as i64,
                reason: "parse".into(),
                detail: format!("not JSON at byte {i}"),
                raw_prefix: format!("{{garbage {i}"),
                at_ms: 1_700_000_000_000 + i as i64,
            })
            .collect();
        for rows in [&rows[..0], &rows[..]] {
            let batch = crate::stream::output::arrow::predictions::dead_letter_batch(rows);
            let bytes = crate::stream::output::sink::parquet::encode_parquet(&batch, &[]).unwrap();
            let b = ParquetBytes::of(&bytes);
            assert_eq!(b.total, bytes.len() as u64);
            assert_eq!(&bytes[..4], b"PAR1");
            // The rest is the column chunks and their page indexes, as the parquet reader's
            // metadata sizes them.
            let meta = parquet::file::metadata::ParquetMetaDataReader::new()
                .parse_and_finish(&bytes::Bytes::from(bytes.clone()))
                .unwrap();
            let data: i64 = meta.row_groups().iter().map(|g| g.compressed_size()).sum();
            let index: i64 = meta
                .row_groups()
                .iter()
                .flat_map(|g| g.columns())
                .map(|c| {
                    c.column_index_length().unwrap_or(0) as i64
                        + c.offset_index_length().unwrap_or(0) as i64
                })
                .sum();
            assert_eq!(
                b.fixed as i64,
                b.total as i64 - data - index,
                "{} rows: {b:?}",
                rows.len()
            );
            assert_eq!(data > 0, !rows.is_empty(), "{b:?}");
        }
    }
}
