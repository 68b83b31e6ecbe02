//! Parquet output: the prediction and dead-letter schemas, record batches, and the atomic
//! per-segment file write.

use std::collections::HashMap;

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::{FooterTail, KeyValue, ParquetMetaDataReader};
use parquet::file::properties::WriterProperties;

use super::roll::ParquetBytes;
use super::{
    Segment, DEAD_LETTERS_DIR, DRIFT_EVENTS_DIR, EVALUATIONS_DIR, META_QUALITY_STATE,
    META_QUALITY_THROUGH, META_SERVED_STATE, PREDICTIONS_DIR,
};
use crate::stream::output::arrow::examples::example_batch;
use crate::stream::output::arrow::predictions::{dead_letter_batch, prediction_batch};
use crate::stream::output::arrow::quality::{drift_event_batch, evaluation_batch};
use crate::stream::output::store::Store;

/// Encodes `batch` as Parquet with `metadata` in the file's key-value metadata.
pub fn encode_parquet(
    batch: &RecordBatch,
    metadata: &[(String, String)],
) -> std::io::Result<Vec<u8>> {
    let kv = metadata
        .iter()
        .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
        .collect();
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_key_value_metadata(Some(kv))
        .build();
    let mut w = ArrowWriter::try_new(Vec::new(), batch.schema(), Some(props))
        .map_err(std::io::Error::other)?;
    w.write(batch).map_err(std::io::Error::other)?;
    w.into_inner().map_err(std::io::Error::other)
}

/// Writes `batch` as `rel` of `store`, visible at once and whole; returns its size.
pub fn write_parquet(
    store: &Store,
    rel: &str,
    batch: &RecordBatch,
    metadata: &[(String, String)],
) -> std::io::Result<ParquetBytes> {
    let bytes = encode_parquet(batch, metadata)?;
    let size = ParquetBytes::of(&bytes);
    store.put(rel, bytes)?;
    Ok(size)
}

/// The key-value metadata of a Parquet file; see [`read_footer_metadata`].
pub fn read_key_value_metadata(
    store: &Store,
    rel: &str,
) -> std::io::Result<HashMap<String, String>> {
    read_footer_metadata(store, rel).map(|(kv, _)| kv)
}

/// The key-value metadata of a Parquet file, from its footer alone: a ranged read of the
/// last 8 bytes (the footer's length and "PAR1"), then one of the footer, so an object of
/// any size costs two small GETs. Returns the metadata and the bytes fetched.
pub fn read_footer_metadata(
    store: &Store,
    rel: &str,
) -> std::io::Result<(HashMap<String, String>, u64)> {
    let bad = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    let (tail, size) = store
        .get_tail(rel, FOOTER_SIZE as u64)?
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, rel.to_string()))?;
    let tail: [u8; FOOTER_SIZE] = tail
        .try_into()
        .map_err(|_| bad(format!("{rel}: {size} bytes, too short for Parquet")))?;
    let footer = FooterTail::try_new(&tail).map_err(|e| bad(format!("{rel}: {e}")))?;
    let len = footer.metadata_length() as u64;
    let end = size - FOOTER_SIZE as u64;
    if len > end {
        return Err(bad(format!(
            "{rel}: footer of {len} bytes in a {size}-byte file"
        )));
    }
    let meta = store.get_range(rel, end - len..end)?;
    let fetched = (FOOTER_SIZE + meta.len()) as u64;
    let meta =
        ParquetMetaDataReader::decode_metadata(&meta).map_err(|e| bad(format!("{rel}: {e}")))?;
    let kv = meta
        .file_metadata()
        .key_value_metadata()
        .cloned()
        .into_iter()
        .flatten()
        .filter_map(|kv| Some((kv.key, kv.value?)))
        .collect();
    Ok((kv, fetched))
}

/// The Parquet file's last bytes: the footer's length (4) and "PAR1" (4).
const FOOTER_SIZE: usize = 8;

/// Bytes written per kind of file, for metrics.
#[derive(Debug, Default, Clone, Copy)]
pub struct Written {
    pub prediction_files: u64,
    pub prediction_bytes: u64,
    pub dead_letter_files: u64,
    pub dead_letter_bytes: u64,
    /// Both files' sizes, for rolling by measured size.
    pub parquet: ParquetBytes,
}

/// Writes a segment's non-empty parts: `predictions/<partition>/<stem>.parquet`,
/// `dead_letters/`, `evaluations/` and `drift_events/` the same, each visible at once and
/// whole.
pub fn write_segment(store: &Store, seg: &Segment, by_hour: bool) -> std::io::Result<Written> {
    let mut w = Written::default();
    let name = format!(
        "{}/{}.parquet",
        seg.partition_folder(by_hour),
        seg.file_stem()
    );
    if !seg.predictions.is_empty() {
        let mut meta = seg.file_metadata();
        if let Some(state) = &seg.served_checkpoint {
            meta.push((META_SERVED_STATE.into(), state.clone()));
        }
        let b = write_parquet(
            store,
            &format!("{PREDICTIONS_DIR}/{name}"),
            &prediction_batch(&seg.predictions),
            &meta,
        )?;
        (w.prediction_files, w.prediction_bytes) = (1, b.total);
        w.parquet = w.parquet + b;
    }
    if !seg.dead_letters.is_empty() {
        let b = write_parquet(
            store,
            &format!("{DEAD_LETTERS_DIR}/{name}"),
            &dead_letter_batch(&seg.dead_letters),
            &seg.file_metadata(),
        )?;
        (w.dead_letter_files, w.dead_letter_bytes) = (1, b.total);
        w.parquet = w.parquet + b;
    }
    // Graded labels and drift events, beside the predictions under the same names: a
    // replay rewrites them with the segment, as it does the predictions.
    let q = &seg.quality;
    if !q.evaluations.is_empty() {
        let rel = format!("{EVALUATIONS_DIR}/{name}");
        // The label partition's detector state after the file's last label: what a new
        // owner restores (`quality::restore`).
        let mut meta = seg.file_metadata();
        if let Some((through, state)) = &q.checkpoint {
            meta.push((META_QUALITY_THROUGH.into(), through.to_string()));
            meta.push((META_QUALITY_STATE.into(), state.clone()));
        }
        let b = write_parquet(store, &rel, &evaluation_batch(&q.evaluations), &meta)?;
        w.parquet = w.parquet + b;
    }
    if !q.drift_events.is_empty() {
        let rel = format!("{DRIFT_EVENTS_DIR}/{name}");
        let b = write_parquet(
            store,
            &rel,
            &drift_event_batch(&q.drift_events),
            &seg.file_metadata(),
        )?;
        w.parquet = w.parquet + b;
    }
    Ok(w)
}

/// Writes a segment's examples into the training store, `<partition>/<stem>.parquet`,
/// with the segment's metadata; returns its size.
pub fn write_examples(
    store: &Store,
    seg: &Segment,
    by_hour: bool,
) -> std::io::Result<ParquetBytes> {
    write_parquet(
        store,
        &format!(
            "{}/{}.parquet",
            seg.partition_folder(by_hour),
            seg.file_stem()
        ),
        &example_batch(&seg.examples),
        &seg.file_metadata(),
    )
}
