//! Every Arrow schema of the outputs, the record batches the writers make of the rows, and
//! their read-back: the predictions and dead letters (`predictions`), the quality tables
//! (`quality`: evaluations, drift events) and the training store (`examples`). Each
//! table's columns are documented in schemas/README.md.

use std::sync::Arc;

use arrow_array::{RecordBatch, TimestampMicrosecondArray, TimestampMillisecondArray};
use arrow_schema::{DataType, Field, TimeUnit};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};

use crate::stream::output::store::Store;

pub mod examples;
pub mod predictions;
pub mod quality;

/// Why a table file could not be read back, as its readers must tell apart: the store
/// failed (retry), or the bytes do not decode (retrying reads the same).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Store(#[from] std::io::Error),
    /// Parquet or Arrow could not decode it, or a column is missing or of another type.
    #[error("{0}")]
    Data(String),
}

impl From<parquet::errors::ParquetError> for ReadError {
    fn from(e: parquet::errors::ParquetError) -> Self {
        ReadError::Data(e.to_string())
    }
}

impl From<arrow_schema::ArrowError> for ReadError {
    fn from(e: arrow_schema::ArrowError) -> Self {
        ReadError::Data(e.to_string())
    }
}

/// A data error: what is wrong with the bytes.
pub fn bad_data(what: impl Into<String>) -> ReadError {
    ReadError::Data(what.into())
}

/// Every timestamp column of the columnar outputs: microseconds since the epoch,
/// UTC (`timestamp[us, tz=UTC]`, Parquet `TIMESTAMP(MICROS, isAdjustedToUTC)`), the unit
/// Spark, DuckDB and Athena/Trino read natively; the daemon's records hold milliseconds
/// and are scaled on the way out.
pub fn ts_type() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

/// Milliseconds (the records' unit) to the columns' microseconds.
pub fn ms_to_us(ms: i64) -> i64 {
    ms.saturating_mul(1000)
}

/// A list column of `t` (nullable items, as Arrow writers name them: `item`).
pub fn list_of(t: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", t, true)))
}

/// A timestamp column as milliseconds (None for nulls): microseconds as written today, or
/// milliseconds as files written before the switch to microseconds hold.
pub fn timestamps_ms(batch: &RecordBatch, name: &str) -> Result<Vec<Option<i64>>, ReadError> {
    let col = batch
        .column_by_name(name)
        .ok_or_else(|| bad_data(format!("column `{name}` is missing")))?;
    let any = col.as_any();
    if let Some(a) = any.downcast_ref::<TimestampMicrosecondArray>() {
        Ok(a.iter().map(|v| v.map(|us| us.div_euclid(1000))).collect())
    } else if let Some(a) = any.downcast_ref::<TimestampMillisecondArray>() {
        Ok(a.iter().collect())
    } else {
        Err(bad_data(format!(
            "column `{name}` is {}, not a timestamp in ms or us",
            col.data_type()
        )))
    }
}

pub fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> Result<&'a T, ReadError> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| bad_data(format!("column `{name}` is missing or of another type")))
}

/// The record batches of one Parquet file of the store (training examples, evaluations).
pub fn read_batches(store: &Store, rel: &str) -> Result<ParquetRecordBatchReader, ReadError> {
    let bytes = store
        .get(rel)?
        .ok_or_else(|| bad_data(format!("{rel} is gone")))?;
    Ok(ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))?.build()?)
}
