//! One table's log as this process last read it: the newest version, the latest `txn`
//! version of every app id, the table's metadata (its id and schema) and each partition's
//! newest data files. Loaded once per
//! table by listing `_delta_log/` (never the data files): the newest checkpoint, if a
//! reader left one, then the JSON commits after it. Later catch-ups read the commits after
//! the newest known version by name until one is missing (no listing).

use std::collections::HashMap;

use tracing::warn;

use super::actions::{self, Action, Metadata};
use super::checkpoint::{newest_checkpoint, read_checkpoint};
use super::commit::log_file;
use super::recent::RecentFiles;
use crate::stream::output::store::Store;

/// Commits after the newest checkpoint past which loading a log warns.
const LONG_LOG: usize = 1_000;

#[derive(Debug)]
pub struct TableLog {
    /// The table's folder, relative to the store (`predictions`, ...).
    pub dir: &'static str,
    loaded: bool,
    /// The newest commit read or made; None while the table does not exist.
    pub version: Option<i64>,
    txns: HashMap<String, i64>,
    pub metadata: Option<Metadata>,
    pub recent: RecentFiles,
}

fn bad(what: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what)
}

impl TableLog {
    pub fn new(dir: &'static str) -> Self {
        Self {
            dir,
            loaded: false,
            version: None,
            txns: HashMap::new(),
            metadata: None,
            recent: RecentFiles::default(),
        }
    }

    /// The latest `txn` version of `app_id`, as of the newest commit read.
    pub fn txn(&self, app_id: &str) -> Option<i64> {
        self.txns.get(app_id).copied()
    }

    /// Reads every commit made since the newest one known (on first use, the whole log).
    pub fn catch_up(&mut self, store: &Store) -> std::io::Result<()> {
        if !self.loaded {
            self.load(store)?;
            self.loaded = true;
        }
        loop {
            let next = self.version.map_or(0, |v| v + 1);
            match store.get(&log_file(self.dir, next))? {
                Some(bytes) => self.apply_bytes(next, &bytes)?,
                None => return Ok(()),
            }
        }
    }

    /// The state of a commit of `version` holding `actions` (read, or just made).
    pub fn apply(&mut self, version: i64, actions: &[Action]) {
        for a in actions {
            match a {
                Action::Txn(t) => {
                    self.txns.insert(t.app_id.clone(), t.version);
                }
                Action::MetaData(m) => self.metadata = Some(m.clone()),
                Action::Add(a) => self.recent.added(&a.path),
                Action::Remove(r) => self.recent.removed(&r.path),
                _ => {}
            }
        }
        self.version = Some(version);
    }

    fn apply_bytes(&mut self, version: i64, bytes: &[u8]) -> std::io::Result<()> {
        let actions = actions::decode(bytes)
            .map_err(|e| bad(format!("{}: {e}", log_file(self.dir, version))))?;
        self.apply(version, &actions);
        Ok(())
    }

    /// The log from its newest checkpoint (if any) through the newest commit listed.
    fn load(&mut self, store: &Store) -> std::io::Result<()> {
        let files = store.list(&format!("{}/_delta_log", self.dir))?;
        let mut from = 0;
        if let Some((version, parts)) = newest_checkpoint(&files) {
            for part in parts {
                let bytes = store
                    .get(&part)?
                    .ok_or_else(|| bad(format!("{part} vanished")))?;
                let actions = read_checkpoint(bytes).map_err(|e| bad(format!("{part}: {e}")))?;
                self.apply(version, &actions);
            }
            from = version + 1;
        }
        let mut versions: Vec<i64> = files
            .iter()
            .filter_map(|f| f.rsplit('/').next()?.strip_suffix(".json")?.parse().ok())
            .filter(|v| *v >= from)
            .collect();
        versions.sort_unstable();
        if versions.len() > LONG_LOG {
            // Each commit is one read (a GET on an object store): a log never checkpointed
            // makes every process's first assignment slower by the day.
            warn!(
                table = self.dir,
                commits = versions.len(),
                "reading a long Delta log without a checkpoint: checkpoint the table \
                 (delta-rs create_checkpoint, README \"Delta Lake tables\")"
            );
        }
        for v in versions {
            if let Some(bytes) = store.get(&log_file(self.dir, v))? {
                self.apply_bytes(v, &bytes)?;
            }
        }
        Ok(())
    }
}
