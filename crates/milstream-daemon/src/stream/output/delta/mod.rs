//! Delta Lake output (`output.format = "delta"`): `predictions/`, `dead_letters/`,
//! `evaluations/` and `drift_events/` under `output.dir` are Delta tables, written exactly
//! once through the tables' own transactions (`txn` actions, Delta protocol "Transaction
//! Identifiers"). See docs/DELIVERY.md, "Delta tables".
//!
//! Why no delta-rs: `deltalake-core` 1.1.3 (the newest; rust-version 1.95) needs arrow and
//! parquet 59 and delta_kernel 0.28 (with its own arrow), 0.31.1 needs arrow/parquet 57 and
//! object_store 0.12; the daemon builds arrow/parquet 60.1 and object_store 0.13. Either
//! would compile a second arrow and parquet (and a second object store client). So, as
//! kafka-delta-ingest did before delta-rs had a commit builder, the daemon's own Parquet
//! writer makes the data files and this module writes the log: `protocol` and `metaData`
//! on version 0, then `add` + `txn` + `commitInfo` per flush, each commit created only if
//! absent (a local hard link; on an object store a conditional PUT).
//!
//! - `actions`: the JSON actions written and read.
//! - `schema`: the Arrow schema as a Delta `schemaString`, unsigned columns widened.
//! - `commit`: a version's commit file, created only if absent.
//! - `checkpoint`: reading a checkpoint another writer left.
//! - `log`: one table's log as last read (newest version, `txn` per app id, schema).
//! - `recent`: each partition's newest data files, from the log (the detectors' checkpoints).
//! - `table`: appending a segment's rows of one kind, exactly once.
//! - `tables`: the four tables, a segment's write and a partition's replay point.

pub mod actions;
pub mod checkpoint;
pub mod commit;
pub mod log;
pub mod recent;
pub mod schema;
pub mod table;
pub mod tables;

pub use tables::DeltaTables;

/// The value of `output.format` that selects the tables.
pub const FORMAT_DELTA: &str = "delta";

/// The one-line command the start banner prints to read the predictions table under
/// `out` (a path or a store URL) with the `deltalake` Python package.
pub fn read_command(out: &str) -> String {
    format!(
        "python3 -c \"import deltalake; print(deltalake.DeltaTable('{}/predictions').to_pandas())\"  (a Delta table; pip install deltalake)",
        out.trim_end_matches('/')
    )
}
