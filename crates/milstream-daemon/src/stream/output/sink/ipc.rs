//! Arrow IPC stream output: the same rows as the Parquet file, as `arrow/<date>/<stem>.arrows`,
//! for consumers that want Arrow without a Parquet reader.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_ipc::writer::StreamWriter;

use super::{Segment, ARROW_DIR};
use crate::stream::output::arrow::predictions::prediction_batch;
use crate::stream::output::store::Store;

/// Writes the segment's predictions as an Arrow IPC stream file; returns the bytes written.
pub fn write_segment_ipc(store: &Store, seg: &Segment, by_hour: bool) -> std::io::Result<u64> {
    if seg.predictions.is_empty() {
        return Ok(0);
    }
    // The segment's metadata rides in the IPC schema's metadata.
    let batch = prediction_batch(&seg.predictions);
    let schema = Arc::new(
        batch
            .schema()
            .as_ref()
            .clone()
            .with_metadata(seg.file_metadata().into_iter().collect::<HashMap<_, _>>()),
    );
    let batch = batch.with_schema(schema).map_err(std::io::Error::other)?;
    let mut w =
        StreamWriter::try_new(Vec::new(), &batch.schema()).map_err(std::io::Error::other)?;
    w.write(&batch).map_err(std::io::Error::other)?;
    w.finish().map_err(std::io::Error::other)?;
    let bytes = w.into_inner().map_err(std::io::Error::other)?;
    let rel = format!(
        "{ARROW_DIR}/{}/{}.arrows",
        seg.partition_folder(by_hour),
        seg.file_stem()
    );
    store.put(&rel, bytes)
}
