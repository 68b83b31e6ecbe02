//! Writing a commit: `_delta_log/<version>.json` created only if absent, the mutual
//! exclusion the Delta protocol requires of the store. On a local folder the commit is
//! written to a hidden temp file, fsynced and hard-linked to its name (`link` fails when
//! the name exists, atomically, where a rename would replace it); on an object store it is
//! a conditional PUT (`If-None-Match: *`; on S3 `aws_conditional_put = "etag"`).

use std::io::Write;
use std::path::Path;

use crate::stream::output::store::{create_dir_durably, Store, Swap};

/// Why a commit was not made.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// Another writer made this version first: read what it committed and try again (or
    /// find the rows already there).
    #[error("version {0} was committed by another writer")]
    Conflict(i64),
    /// The store cannot create an object only if absent (S3 with conditional puts off):
    /// two writers could both commit a version, so none is made.
    #[error("the store has no put-if-absent (on S3 set aws_conditional_put = \"etag\")")]
    Unsupported,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The log file of `version` in the table at `table` (relative to the store).
pub fn log_file(table: &str, version: i64) -> String {
    format!("{table}/_delta_log/{version:020}.json")
}

/// Creates the commit file of `version` holding `bytes`, or reports who was first.
pub fn put_commit(
    store: &Store,
    table: &str,
    version: i64,
    bytes: Vec<u8>,
) -> Result<(), CommitError> {
    let rel = log_file(table, version);
    if let Some(path) = store.local_path(&rel) {
        return link_new(&path, &bytes).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => CommitError::Conflict(version),
            _ => CommitError::Io(e),
        });
    }
    match store.put_if_unchanged(&rel, bytes, None)? {
        Swap::Done => Ok(()),
        Swap::Conflict => Err(CommitError::Conflict(version)),
        Swap::Unsupported => Err(CommitError::Unsupported),
    }
}

/// `bytes` as `path`, whole, only if `path` does not exist (AlreadyExists otherwise).
fn link_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().expect("a log file has a folder");
    create_dir_durably(dir)?;
    let name = path
        .file_name()
        .expect("a log file has a name")
        .to_string_lossy();
    let tmp = dir.join(format!(".{name}.{:016x}.tmp", rand::random::<u64>()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::hard_link(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    let _ = std::fs::remove_file(&tmp);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_is_created_once() {
        let dir = std::env::temp_dir().join(format!("delta-commit-{}", rand::random::<u64>()));
        let store = Store::Local(dir.clone());
        put_commit(&store, "t", 0, b"a\n".to_vec()).unwrap();
        let again = put_commit(&store, "t", 0, b"b\n".to_vec());
        assert!(matches!(again, Err(CommitError::Conflict(0))), "{again:?}");
        let kept = std::fs::read(dir.join("t/_delta_log/00000000000000000000.json")).unwrap();
        assert_eq!(kept, b"a\n");
        let left: Vec<_> = std::fs::read_dir(dir.join("t/_delta_log"))
            .unwrap()
            .collect();
        assert_eq!(left.len(), 1, "no temp file left");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
