//! The Delta log's actions this writer writes and reads (Delta protocol, "Actions"): one
//! JSON object per line of a commit file `_delta_log/<version, 20 digits>.json`.
//! Written: `protocol` and `metaData` (version 0, and `metaData` again when the schema
//! grows), `add`, `txn` and `commitInfo`. Read back: `txn` and `metaData` (the replay point
//! and the schema), and the paths of `add` and `remove` (the partitions' newest files, whose
//! footers hold the detectors' checkpoints; a commit known for one's own).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Reader and writer versions 1 and 2: plain Parquet data files, `txn` actions and column
/// invariants, no table features; every Delta reader reads them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Protocol {
    #[serde(rename = "minReaderVersion")]
    pub min_reader_version: i32,
    #[serde(rename = "minWriterVersion")]
    pub min_writer_version: i32,
}

impl Protocol {
    pub fn plain() -> Self {
        Self {
            min_reader_version: 1,
            min_writer_version: 2,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Format {
    pub provider: String,
    #[serde(default)]
    pub options: BTreeMap<String, String>,
}

/// The table's identity and schema (`schemaString`: the Delta JSON schema).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Metadata {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub format: Format,
    #[serde(rename = "schemaString")]
    pub schema_string: String,
    #[serde(default)]
    #[serde(rename = "partitionColumns")]
    pub partition_columns: Vec<String>,
    #[serde(default)]
    pub configuration: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "createdTime")]
    pub created_time: Option<i64>,
}

/// A data file joining the table. `path` is relative to the table's root and URI-encoded.
/// Read back for its path only (the rest defaults when another writer left it out).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Add {
    pub path: String,
    #[serde(default, rename = "partitionValues")]
    pub partition_values: BTreeMap<String, Option<String>>,
    #[serde(default)]
    pub size: i64,
    #[serde(default, rename = "modificationTime")]
    pub modification_time: i64,
    #[serde(default, rename = "dataChange")]
    pub data_change: bool,
    /// `{"numRecords": n}`: lets readers count rows without opening the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<String>,
}

/// A data file leaving the table (another writer's `optimize` replaced it): read for its
/// path; this writer writes none.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Remove {
    pub path: String,
}

/// An application's progress, committed atomically with the files it covers: the latest
/// `version` per `appId` is what a reader (and a restarted writer) sees.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Txn {
    #[serde(rename = "appId")]
    pub app_id: String,
    pub version: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "lastUpdated")]
    pub last_updated: Option<i64>,
}

/// Provenance for `DeltaTable.history()`; free-form by the protocol.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CommitInfo {
    pub timestamp: i64,
    pub operation: String,
    #[serde(default)]
    #[serde(rename = "operationParameters")]
    pub operation_parameters: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "clientVersion")]
    pub client_version: Option<String>,
}

/// One line of a commit file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub enum Action {
    #[serde(rename = "protocol")]
    Protocol(Protocol),
    #[serde(rename = "metaData")]
    MetaData(Metadata),
    #[serde(rename = "add")]
    Add(Add),
    #[serde(rename = "remove")]
    Remove(Remove),
    #[serde(rename = "txn")]
    Txn(Txn),
    #[serde(rename = "commitInfo")]
    CommitInfo(CommitInfo),
}

/// A commit file's bytes: one action per line, newline-terminated.
pub fn encode(actions: &[Action]) -> Vec<u8> {
    let mut out = Vec::new();
    for a in actions {
        serde_json::to_writer(&mut out, a).expect("actions serialize");
        out.push(b'\n');
    }
    out
}

/// What a commit file says that this writer needs: its `txn`, `metaData`, `add` and
/// `remove` actions, in order. Lines of other actions (`cdc`, a newer `commitInfo`) are
/// skipped; a line that is not JSON is an error (the log is corrupt, not merely newer).
pub fn decode(bytes: &[u8]) -> Result<Vec<Action>, serde_json::Error> {
    let mut out = Vec::new();
    for line in bytes.split(|b| *b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(line)?;
        if let Some(t) = v.get("txn") {
            out.push(Action::Txn(serde_json::from_value(t.clone())?));
        } else if let Some(m) = v.get("metaData") {
            out.push(Action::MetaData(serde_json::from_value(m.clone())?));
        } else if let Some(a) = v.get("add") {
            out.push(Action::Add(serde_json::from_value(a.clone())?));
        } else if let Some(r) = v.get("remove") {
            out.push(Action::Remove(serde_json::from_value(r.clone())?));
        }
    }
    Ok(out)
}

/// Whether a commit file holds an `add` of `path` (as written: URI-encoded).
pub fn adds(bytes: &[u8], path: &str) -> Result<bool, serde_json::Error> {
    for line in bytes.split(|b| *b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(line)?;
        if v.pointer("/add/path").and_then(|p| p.as_str()) == Some(path) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `path` URI-encoded as the protocol wants an `add` path: every byte but the unreserved
/// ones and `/` escaped (topic names may hold characters a URI may not).
pub fn uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/' | b'=') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_round_trips_its_txn_and_reads_removes_and_skips_other_actions() {
        let txn = Txn {
            app_id: "milstream/g/points/0".into(),
            version: 42,
            last_updated: Some(1),
        };
        let mut bytes = encode(&[
            Action::Protocol(Protocol::plain()),
            Action::Txn(txn.clone()),
        ]);
        bytes.extend_from_slice(b"{\"remove\":{\"path\":\"x\",\"dataChange\":true}}\n");
        bytes.extend_from_slice(b"{\"cdc\":{\"path\":\"y\"}}\n");
        let removed = Action::Remove(Remove { path: "x".into() });
        assert_eq!(decode(&bytes).unwrap(), vec![Action::Txn(txn), removed]);
        let line = String::from_utf8(encode(&[Action::Protocol(Protocol::plain())])).unwrap();
        assert_eq!(
            line,
            "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n"
        );
    }

    #[test]
    fn add_paths_are_uri_encoded() {
        assert_eq!(
            uri_path("date=2026-01-01/a b%.parquet"),
            "date=2026-01-01/a%20b%25.parquet"
        );
    }
}
