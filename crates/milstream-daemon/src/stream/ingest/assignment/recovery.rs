//! What the output store says about a newly assigned partition: where its replay starts
//! (commit metadata and/or the newest durable file, see [`choose_replay_point`]), the sweep
//! of what the replay rewrites, and the quality detectors its durable rows restore. Read
//! through the partition's folder log, retried with backoff while the store cannot be read.

use std::time::Duration;

use tracing::{info, warn};

use super::Assignments;
use crate::config::Role;
use crate::stream::ingest::commit::{choose_replay_point, decode_metadata};
use crate::stream::ingest::record::RecordKind;
use crate::stream::output::delta::DeltaTables;
use crate::stream::output::sink;
use crate::stream::output::sink::folders::{FolderLog, PartitionFiles};

/// Attempts at listing the output store for a newly assigned partition before it is left
/// unstarted, and the pause after the first failure (doubling after each): a blip passes,
/// a store that stays down costs seconds (each attempt has the store client's own retries).
pub(super) const LIST_ATTEMPTS: u32 = 4;
const LIST_BACKOFF: Duration = Duration::from_millis(250);

/// What [`Assignments::prepare`] read for a partition from the output store.
pub(super) struct Prepared {
    /// The replay point (None without a commit).
    pub replay_from: Option<i64>,
    /// A label partition's detectors, from its durable evaluations.
    pub restored: Option<sink::Restored>,
    /// A scored partition's label-free detectors, from its newest durable predictions file.
    pub served: Option<String>,
}

impl Assignments {
    /// A partition's replay point (with a commit) and the sweep of what the replay rewrites
    /// (`may_sweep`), then, for a label partition, its detectors restored from the durable
    /// evaluations (see `sink::restore_quality`); retried with backoff while the output store
    /// cannot be listed or read; the error of the last attempt when it never could.
    pub(super) fn prepare(
        &self,
        (topic, partition, kind): (&str, i32, RecordKind),
        commit: Option<i64>,
        meta: &str,
        may_sweep: bool,
    ) -> std::io::Result<Prepared> {
        // Found once, kept across attempts (it is logged and counted when found).
        let mut found: Option<Option<i64>> = None;
        let mut counted: Option<Option<i64>> = None;
        let mut attempt = 1;
        let tables = DeltaTables::for_output(&self.cfg, &self.output);
        loop {
            // The folders the partition's files are in: all that is listed below.
            let log = FolderLog::for_assignment(
                &self.output,
                self.training_store.as_deref(),
                sink::owned_trees(self.cfg.pipeline.role, kind),
                (self.cfg.pipeline.role, topic, partition),
            );
            let r = log.and_then(|log| match found {
                Some(r) => Ok((r, log)),
                None => commit
                    .map(|c| self.replay_point((topic, partition), c, meta, &log))
                    .transpose()
                    .map(|r| (r, log)),
            });
            let r = r.and_then(|(r, log)| {
                found = Some(r);
                // The files whose footers hold the detectors' checkpoints: the folders' or
                // the tables' (their logs name them).
                let files: &dyn PartitionFiles = match &tables {
                    Some(t) => t.as_ref(),
                    None => &log,
                };
                let quality = self.quality.as_ref().filter(|_| kind == RecordKind::Label);
                // The highest label already counted: read before the sweep removes the
                // durable rows beyond the commit, which the replay writes (and would count)
                // again. Found once, kept across attempts (a failed sweep may remove some).
                if quality.is_some() && counted.is_none() {
                    counted = Some(sink::newest_quality_through(
                        &self.output,
                        files,
                        (topic, partition),
                    )?);
                }
                if may_sweep {
                    self.sweep((topic, partition), commit.unwrap_or(0), &log)?;
                }
                // A scored partition's label-free detectors, as its newest durable predictions
                // file left them (after the sweep: the replay emits from the commit on).
                let scored = kind != RecordKind::Label && self.cfg.pipeline.role != Role::Trainer;
                let served = match (commit, &self.quality) {
                    (Some(c), Some(_)) if scored && may_sweep => {
                        sink::served_checkpoint(&self.output, files, (topic, partition), c)?
                    }
                    _ => None,
                };
                let restored = match quality {
                    Some(q) => {
                        let mut restored = sink::restore_quality(
                            &self.output,
                            q.config(),
                            files,
                            (topic, partition),
                            r.filter(|_| may_sweep),
                        )?;
                        restored.durable_through = restored.durable_through.max(counted.flatten());
                        Some(restored)
                    }
                    None => None,
                };
                Ok(Prepared {
                    replay_from: r,
                    restored,
                    served,
                })
            });
            match r {
                Err(e) if attempt < LIST_ATTEMPTS => {
                    warn!(topic, partition, attempt, %e, "listing the output store failed; retrying");
                    std::thread::sleep(LIST_BACKOFF * 2u32.pow(attempt - 1));
                    attempt += 1;
                }
                r => return r,
            }
        }
    }

    /// The replay point of a partition committed at `committed` with commit metadata `meta`:
    /// from the metadata, the newest durable output file, or both (the one that replays more),
    /// logged and counted by source. An error when the output cannot be listed.
    fn replay_point(
        &self,
        (topic, partition): (&str, i32),
        committed: i64,
        meta: &str,
        log: &FolderLog,
    ) -> std::io::Result<i64> {
        let from_meta = decode_metadata(meta);
        // Only this role's own files describe its group's commits (the Parquet trees; the
        // Arrow copies carry the same metadata).
        let dirs: Vec<&str> = sink::owned_trees(self.cfg.pipeline.role, self.kind(topic))
            .iter()
            .copied()
            .filter(|d| *d != sink::ARROW_DIR)
            .collect();
        let mut from_file = match DeltaTables::for_output(&self.cfg, &self.output) {
            // The tables' own txn versions: no file is listed or read.
            Some(tables) => tables
                .replay_point(
                    &self.output,
                    self.cfg.pipeline.role,
                    (topic, partition, self.kind(topic)),
                )?
                .map(|(r, next)| (r, next, "delta table txn".to_string())),
            None => sink::replay_point_from_files(
                &self.output,
                &dirs,
                log,
                (topic, partition),
                committed,
            )?,
        };
        if let Some(t) = &self.training_store {
            // The training store's files carry the replay point too; the newest file wins.
            let from_store =
                sink::replay_point_from_files(t, &[""], log, (topic, partition), committed)?
                    .map(|(r, next, rel)| (r, next, format!("{}/{rel}", t.display())));
            if from_store.as_ref().map(|f| f.1) > from_file.as_ref().map(|f| f.1) {
                from_file = from_store;
            }
        }
        let (replay_from, source) =
            choose_replay_point(committed, from_meta, from_file.as_ref().map(|f| (f.0, f.1)));
        let file = from_file.as_ref().map(|f| f.2.clone());
        info!(
            topic,
            partition,
            committed,
            replay_from,
            source = source.as_str(),
            commit_metadata = ?from_meta,
            file_replay_from = ?from_file.as_ref().map(|f| f.0),
            file,
            "replay point"
        );
        self.metrics
            .replay_point_source
            .with_label_values(&[source.as_str()])
            .inc();
        Ok(replay_from)
    }

    /// Deletes the partition's outputs (and training-store files) from `from` on: the replay
    /// rewrites them. An error when the store cannot be listed or a file not deleted.
    fn sweep(
        &self,
        (topic, partition): (&str, i32),
        from: i64,
        log: &FolderLog,
    ) -> std::io::Result<()> {
        // Delta tables are append-only: what a replay rewrites is filtered at the commit
        // (by the partition's txn version), so nothing is swept from them.
        let trees = match DeltaTables::for_output(&self.cfg, &self.output) {
            Some(_) => &[],
            None => sink::owned_trees(self.cfg.pipeline.role, self.kind(topic)),
        };
        let mut n = sink::sweep_partition(&self.output, trees, log, (topic, partition), from)?;
        if let Some(t) = &self.training_store {
            n += sink::sweep_tree(t, "", log, (topic, partition), from)?;
        }
        if n > 0 {
            self.metrics.files_swept.inc_by(n as u64);
            info!(topic, partition, swept = n, "swept uncommitted output");
        }
        Ok(())
    }
}
