//! The folder log of a partition: which `date=...` folders its files went to, in the order
//! it wrote them, so that an assignment lists a few folders instead of every file the output
//! ever held (the cost of a rebalance stays the same after months of output).
//!
//! One small JSON file per role and source partition,
//! `_folders/<role>/<topic>-<partition>.json` in the output store (a trainer's examples of a
//! points partition are not the scorers' predictions of it), written ahead: the writer records a folder before the first file of a
//! segment goes into it, so no file of the partition lies outside the log. It changes only
//! when the partition's files move to another folder (a new day, or hour), not per file.
//!
//! An entry `(folder, from)` says: the files written while it was the newest entry went into
//! `folder`, and their first offsets are at most the next entry's `from` (`from` only grows:
//! a segment written after a lower one, a replay or late labels, takes the newest `from`).
//! So the files whose first offset is at least `c` lie in the entries whose successor's
//! `from` is at least `c`, and the newest file below `c` in the entries just before.

use serde::{Deserialize, Serialize};

use std::collections::HashMap;

use super::{join, parse_output_name, OutputName, Segment};
use crate::config::Role;
use crate::stream::ingest::commit::Generation;
use crate::stream::output::store::Store;

/// Whose log, of which partition: the role writing it, the topic and the partition.
pub type LogKey<'a> = (Role, &'a str, i32);

/// The folder under the output root that holds the logs (beside the output trees, so no
/// dataset reader of a tree sees them).
pub const FOLDERS_DIR: &str = "_folders";

/// Entries kept below the one covering the committed offset (and the committed replay
/// point): what the replay point's and the quality checkpoint's searches may step back
/// through when a folder holds no durable file of the partition (a write that failed).
const KEPT_BELOW: usize = 16;

/// One folder of the log and the offset from which the partition wrote into it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FolderEntry {
    pub folder: String,
    pub from: i64,
}

/// A partition's folder log (see the module's comment).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FolderLog {
    pub entries: Vec<FolderEntry>,
}

/// Where `role`'s log of `topic`/`partition` lives in the output store.
pub fn log_path(role: Role, topic: &str, partition: i32) -> String {
    let role = match role {
        Role::All => "all",
        Role::Scorer => "scorer",
        Role::Trainer => "trainer",
    };
    format!("{FOLDERS_DIR}/{role}/{topic}-{partition}.json")
}

impl FolderLog {
    /// The partition's log; None when it has none yet (never written, or written before
    /// there were logs). A log that does not parse is InvalidData.
    pub fn load(store: &Store, (role, topic, partition): LogKey) -> std::io::Result<Option<Self>> {
        let Some(bytes) = store.get(&log_path(role, topic, partition))? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }

    pub fn save(&self, store: &Store, (role, topic, partition): LogKey) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(self).map_err(std::io::Error::other)?;
        store
            .put(&log_path(role, topic, partition), bytes)
            .map(|_| ())
    }

    /// The log of a partition that has none, from a listing of every tree it writes (once:
    /// the cost the log saves every later assignment). Each folder enters at the lowest
    /// first offset of the partition's files in it, in that order.
    pub fn rebuild(
        stores: &[(&Store, &[&str])],
        topic: &str,
        partition: i32,
    ) -> std::io::Result<Self> {
        let mut lowest: std::collections::BTreeMap<String, i64> = Default::default();
        for (store, trees) in stores {
            for tree in *trees {
                for rel in store.list(tree)? {
                    let Some((folder, name)) = rel
                        .strip_prefix(tree)
                        .map(|r| r.trim_start_matches('/'))
                        .and_then(|r| r.rsplit_once('/'))
                    else {
                        continue;
                    };
                    let visible = name.trim_start_matches('.').trim_end_matches(".tmp");
                    let Some(parsed) = parse_output_name(visible) else {
                        continue;
                    };
                    if parsed.topic == topic && parsed.partition == partition {
                        let low = lowest.entry(folder.to_string()).or_insert(i64::MAX);
                        *low = (*low).min(parsed.first_offset);
                    }
                }
            }
        }
        let mut entries: Vec<FolderEntry> = lowest
            .into_iter()
            .map(|(folder, from)| FolderEntry { folder, from })
            .collect();
        entries.sort_by(|a, b| (a.from, &a.folder).cmp(&(b.from, &b.folder)));
        Ok(Self { entries })
    }

    /// The log an assignment reads: the saved one, or, when there is none or it does not
    /// parse, one rebuilt from a listing of `trees` in `output` (and the root of the
    /// `training` store) and saved. A role that writes none of the partition's files reads
    /// and writes nothing.
    pub fn for_assignment(
        output: &Store,
        training: Option<&Store>,
        trees: &[&str],
        key: LogKey,
    ) -> std::io::Result<Self> {
        if trees.is_empty() && training.is_none() {
            return Ok(Self::default());
        }
        match Self::load(output, key) {
            Ok(Some(log)) => return Ok(log),
            Ok(None) => {}
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                tracing::warn!(log = log_path(key.0, key.1, key.2), %e, "unreadable folder log; rebuilding it");
            }
            Err(e) => return Err(e),
        }
        let mut stores = vec![(output, trees)];
        if let Some(t) = training {
            stores.push((t, &[""]));
        }
        let log = Self::rebuild(&stores, key.1, key.2)?;
        // The log is an index of the listing just made: a full or refusing store must not
        // keep the partition from starting (the writer saves it before its first file, and
        // an unsaved log is rebuilt by the next assignment).
        if let Err(e) = log.save(output, key) {
            tracing::warn!(topic = key.1, partition = key.2, %e, "folder log not saved; using the listing");
        }
        tracing::info!(
            topic = key.1,
            partition = key.2,
            folders = log.entries.len(),
            "folder log rebuilt from a listing of the output"
        );
        Ok(log)
    }

    /// Records that a segment starting at `first` goes into `folder`; true when the log
    /// changed (and must be saved before the segment's files are written).
    pub fn record(&mut self, folder: &str, first: i64) -> bool {
        match self.entries.last() {
            Some(last) if last.folder == folder => false,
            last => {
                let from = last.map_or(first, |l| l.from.max(first));
                self.entries.push(FolderEntry {
                    folder: folder.to_string(),
                    from,
                });
                true
            }
        }
    }

    /// Forgets the entries no assignment will look at again: those wholly below the entry
    /// covering `low - 1` (the committed offset or replay point, whichever is lower), but
    /// [`KEPT_BELOW`] of them.
    pub fn prune(&mut self, low: i64) {
        let covering = self.entries.partition_point(|e| e.from < low);
        let drop = covering.saturating_sub(1 + KEPT_BELOW);
        self.entries.drain(..drop);
    }

    /// The folders that may hold files whose first offset is at least `from` (what a replay
    /// from `from` rewrites): each entry whose successor starts at or after `from`, and the
    /// newest.
    pub fn folders_from(&self, from: i64) -> Vec<String> {
        let n = self.entries.len();
        let mut out: Vec<String> = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            let next_from = self.entries.get(i + 1).map(|n| n.from);
            if i + 1 == n || next_from >= Some(from) {
                push_new(&mut out, &e.folder);
            }
        }
        out
    }

    /// Every folder of the log, newest entry first (each once, at its newest place): the
    /// order in which the newest durable file, and the checkpoints before it, are looked
    /// for. Write order, not date order: a folder of a clock that ran ahead sorts where it
    /// was written.
    pub fn folders_newest_first(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for e in self.entries.iter().rev() {
            push_new(&mut out, &e.folder);
        }
        out
    }
}

fn push_new(out: &mut Vec<String>, folder: &str) {
    if !out.iter().any(|f| f == folder) {
        out.push(folder.to_string());
    }
}

/// A writer thread's copy of the logs of the partitions it writes (a partition is always
/// written by the same thread), each as of the ownership it was loaded under.
#[derive(Default)]
pub struct WriterLogs {
    logs: HashMap<(String, i32), (Generation, FolderLog)>,
}

impl WriterLogs {
    /// Records that `seg`'s files go into `folder`, saving the log first when that is a
    /// move (write-ahead: no file of the partition lies outside its log). `low` is the
    /// committed offset's floor (see `DurableOffsets::committed_low`): entries below it are
    /// pruned as the log is saved. The log is loaded once per ownership (the assignment made
    /// or rebuilt it).
    pub fn record(
        &mut self,
        store: &Store,
        role: Role,
        seg: &Segment,
        folder: &str,
        low: Option<i64>,
    ) -> std::io::Result<()> {
        let key = (seg.topic.clone(), seg.partition);
        let cached = self.logs.get(&key).filter(|(g, _)| *g == seg.generation);
        let mut log = match cached {
            Some((_, log)) => log.clone(),
            None => FolderLog::load(store, (role, &seg.topic, seg.partition))?.unwrap_or_default(),
        };
        if log.record(folder, seg.first_offset) {
            if let Some(low) = low {
                log.prune(low);
            }
            log.save(store, (role, &seg.topic, seg.partition))?;
        }
        self.logs.insert(key, (seg.generation, log));
        Ok(())
    }
}

/// Where a partition's durable files are found: the date folders its [`FolderLog`] names
/// (Parquet files), or a Delta table's log (`delta::DeltaTables`: the files its commits
/// added). What the replay point, the detectors' restore and their checkpoints read.
pub trait PartitionFiles {
    /// The partition's files in `tree` with their parsed names, at least down to the first
    /// whose range ends below `below` (when there is one), in no particular order.
    fn files_down_to(
        &self,
        store: &Store,
        tree: &str,
        partition: (&str, i32),
        below: i64,
    ) -> std::io::Result<Vec<(String, OutputName)>>;
}

impl PartitionFiles for FolderLog {
    fn files_down_to(
        &self,
        store: &Store,
        tree: &str,
        partition: (&str, i32),
        below: i64,
    ) -> std::io::Result<Vec<(String, OutputName)>> {
        files_down_to(store, tree, self, partition, below)
    }
}

/// The visible Parquet files of `topic`/`partition` under `tree`, folder by folder in the
/// log's newest-first order, down to the first folder holding one whose range ends below
/// `below`: what a search for the newest file below an offset needs to read.
fn files_down_to(
    store: &Store,
    tree: &str,
    log: &FolderLog,
    (topic, partition): (&str, i32),
    below: i64,
) -> std::io::Result<Vec<(String, OutputName)>> {
    let mut out = Vec::new();
    for folder in log.folders_newest_first() {
        let mut reached = false;
        for rel in store.list(&join(tree, &folder))? {
            let name = rel.rsplit('/').next().unwrap_or(&rel);
            if name.starts_with('.') || !name.ends_with(".parquet") {
                continue;
            }
            let Some(parsed) = parse_output_name(name) else {
                continue;
            };
            if parsed.topic == topic && parsed.partition == partition {
                reached |= parsed.last_offset < below;
                out.push((rel, parsed));
            }
        }
        if reached {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(entries: &[(&str, i64)]) -> FolderLog {
        FolderLog {
            entries: entries
                .iter()
                .map(|(f, o)| FolderEntry {
                    folder: f.to_string(),
                    from: *o,
                })
                .collect(),
        }
    }

    #[test]
    fn a_folder_is_recorded_once_per_move_and_from_only_grows() {
        let mut l = FolderLog::default();
        assert!(l.record("date=2026-12-01", 0));
        assert!(!l.record("date=2026-12-01", 40));
        assert!(l.record("date=2026-12-02", 100));
        // Late labels of offsets 50..60 filed under an older day: entered at 100, not 50.
        assert!(l.record("date=2026-11-30", 50));
        assert!(l.record("date=2026-12-02", 120));
        assert_eq!(
            l,
            log(&[
                ("date=2026-12-01", 0),
                ("date=2026-12-02", 100),
                ("date=2026-11-30", 100),
                ("date=2026-12-02", 120)
            ])
        );
    }

    #[test]
    fn a_replay_lists_the_folders_at_and_after_its_start_and_the_search_steps_back() {
        let l = log(&[("d1", 0), ("d2", 100), ("d3", 200), ("d4", 300)]);
        assert_eq!(l.folders_from(250), ["d3", "d4"]);
        assert_eq!(l.folders_from(300), ["d3", "d4"]);
        assert_eq!(l.folders_from(301), ["d4"]);
        assert_eq!(l.folders_from(0), ["d1", "d2", "d3", "d4"]);
        let back = log(&[("d1", 0), ("d2", 100), ("d1", 150), ("d3", 200)]);
        assert_eq!(back.folders_newest_first(), ["d3", "d1", "d2"]);
    }

    #[test]
    fn pruning_keeps_what_a_search_from_the_commit_may_step_back_through() {
        let entries: Vec<(String, i64)> = (0..100).map(|i| (format!("d{i}"), i * 10)).collect();
        let mut l = log(&entries
            .iter()
            .map(|(f, o)| (f.as_str(), *o))
            .collect::<Vec<_>>());
        l.prune(505);
        // d50 covers 504; sixteen entries below it stay.
        assert_eq!(l.entries.first().unwrap().folder, "d34");
        assert_eq!(l.entries.len(), 66);
        l.prune(0);
        assert_eq!(l.entries.len(), 66);
    }

    #[test]
    fn a_log_rebuilt_from_a_listing_orders_folders_by_their_lowest_offset() {
        let root = std::env::temp_dir().join(format!("milstream-folders-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let store = Store::Local(root.clone());
        for rel in [
            "predictions/date=2026-12-02/t-0-100-199.parquet",
            "predictions/date=2026-12-01/t-0-0-99.parquet",
            "dead_letters/date=2026-12-03/.t-0-200-210.parquet.tmp",
            // Another partition's.
            "predictions/date=2026-11-01/t-1-0-99.parquet",
        ] {
            store.put(rel, vec![0]).unwrap();
        }
        let l = FolderLog::rebuild(&[(&store, &["predictions", "dead_letters"])], "t", 0).unwrap();
        assert_eq!(
            l,
            log(&[
                ("date=2026-12-01", 0),
                ("date=2026-12-02", 100),
                ("date=2026-12-03", 200)
            ])
        );
        l.save(&store, (Role::Scorer, "t", 0)).unwrap();
        assert_eq!(
            FolderLog::load(&store, (Role::Scorer, "t", 0)).unwrap(),
            Some(l)
        );
        assert_eq!(
            FolderLog::load(&store, (Role::Trainer, "t", 0)).unwrap(),
            None
        );
        assert_eq!(
            FolderLog::load(&store, (Role::Scorer, "t", 1)).unwrap(),
            None
        );
    }

    /// An assignment with 100,000 files of the partition already in the store (a thousand
    /// days of a hundred files each) lists the newest day's files, not the history: before
    /// the log, the sweep and the searches listed every file of every tree.
    #[test]
    fn an_assignment_lists_a_bounded_number_of_files_whatever_the_history() {
        use crate::stream::output::sink::{newest_durable_file, sweep_partition, PREDICTIONS_DIR};
        use crate::stream::output::store::files_listed;
        let root = std::env::temp_dir().join(format!("milstream-history-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let store = Store::Local(root.clone());
        let (days, per_day, span) = (1_000i64, 100i64, 10i64);
        let mut log = FolderLog::default();
        for day in 0..days {
            let folder = format!(
                "date={}",
                chrono::NaiveDate::from_num_days_from_ce_opt(738_000 + day as i32).unwrap()
            );
            let dir = root.join(PREDICTIONS_DIR).join(&folder);
            std::fs::create_dir_all(&dir).unwrap();
            for f in 0..per_day {
                let first = (day * per_day + f) * span;
                if f == 0 {
                    log.record(&folder, first);
                }
                let name = format!("t-00000-{first:020}-{:020}.parquet", first + span - 1);
                std::fs::write(dir.join(name), b"").unwrap();
            }
        }
        let committed = days * per_day * span - 3 * span;
        log.prune(committed);
        assert_eq!(log.entries.len(), 1 + KEPT_BELOW);
        let trees = &[PREDICTIONS_DIR][..];
        let before = files_listed();
        let t = std::time::Instant::now();
        let swept = sweep_partition(&store, trees, &log, ("t", 0), committed).unwrap();
        let newest = newest_durable_file(&store, trees, &log, ("t", 0), committed).unwrap();
        let with_log = (files_listed() - before, t.elapsed());
        assert_eq!(swept, 3);
        assert_eq!(newest.unwrap().1.last_offset, committed - 1);
        // The newest day, listed by the sweep and by the search.
        assert!(with_log.0 <= 2 * per_day as u64, "{with_log:?}");
        // What the assignment listed before the log (and lists once, for a partition whose
        // files were written before there were logs).
        let before = files_listed();
        let t = std::time::Instant::now();
        let rebuilt = FolderLog::rebuild(&[(&store, trees)], "t", 0).unwrap();
        let whole = (files_listed() - before, t.elapsed());
        assert_eq!(rebuilt.entries.len() as i64, days);
        assert!(whole.0 >= (days * per_day) as u64 - 3, "{whole:?}");
        eprintln!("assignment with 100,000 files: the log's folders {with_log:?}; the whole listing {whole:?}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
