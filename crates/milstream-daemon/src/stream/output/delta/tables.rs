//! The four tables of `output.dir` (`predictions`, `dead_letters`, `evaluations`,
//! `drift_events`), each log shared by the writer threads and the assignments of this
//! process: a segment's rows go to each table that gets some, and an assignment reads the
//! partition's replay point from the tables its role writes.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use super::log::TableLog;
use super::table::{append, AppIds, Appended, Rows};
use crate::config::{Config, Role};
use crate::stream::ingest::record::RecordKind;
use crate::stream::output::arrow::predictions::{dead_letter_batch, prediction_batch};
use crate::stream::output::arrow::quality::{drift_event_batch, evaluation_batch};
use crate::stream::output::sink::folders::PartitionFiles;
use crate::stream::output::sink::parquet::Written;
use crate::stream::output::sink::{
    owned_trees, OutputName, Segment, DEAD_LETTERS_DIR, DRIFT_EVENTS_DIR, EVALUATIONS_DIR,
    META_QUALITY_STATE, META_QUALITY_THROUGH, META_SERVED_STATE, PREDICTIONS_DIR,
};
use crate::stream::output::store::Store;

/// The tables of one output store, for the consumer group `group`.
#[derive(Debug)]
pub struct DeltaTables {
    group: String,
    predictions: Mutex<TableLog>,
    dead_letters: Mutex<TableLog>,
    evaluations: Mutex<TableLog>,
    drift_events: Mutex<TableLog>,
}

/// The rows of `rows` whose source offset (`offset`) is `from` or later, or None.
fn from_offset<T: Clone>(rows: &[T], from: i64, offset: impl Fn(&T) -> i64) -> Option<Vec<T>> {
    let kept: Vec<T> = rows.iter().filter(|r| offset(r) >= from).cloned().collect();
    (!kept.is_empty()).then_some(kept)
}

/// The tables of each output store and group in this process, made on first use: the
/// writer threads and the assignments share one view of each log, so an assignment's
/// catch-up spares the writers' (a view that is behind only costs a lost commit race).
static SHARED: LazyLock<Mutex<HashMap<StoreAndGroup, Arc<DeltaTables>>>> =
    LazyLock::new(Default::default);

/// An output store (as `Store::display` names it) and a consumer group.
type StoreAndGroup = (String, String);

impl DeltaTables {
    /// The tables under `store` for `cfg`'s consumer group when `output.format = "delta"`.
    pub fn for_output(cfg: &Config, store: &Store) -> Option<Arc<Self>> {
        if cfg.output.format != super::FORMAT_DELTA {
            return None;
        }
        let group = cfg.group_id();
        let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        let tables = shared
            .entry((store.display(), group.clone()))
            .or_insert_with(|| Arc::new(Self::new(&group)));
        Some(tables.clone())
    }

    pub fn new(group: &str) -> Self {
        Self {
            group: group.to_string(),
            predictions: Mutex::new(TableLog::new(PREDICTIONS_DIR)),
            dead_letters: Mutex::new(TableLog::new(DEAD_LETTERS_DIR)),
            evaluations: Mutex::new(TableLog::new(EVALUATIONS_DIR)),
            drift_events: Mutex::new(TableLog::new(DRIFT_EVENTS_DIR)),
        }
    }

    /// The app ids of `topic`/`partition` in this group.
    pub fn app_ids(&self, topic: &str, partition: i32) -> AppIds {
        AppIds::new(&self.group, topic, partition)
    }

    fn table(&self, dir: &str) -> Option<&Mutex<TableLog>> {
        match dir {
            PREDICTIONS_DIR => Some(&self.predictions),
            DEAD_LETTERS_DIR => Some(&self.dead_letters),
            EVALUATIONS_DIR => Some(&self.evaluations),
            DRIFT_EVENTS_DIR => Some(&self.drift_events),
            _ => None,
        }
    }

    /// Appends a segment's rows to every table that gets some: one commit per table, each
    /// holding only the rows that table does not hold yet. The tables are written in a
    /// fixed order; a crash between two leaves the later ones behind, and the replay (from
    /// the Kafka commit, which waits for all of them) fills them without touching the
    /// earlier ones.
    pub fn write_segment(
        &self,
        store: &Store,
        seg: &Segment,
        by_hour: bool,
    ) -> std::io::Result<Written> {
        let app = self.app_ids(&seg.topic, seg.partition);
        let mut w = Written::default();
        let at = (seg, by_hour);
        let predictions: Rows = &|from| {
            let rows = from_offset(&seg.predictions, from, |r| r.source_offset)?;
            let mut meta = seg.file_metadata();
            if let Some(state) = &seg.served_checkpoint {
                meta.push((META_SERVED_STATE.into(), state.clone()));
            }
            Some((prediction_batch(&rows), meta))
        };
        if let Appended::Committed(b) = append(store, &self.predictions, &app, at, predictions)? {
            (w.prediction_files, w.prediction_bytes) = (1, b.total);
            w.parquet = w.parquet + b;
        }
        let dead: Rows = &|from| {
            let rows = from_offset(&seg.dead_letters, from, |r| r.offset)?;
            Some((dead_letter_batch(&rows), seg.file_metadata()))
        };
        if let Appended::Committed(b) = append(store, &self.dead_letters, &app, at, dead)? {
            (w.dead_letter_files, w.dead_letter_bytes) = (1, b.total);
            w.parquet = w.parquet + b;
        }
        let q = &seg.quality;
        let evaluations: Rows = &|from| {
            let rows = from_offset(&q.evaluations, from, |r| r.source_offset)?;
            let mut meta = seg.file_metadata();
            if let Some((through, state)) = &q.checkpoint {
                meta.push((META_QUALITY_THROUGH.into(), through.to_string()));
                meta.push((META_QUALITY_STATE.into(), state.clone()));
            }
            Some((evaluation_batch(&rows), meta))
        };
        if let Appended::Committed(b) = append(store, &self.evaluations, &app, at, evaluations)? {
            w.parquet = w.parquet + b;
        }
        let drift: Rows = &|from| {
            let rows = from_offset(&q.drift_events, from, |r| r.source_offset)?;
            Some((drift_event_batch(&rows), seg.file_metadata()))
        };
        if let Appended::Committed(b) = append(store, &self.drift_events, &app, at, drift)? {
            w.parquet = w.parquet + b;
        }
        Ok(w)
    }

    /// The replay point the tables hold for `topic`/`partition` of `kind` written by `role`:
    /// of the tables it writes, the one whose `txn` went furthest, as (its replay point,
    /// the offset after its last row), for `choose_replay_point`. Reads every commit since
    /// this process last looked (an earlier owner's), never a data file. None when no table
    /// has a commit of the partition.
    pub fn replay_point(
        &self,
        store: &Store,
        role: Role,
        (topic, partition, kind): (&str, i32, RecordKind),
    ) -> std::io::Result<Option<(i64, i64)>> {
        let app = self.app_ids(topic, partition);
        let mut best: Option<(i64, i64)> = None;
        for dir in owned_trees(role, kind) {
            let Some(t) = self.table(dir) else { continue };
            let mut l = t.lock().expect("table log");
            l.catch_up(store)?;
            if let (Some(next), Some(from)) = (l.txn(&app.next), l.txn(&app.replay_from)) {
                if best.is_none_or(|b| next > b.1) {
                    best = Some((from, next));
                }
            }
        }
        Ok(best)
    }

    /// The latest `txn` version of `app_id` in the table at `dir` (tests, the start banner).
    pub fn txn_version(
        &self,
        store: &Store,
        dir: &str,
        app_id: &str,
    ) -> std::io::Result<Option<i64>> {
        let Some(t) = self.table(dir) else {
            return Ok(None);
        };
        let mut l = t.lock().expect("table log");
        l.catch_up(store)?;
        Ok(l.txn(app_id))
    }
}

/// A partition's files in a table are the ones its log added and kept (see `recent`): no
/// data file is listed.
impl PartitionFiles for DeltaTables {
    fn files_down_to(
        &self,
        store: &Store,
        tree: &str,
        (topic, partition): (&str, i32),
        _below: i64,
    ) -> std::io::Result<Vec<(String, OutputName)>> {
        let Some(t) = self.table(tree) else {
            return Ok(Vec::new());
        };
        let mut l = t.lock().expect("table log");
        l.catch_up(store)?;
        Ok(l.recent
            .of(topic, partition)
            .into_iter()
            .map(|(path, name)| (format!("{tree}/{path}"), name))
            .collect())
    }
}
