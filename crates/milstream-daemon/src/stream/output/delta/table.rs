//! Appending one segment's rows of one kind to its table, exactly once: the rows the table
//! does not hold yet (source offsets from the partition's `txn` version on) become one
//! data file and one commit of `add` + `txn` (+ `commitInfo`), made only if no other
//! writer took that version. Losing the race means reading what the winner committed: when
//! it moved this partition's `txn` (an earlier owner still flushing, or a new one), the
//! rows are filtered again and the data file written anew, so a zombie's overlap is
//! dropped, never appended twice.
//!
//! What makes the `txn` mean "every row of the partition below it is in the table": each
//! writer's segments run on without a gap from where its replay emits, the Kafka commit,
//! which is never past rows no table holds (it follows the commits). A writer whose first
//! segment started past the table's version with rows between would lose those rows to a
//! later writer's filter; the daemon never makes one.

use std::collections::BTreeMap;
use std::sync::Mutex;

use arrow_array::RecordBatch;
use tracing::info;

use super::actions::{self, Action, Add, CommitInfo, Format, Metadata, Protocol, Txn};
use super::commit::{log_file, put_commit, CommitError};
use super::log::TableLog;
use super::schema::{for_delta, grown, schema_string};
use crate::stream::output::sink::parquet::encode_parquet;
use crate::stream::output::sink::roll::ParquetBytes;
use crate::stream::output::sink::Segment;
use crate::stream::output::store::Store;

/// The app ids of a partition's commits: `milstream/<group>/<topic>/<partition>` (version:
/// the offset after the segment's last) and the same with `/replay_from` (version: the
/// segment's replay point, which a restart needs besides the offset).
#[derive(Debug, Clone)]
pub struct AppIds {
    pub next: String,
    pub replay_from: String,
}

impl AppIds {
    pub fn new(group: &str, topic: &str, partition: i32) -> Self {
        let next = format!("milstream/{group}/{topic}/{partition}");
        Self {
            replay_from: format!("{next}/replay_from"),
            next,
        }
    }

    /// The app id that guards a segment's commit: the partition's (`next`), or for a
    /// late-labels segment one of its own, `<next>/late/<first offset>`. Late labels' rows
    /// lie below the partition's progress by design (their segment was sealed before they
    /// joined); a replay joins them again into the same segment, which its own `txn` then
    /// finds committed.
    fn guard(&self, seg: &Segment) -> String {
        if seg.late_labels {
            format!("{}/late/{}", self.next, seg.first_offset)
        } else {
            self.next.clone()
        }
    }
}

/// A segment's rows of one kind from a source offset on, as a batch and the file's
/// key-value metadata; None when no row is left.
pub type Rows<'a> = &'a dyn Fn(i64) -> Option<(RecordBatch, Vec<(String, String)>)>;

/// What an append did.
#[derive(Debug, Clone, Copy)]
pub enum Appended {
    /// A data file of this many bytes, committed.
    Committed(ParquetBytes),
    /// Nothing to commit: no row of the kind, or the table already holds them.
    Held,
}

/// How often a commit is tried again after losing a version to another writer before the
/// segment's attempt fails (the writer then retries it with backoff).
const COMMIT_RACES: usize = 32;

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Appends `seg`'s rows of one kind (`rows`) to the table `log` describes.
pub fn append(
    store: &Store,
    log: &Mutex<TableLog>,
    app: &AppIds,
    (seg, by_hour): (&Segment, bool),
    rows: Rows,
) -> std::io::Result<Appended> {
    let dir = log.lock().expect("table log").dir;
    let guard = app.guard(seg);
    for _ in 0..COMMIT_RACES {
        let held = {
            let mut l = log.lock().expect("table log");
            if l.version.is_none() {
                l.catch_up(store)?;
            }
            l.txn(&guard)
        };
        // A late-labels segment is committed whole or not at all (its guard is its own).
        let from = match held {
            Some(h) if h > seg.last_offset => return Ok(Appended::Held),
            Some(h) if !seg.late_labels => h.max(seg.first_offset),
            _ => seg.first_offset,
        };
        let Some((batch, meta)) = rows(from) else {
            return Ok(Appended::Held);
        };
        let batch = for_delta(&batch).map_err(std::io::Error::other)?;
        let name = format!(
            "{}/{}-{:016x}.parquet",
            seg.partition_folder(by_hour),
            seg.file_stem(),
            rand::random::<u64>()
        );
        let bytes = encode_parquet(&batch, &meta)?;
        let size = ParquetBytes::of(&bytes);
        store.put(&format!("{dir}/{name}"), bytes)?;
        let add = Add {
            path: actions::uri_path(&name),
            partition_values: BTreeMap::new(),
            size: size.total as i64,
            modification_time: now_ms(),
            data_change: true,
            stats: Some(format!("{{\"numRecords\":{}}}", batch.num_rows())),
        };
        let schema = schema_string(&batch.schema()).map_err(std::io::Error::other)?;
        let mut l = log.lock().expect("table log");
        match commit_file(store, &mut l, (app, &guard), seg, (add, &schema), held) {
            Ok(true) => return Ok(Appended::Committed(size)),
            // The partition's progress moved under us: this file's rows are stale.
            Ok(false) => {
                let _ = store.delete(&format!("{dir}/{name}"));
            }
            // An I/O error may hide a commit that was made: the file stays (a later
            // attempt finds the commit, or `vacuum` removes the file).
            Err(CommitError::Io(e)) => return Err(e),
            Err(e) => return Err(std::io::Error::new(std::io::ErrorKind::Unsupported, e)),
        }
    }
    Err(std::io::Error::other(format!(
        "{dir}: lost {COMMIT_RACES} commit races in a row"
    )))
}

/// Commits `add` as the next version while the segment's guarding `txn` is still `held`:
/// true when made, false when another writer moved it meanwhile (the file must be
/// rewritten).
fn commit_file(
    store: &Store,
    l: &mut TableLog,
    (app, guard): (&AppIds, &str),
    seg: &Segment,
    (add, schema): (Add, &str),
    held: Option<i64>,
) -> Result<bool, CommitError> {
    loop {
        if l.txn(guard) != held {
            return Ok(false);
        }
        let version = l.version.map_or(0, |v| v + 1);
        let mut actions = table_actions(l, schema)?;
        let now = now_ms();
        // The partition's progress never goes back (a late segment lies below it).
        let next = (seg.last_offset + 1).max(l.txn(&app.next).unwrap_or(i64::MIN));
        actions.push(Action::Add(add.clone()));
        if guard != app.next {
            actions.push(Action::Txn(Txn {
                app_id: guard.to_string(),
                version: seg.last_offset + 1,
                last_updated: Some(now),
            }));
        }
        actions.push(Action::Txn(Txn {
            app_id: app.next.clone(),
            version: next,
            last_updated: Some(now),
        }));
        actions.push(Action::Txn(Txn {
            app_id: app.replay_from.clone(),
            version: seg.replay_from,
            last_updated: Some(now),
        }));
        actions.push(Action::CommitInfo(CommitInfo {
            timestamp: now,
            operation: "STREAMING UPDATE".into(),
            operation_parameters: BTreeMap::from([
                ("outputMode".into(), "Append".into()),
                ("queryId".into(), app.next.clone()),
                ("epochId".into(), next.to_string()),
            ]),
            client_version: Some(format!("milstream-{}", env!("CARGO_PKG_VERSION"))),
        }));
        match put_commit(store, l.dir, version, actions::encode(&actions)) {
            Ok(()) => {
                l.apply(version, &actions);
                return Ok(true);
            }
            Err(CommitError::Conflict(v)) => {
                // A put retried after its answer was lost (S3 made it, then said 500) finds
                // its own commit there: made, and its file must stay.
                if holds_add(store, l.dir, v, &add.path)? {
                    l.catch_up(store)?;
                    return Ok(true);
                }
                info!(
                    table = l.dir,
                    version = v,
                    app_id = app.next,
                    "delta commit lost to another writer: reading its commits"
                );
                l.catch_up(store)?
            }
            Err(e) => return Err(e),
        }
    }
}

/// Whether the commit of `version` adds the data file `path` (names are unique per attempt).
fn holds_add(store: &Store, dir: &str, version: i64, path: &str) -> Result<bool, CommitError> {
    let Some(bytes) = store.get(&log_file(dir, version))? else {
        return Ok(false);
    };
    actions::adds(&bytes, path)
        .map_err(|e| CommitError::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

/// The actions a commit needs besides its file and txns: `protocol` and `metaData` when it
/// creates the table, a new `metaData` when the rows bring columns the table lacks (an
/// additive schema change, see [`grown`]: older files read those columns as null). Rows
/// that lack one of the table's columns are refused: a newer writer made the table.
fn table_actions(l: &TableLog, schema: &str) -> Result<Vec<Action>, CommitError> {
    let metadata = |id: String, created: Option<i64>| Metadata {
        id,
        name: Some(l.dir.to_string()),
        format: Format {
            provider: "parquet".into(),
            options: BTreeMap::new(),
        },
        schema_string: schema.to_string(),
        partition_columns: Vec::new(),
        configuration: BTreeMap::new(),
        created_time: created,
    };
    let Some(current) = &l.metadata else {
        let id = format!("{:032x}", rand::random::<u128>());
        return Ok(vec![
            Action::Protocol(Protocol::plain()),
            Action::MetaData(metadata(uuid_text(&id), Some(now_ms()))),
        ]);
    };
    match grown(&current.schema_string, schema) {
        Ok(None) => Ok(Vec::new()),
        Ok(Some(wider)) => {
            let mut m = metadata(current.id.clone(), current.created_time);
            m.schema_string = wider;
            Ok(vec![Action::MetaData(m)])
        }
        Err(missing) => Err(CommitError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{}: the table has columns these rows lack: {missing:?}",
                l.dir
            ),
        ))),
    }
}

/// 32 hex digits as a UUID's text (8-4-4-4-12), the form readers show a table id in.
fn uuid_text(hex: &str) -> String {
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    fn one_row(_from: i64) -> Option<(RecordBatch, Vec<(String, String)>)> {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
        let column = Arc::new(Int64Array::from(vec![7]));
        Some((
            RecordBatch::try_new(schema, vec![column]).unwrap(),
            Vec::new(),
        ))
    }

    fn adds(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir.join("evaluations/_delta_log"))
            .unwrap()
            .map(|f| std::fs::read_to_string(f.unwrap().path()).unwrap())
            .map(|text| text.lines().filter(|l| l.starts_with("{\"add\"")).count())
            .sum()
    }

    /// A replay joins late labels into the same late segment again: its own `txn` holds
    /// it, so the table gets its rows once; the partition's progress does not go back.
    #[test]
    fn a_late_labels_segment_is_committed_once_and_never_moves_the_partition_back() {
        let dir = std::env::temp_dir().join(format!("delta-late-{}", rand::random::<u64>()));
        let store = Store::Local(dir.clone());
        let log = Mutex::new(TableLog::new("evaluations"));
        let app = AppIds::new("g", "labels", 0);
        let mut seg = Segment::new("labels", 0, 0, 1_732_550_400_000);
        seg.last_offset = 9;
        let late = Segment::late_labels("labels", 0, (3, 5), 1_732_550_400_000);
        let append = |seg: &Segment| append(&store, &log, &app, (seg, false), &one_row).unwrap();
        assert!(matches!(append(&seg), Appended::Committed(_)));
        assert!(matches!(append(&late), Appended::Committed(_)));
        // The crash replay: both segments again.
        assert!(matches!(append(&late), Appended::Held));
        assert!(matches!(append(&seg), Appended::Held));
        assert_eq!(adds(&dir), 2);
        let mut fresh = TableLog::new("evaluations");
        fresh.catch_up(&store).unwrap();
        assert_eq!(fresh.txn(&app.next), Some(10));
        assert_eq!(fresh.txn(&format!("{}/late/3", app.next)), Some(6));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
