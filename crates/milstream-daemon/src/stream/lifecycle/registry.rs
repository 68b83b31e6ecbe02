//! Model versions on disk: `<root>/<version>/model.json` + `card.json`, and a `current`
//! pointer replaced atomically, so a reader sees the old or the new model, never a mix.
//! Versions are `v<sequence>-<hash>`, the sequence strictly increasing, so "newer" is a
//! string comparison of the zero-padded sequence.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::mil::Model;
use crate::stream::output::store::{Store, Swap, UpdateVersion};
use tracing::warn;

/// Why a registry call failed, as its callers must tell apart: a store that cannot be read
/// or written is retried (or stops a start), a version that does not load is skipped, a
/// publisher that lost the race to `current` serves the winner.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The store could not be read or written (unreachable, refused, a full disk).
    #[error("{what}: {source}")]
    Store {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A version's file is missing or does not load as a model or card.
    #[error("{path} does not load: {reason}")]
    Unloadable { path: String, reason: String },
    /// `current` or a caller names a version the registry does not hold.
    #[error("no model version {version} in {registry}")]
    NoVersion { version: String, registry: String },
    /// Another publisher moved `current` first: this version is stored but not current.
    #[error(
        "{registry}/current moved from {from} to {to} while {version} was being published \
         by another publisher: {version} is stored but not current"
    )]
    Lost {
        registry: String,
        version: String,
        from: String,
        to: String,
    },
    /// A process that takes no turn (an old one) took this sequence number meanwhile.
    #[error("sequence {seq} was taken in {registry} while {version} was being published")]
    SequenceTaken {
        seq: u64,
        registry: String,
        version: String,
    },
}

impl RegistryError {
    /// A version that cannot be served, as opposed to a store that cannot be reached.
    pub fn is_unloadable(&self) -> bool {
        matches!(self, Self::Unloadable { .. } | Self::NoVersion { .. })
    }
}

pub type Result<T> = std::result::Result<T, RegistryError>;

/// An I/O error of the store, with what was being done.
fn store_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RegistryError {
    let what = what.into();
    move |source| RegistryError::Store { what, source }
}

/// What a model is and how it was made: stored beside it as `card.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCard {
    pub version: String,
    pub created_at_ms: i64,
    pub kind: String,
    pub classes: Vec<String>,
    /// Where the model came from: "embedded GunPoint", a file path, "trainer", ...
    pub source: String,
    pub n_train: usize,
    pub train_seconds: f64,
    pub rounds: usize,
    /// LPBoost's margin and share of non-zero alphas; None for the other kinds.
    #[serde(default)]
    pub rho: Option<f64>,
    #[serde(default)]
    pub sparsity: Option<f64>,
    pub cv_accuracy: Option<f64>,
    /// Training examples per class.
    #[serde(default)]
    pub per_class: std::collections::BTreeMap<String, usize>,
    /// Accuracy on the held-out newest examples, and the champion's on the same slice.
    #[serde(default)]
    pub holdout_accuracy: Option<f64>,
    #[serde(default)]
    pub champion_holdout_accuracy: Option<f64>,
    #[serde(default)]
    pub n_holdout: usize,
    /// The version `current` named when this one was published (None: the first).
    #[serde(default)]
    pub previous: Option<String>,
}

impl ModelCard {
    /// A card from the model's own training summary.
    pub fn describe(model: &Model, source: &str) -> Self {
        let summary = model.summary();
        Self {
            version: String::new(),
            created_at_ms: chrono::Utc::now().timestamp_millis(),
            kind: model.kind_name().into(),
            classes: model.classes().to_vec(),
            source: source.into(),
            n_train: summary.n_train,
            train_seconds: summary.train_seconds,
            rounds: summary.rounds,
            rho: summary.rho,
            sparsity: summary.sparsity,
            cv_accuracy: None,
            per_class: Default::default(),
            holdout_accuracy: None,
            champion_holdout_accuracy: None,
            n_holdout: 0,
            previous: None,
        }
    }
}

/// Eight hex digits of a text's hash: names versions outside the registry (a model file's
/// `<stem>-<hash>`, the embedded model's, a trainer's without a registry) and inside it
/// (`v000007-<hash>`). A fixed function of the bytes (FNV-1a, 64 bits, the low 32 shown),
/// so a model keeps its version name across builds and toolchains: std's `DefaultHasher`
/// promises no such thing, nor does the `Hash` impl of `str` (hence the bytes, not `hash`).
pub fn short_hash(text: &str) -> String {
    use std::hash::Hasher;
    let mut h = fnv::FnvHasher::default();
    h.write(text.as_bytes());
    format!("{:08x}", h.finish() as u32)
}

/// A model's name-giving hash: [`short_hash`] of its JSON without the fit's wall-clock
/// seconds, so processes that fit the same data with the same parameters (scorers and a
/// trainer starting together on the embedded model) name the same model alike.
pub fn model_hash(model: &Model) -> String {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.remove("train_seconds");
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let json = model.to_json();
    match serde_json::from_str::<serde_json::Value>(&json) {
        Ok(mut v) => {
            strip(&mut v);
            short_hash(&v.to_string())
        }
        Err(_) => short_hash(&json),
    }
}

/// The registry: a local folder (today's layout, renames for atomicity) or an object-store
/// prefix (write-new-then-point: a version's objects are created before `current` names it,
/// and `current` is one PUT, so a reader sees the old or the new model, never a mix). On a
/// store with conditional puts (S3's If-Match, GCS and Azure preconditions) `current` moves
/// by compare-and-swap from the version the publisher read, so of two publishers racing
/// from the same `current` one wins and the other gets an error; elsewhere the last PUT wins.
pub struct Registry {
    store: Store,
}

const CURRENT: &str = "current";
/// How many versions, newest first, a start-up tries when `current` does not load.
const NEWEST_TRIED: usize = 16;

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = File::create(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// The sequence of a version name `v<seq>-<hash>`.
fn version_seq_of(version: &str) -> Option<u64> {
    version.strip_prefix('v')?.split('-').next()?.parse().ok()
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

impl Registry {
    /// A registry at a local path or object-store URL, with no store options.
    pub fn open(root: &Path) -> Result<Self> {
        Self::open_with(root, &BTreeMap::new())
    }

    /// A registry at `root` (a path or URL), with the `[object_store]` options.
    pub fn open_with(root: &Path, options: &BTreeMap<String, String>) -> Result<Self> {
        let store = Store::open(root, options).map_err(store_err(format!(
            "opening model registry {}",
            root.display()
        )))?;
        store.ensure_root().map_err(store_err(format!(
            "creating model registry {}",
            root.display()
        )))?;
        Ok(Self { store })
    }

    /// For a local registry, an exclusive lock on `<root>/.lock` until the guard drops
    /// (`flock`: released by the kernel if the holder dies, so a crash never leaves it
    /// taken); None for object stores, whose `current` moves by conditional put.
    fn local_turn(&self) -> Result<Option<File>> {
        let Store::Local(root) = &self.store else {
            return Ok(None);
        };
        let path = root.join(".lock");
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(store_err(format!("opening {}", path.display())))?;
        f.lock()
            .map_err(store_err(format!("locking {}", path.display())))?;
        Ok(Some(f))
    }

    fn shown(&self) -> String {
        self.store.display()
    }

    /// Published versions, oldest first.
    pub fn versions(&self) -> Result<Vec<String>> {
        let mut v: Vec<String> = match &self.store {
            Store::Local(root) => std::fs::read_dir(root)
                .map_err(store_err(format!(
                    "reading model registry {}",
                    root.display()
                )))?
                .flatten()
                .filter(|e| e.path().join("model.json").is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
            Store::Object(_) => self
                .store
                .list("")
                .map_err(store_err(format!(
                    "listing model registry {}",
                    self.shown()
                )))?
                .into_iter()
                .filter_map(|rel| rel.strip_suffix("/model.json").map(str::to_string))
                .filter(|v| !v.contains('/'))
                .collect(),
        };
        v.retain(|n| n.starts_with('v'));
        v.sort();
        Ok(v)
    }

    /// Stores `model` as a new version and makes it current. Locally: model and card
    /// written and fsynced in a temp folder, renamed into place. On an object store: both
    /// created with a conditional PUT (`PutMode::Create`, so two trainers never overwrite
    /// one version), then `current` pointed at it. Returns the version.
    pub fn publish(&self, model: &Model, card: &ModelCard) -> Result<String> {
        // A local registry has no conditional put: publishers on one host (or one shared
        // volume) take turns, so no two take the same sequence number.
        let _turn = self.local_turn()?;
        // What `current` was before this version existed: it moves only from there.
        let seen = self.read_current()?;
        // The model `current` already names (processes that start together fit the same
        // first model): it is published; a second copy would only lengthen the chain.
        let hash = model_hash(model);
        if let Some((v, _)) = seen
            .as_ref()
            .filter(|(v, _)| v.ends_with(&format!("-{hash}")))
        {
            return Ok(v.clone());
        }
        let json = model.to_json();
        let seq = self
            .versions()?
            .last()
            .and_then(|v| version_seq_of(v))
            .map_or(1, |s| s + 1);
        // The name holds the model's hash: two processes publishing one model name it alike.
        let version = format!("v{seq:06}-{hash}");
        let mut card = card.clone();
        card.version = version.clone();
        card.previous = seen.as_ref().map(|(v, _)| v.clone());
        let card_json = serde_json::to_string_pretty(&card).expect("a model card serializes");
        match &self.store {
            Store::Local(root) => {
                let tmp = root.join(format!(".tmp-{version}"));
                let _ = std::fs::remove_dir_all(&tmp);
                let writing = || store_err(format!("writing {}", tmp.display()));
                std::fs::create_dir_all(&tmp).map_err(writing())?;
                write_synced(&tmp.join("model.json"), json.as_bytes()).map_err(writing())?;
                write_synced(&tmp.join("card.json"), card_json.as_bytes()).map_err(writing())?;
                sync_dir(&tmp).map_err(writing())?;
                // Under the turn no other version of this sequence can appear; the check says so
                // should the folder be shared with a process that takes no turn (an old one).
                let taken = self.versions()?;
                if taken.iter().any(|v| version_seq_of(v) == Some(seq)) {
                    return Err(RegistryError::SequenceTaken {
                        seq,
                        registry: self.shown(),
                        version,
                    });
                }
                std::fs::rename(&tmp, root.join(&version))
                    .map_err(store_err(format!("publishing {version}")))?;
                sync_dir(root).map_err(store_err(format!("publishing {version}")))?;
            }
            Store::Object(_) => {
                // The card first: a version is listed by its model.json, so a reader never
                // lists a version whose card is missing. A version that exists already was
                // published by another process from the same model (the name holds the
                // model's hash), as when scorers and a trainer start together.
                let mut created = true;
                for (name, bytes) in [
                    ("card.json", card_json.into_bytes()),
                    ("model.json", json.into_bytes()),
                ] {
                    match self.store.put_new(&format!("{version}/{name}"), bytes) {
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => created = false,
                        Err(e) => return Err(store_err(format!("publishing {version}/{name}"))(e)),
                        Ok(()) => {}
                    }
                }
                if let Err(e) = self.point_current(&version, seen) {
                    // Another publisher's version became current first: this one would stay
                    // listed, never served, a version a rollback could pick. Its model goes
                    // first (a version is listed by its model), then its card; a version
                    // this process did not create (the same model, the same name) stays.
                    if created {
                        let _ = self.store.delete(&format!("{version}/model.json"));
                        let _ = self.store.delete(&format!("{version}/card.json"));
                    }
                    return Err(e);
                }
                return Ok(version);
            }
        }
        self.point_current(&version, seen)?;
        Ok(version)
    }

    /// `current`'s version and the object version a compare-and-swap expects (object
    /// stores; None when there is no `current` yet).
    fn read_current(&self) -> Result<Option<(String, UpdateVersion)>> {
        let got = self
            .store
            .get_versioned(CURRENT)
            .map_err(store_err(format!("reading {}/{CURRENT}", self.shown())))?;
        Ok(got.map(|(b, v)| (String::from_utf8_lossy(&b).trim().to_string(), v)))
    }

    /// Points `current` at `version` (locally: temp file, fsync, rename, fsync the folder;
    /// on an object store: one PUT, atomic by itself, conditional where the store can).
    pub fn set_current(&self, version: &str) -> Result<()> {
        let _turn = self.local_turn()?;
        let seen = self.read_current()?;
        self.point_current(version, seen)
    }

    /// [`Registry::set_current`] from `seen`, what `current` was when the caller began.
    fn point_current(&self, version: &str, seen: Option<(String, UpdateVersion)>) -> Result<()> {
        let exists = match &self.store {
            Store::Local(root) => root.join(version).join("model.json").is_file(),
            Store::Object(_) => self.versions()?.iter().any(|v| v == version),
        };
        if !exists {
            return Err(RegistryError::NoVersion {
                version: version.to_string(),
                registry: self.shown(),
            });
        }
        match &self.store {
            Store::Local(root) => {
                let tmp = root.join(".current.tmp");
                let pointing =
                    || store_err(format!("pointing {}/{CURRENT} at {version}", self.shown()));
                write_synced(&tmp, version.as_bytes()).map_err(pointing())?;
                std::fs::rename(&tmp, root.join(CURRENT)).map_err(pointing())?;
                sync_dir(root).map_err(pointing())?;
            }
            Store::Object(_) => {
                let was = seen.as_ref().map(|(v, _)| v.clone());
                let bytes = version.as_bytes().to_vec();
                match self
                    .store
                    .put_if_unchanged(CURRENT, bytes.clone(), seen.map(|(_, tag)| tag))
                    .map_err(store_err(format!(
                        "pointing {}/{CURRENT} at {version}",
                        self.shown()
                    )))? {
                    Swap::Done => {}
                    // Write-new-then-point alone: the last publisher's PUT wins.
                    Swap::Unsupported => {
                        self.store.put(CURRENT, bytes).map_err(store_err(format!(
                            "pointing {}/{CURRENT} at {version}",
                            self.shown()
                        )))?;
                    }
                    Swap::Conflict => {
                        let now = self.current()?;
                        // Processes that start together publish the same first model under
                        // the same name (it holds the model's hash): nothing to choose.
                        if now.as_deref() != Some(version) {
                            return Err(RegistryError::Lost {
                                registry: self.shown(),
                                version: version.to_string(),
                                from: was.unwrap_or_else(|| "nothing".into()),
                                to: now.unwrap_or_else(|| "nothing".into()),
                            });
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The current version, if one was published.
    pub fn current(&self) -> Result<Option<String>> {
        let got = self
            .store
            .get(CURRENT)
            .map_err(store_err(format!("reading {}/{CURRENT}", self.shown())))?;
        Ok(got.map(|b| String::from_utf8_lossy(&b).trim().to_string()))
    }

    fn read_text(&self, rel: &str) -> Result<String> {
        let name = format!("{}/{rel}", self.shown());
        let unloadable = |reason: String| RegistryError::Unloadable {
            path: name.clone(),
            reason,
        };
        let bytes = self
            .store
            .get(rel)
            .map_err(store_err(format!("reading {name}")))?
            .ok_or_else(|| unloadable("not found".into()))?;
        String::from_utf8(bytes).map_err(|e| unloadable(e.to_string()))
    }

    /// Loads one version's model and card; errors name the file.
    pub fn load(&self, version: &str) -> Result<(Model, ModelCard)> {
        let mp = format!("{version}/model.json");
        let text = self.read_text(&mp)?;
        let unloadable = |path: &str, reason: String| RegistryError::Unloadable {
            path: format!("{}/{path}", self.shown()),
            reason,
        };
        let model = Model::from_json(&text).map_err(|e| unloadable(&mp, format!("{e:#}")))?;
        let cp = format!("{version}/card.json");
        let card = serde_json::from_str(&self.read_text(&cp)?)
            .map_err(|e| unloadable(&cp, e.to_string()))?;
        Ok((model, card))
    }

    /// The newest of the newest [`NEWEST_TRIED`] versions that loads (a version that does
    /// not load is skipped with a warning); None when none does. An error when the registry
    /// cannot be listed.
    pub fn newest_loadable(&self) -> Result<Option<(Model, ModelCard)>> {
        for v in self.versions()?.iter().rev().take(NEWEST_TRIED) {
            match self.load(v) {
                Ok(loaded) => return Ok(Some(loaded)),
                Err(e) => warn!(
                    version = v,
                    e = format!("{e:#}"),
                    "version does not load; skipped"
                ),
            }
        }
        Ok(None)
    }

    /// The current model, if any.
    pub fn load_current(&self) -> Result<Option<(Model, ModelCard)>> {
        match self.current()? {
            Some(v) => Ok(Some(self.load(&v)?)),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mil::{Bag, Dataset, FitParams, Sample};

    /// Version names are a fixed function of the model's text: these values (FNV-1a 64, low
    /// 32 bits; the first two are the published test vectors) hold on every build and
    /// toolchain. With std's DefaultHasher they were whatever that release's SipHash gave.
    /// The same data and parameters make the same version name in every process: the
    /// fit's seconds (which differ run to run) are not part of the hash.
    #[test]
    fn one_model_fitted_twice_is_named_alike() {
        let (a, b) = (tiny_model(0.0), tiny_model(0.0));
        let mut slower = a.clone();
        let mut json: serde_json::Value = serde_json::from_str(&slower.to_json()).unwrap();
        fn bump(v: &mut serde_json::Value) {
            match v {
                serde_json::Value::Object(m) => {
                    if let Some(t) = m.get_mut("train_seconds") {
                        *t = serde_json::json!(123.0);
                    }
                    m.values_mut().for_each(bump);
                }
                serde_json::Value::Array(x) => x.iter_mut().for_each(bump),
                _ => {}
            }
        }
        bump(&mut json);
        assert!(
            json.to_string().contains("123"),
            "the artifact records its seconds"
        );
        slower = Model::from_json(&json.to_string()).unwrap();
        assert_ne!(short_hash(&slower.to_json()), short_hash(&a.to_json()));
        assert_eq!(model_hash(&slower), model_hash(&a));
        assert_eq!(model_hash(&a), model_hash(&b));
        assert_ne!(model_hash(&a), model_hash(&tiny_model(1.0)));
    }

    /// Publishing the model `current` already names adds no version: processes that start
    /// together on one registry and fit the same first model serve one version.
    #[test]
    fn publishing_the_current_model_again_adds_no_version() {
        let root =
            std::env::temp_dir().join(format!("milstream-registry-same-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let reg = Registry::open(&root).unwrap();
        let m = tiny_model(0.0);
        let v1 = reg.publish(&m, &ModelCard::describe(&m, "a")).unwrap();
        let again = reg
            .publish(&m.clone(), &ModelCard::describe(&m, "b"))
            .unwrap();
        assert_eq!(again, v1);
        assert_eq!(reg.versions().unwrap(), vec![v1.clone()]);
        let other = tiny_model(1.0);
        let v2 = reg
            .publish(&other, &ModelCard::describe(&other, "c"))
            .unwrap();
        assert!(v2.starts_with("v000002-"), "{v2}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn short_hash_is_a_fixed_function_golden_values() {
        assert_eq!(short_hash(""), "84222325");
        assert_eq!(short_hash("a"), "8601ec8c");
        assert_eq!(short_hash("milstream"), "5e4eaaad");
        assert_eq!(short_hash(r#"{"kind":"lpboost_shapelet"}"#), "29c2a263");
    }

    fn tiny_model(shift: f64) -> Model {
        let mut ds = Dataset::default();
        for i in 0..8 {
            let pos = i % 2 == 0;
            let x = if pos { 2.0 + shift } else { -2.0 } + i as f64 * 0.01;
            ds.ids.push(format!("b{i}"));
            ds.labels
                .push(if pos { "pos".into() } else { "neg".into() });
            ds.samples
                .push(Sample::Bag(Bag::new(1, vec![x, 0.0]).unwrap()));
        }
        Model::fit(
            &ds,
            &FitParams {
                k: Some(4),
                ..FitParams::default()
            },
        )
        .unwrap()
    }

    #[test]
    fn publish_load_and_switch_current() {
        let root = std::env::temp_dir().join(format!("milstream-registry-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let reg = Registry::open(&root).unwrap();
        assert!(reg.load_current().unwrap().is_none());
        let m1 = tiny_model(0.0);
        let v1 = reg.publish(&m1, &ModelCard::describe(&m1, "test")).unwrap();
        let m2 = tiny_model(1.0);
        let v2 = reg.publish(&m2, &ModelCard::describe(&m2, "test")).unwrap();
        assert!(
            v1.starts_with("v000001-") && v2.starts_with("v000002-") && v2 > v1,
            "{v1} {v2}"
        );
        // The registry names a version by the fixed hash of the model's text too.
        assert_eq!(v1, format!("v000001-{}", model_hash(&m1)));
        let (cur, card) = reg.load_current().unwrap().unwrap();
        assert_eq!(cur, m2);
        assert_eq!(card.version, v2);
        assert_eq!(card.classes, vec!["neg", "pos"]);
        reg.set_current(&v1).unwrap();
        assert_eq!(reg.load_current().unwrap().unwrap().0, m1);
        assert_eq!(reg.versions().unwrap(), vec![v1.clone(), v2]);
        // Nothing half-written is left, and a missing version is refused by name.
        let hidden: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
            .filter(|e| e.file_name() != ".lock")
            .collect();
        assert!(hidden.is_empty());
        assert!(reg
            .set_current("v999999-x")
            .unwrap_err()
            .to_string()
            .contains("v999999-x"));
        std::fs::write(root.join(&v1).join("model.json"), "{}").unwrap();
        let e = format!("{:#}", reg.load(&v1).unwrap_err());
        assert!(e.contains("model.json"), "{e}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// Two publishers into one local registry at once (two trainers on a shared volume):
    /// every version gets a sequence number of its own and `current` ends on one of them.
    /// Before the turn, both read the same last sequence and published two models under it.
    #[test]
    fn concurrent_local_publishers_never_share_a_sequence() {
        let root =
            std::env::temp_dir().join(format!("milstream-registry-cas-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        // A model per publication: publishing the model `current` already names adds none.
        let per_thread = 12;
        let models: Vec<Vec<Model>> = (0..2)
            .map(|t| {
                (0..per_thread)
                    .map(|i| tiny_model((t * per_thread + i) as f64))
                    .collect()
            })
            .collect();
        std::thread::scope(|s| {
            for (t, ms) in models.iter().enumerate() {
                let root = &root;
                s.spawn(move || {
                    let reg = Registry::open(root).unwrap();
                    for (i, m) in ms.iter().enumerate() {
                        let mut card = ModelCard::describe(m, "test");
                        card.source = format!("publisher {t} #{i}");
                        reg.publish(m, &card).unwrap();
                    }
                });
            }
        });
        let reg = Registry::open(&root).unwrap();
        let versions = reg.versions().unwrap();
        let seqs: std::collections::BTreeSet<u64> =
            versions.iter().filter_map(|v| version_seq_of(v)).collect();
        assert_eq!(versions.len(), 2 * per_thread, "{versions:?}");
        assert_eq!(
            seqs.len(),
            versions.len(),
            "a sequence taken twice: {versions:?}"
        );
        assert_eq!(
            reg.current().unwrap().as_deref(),
            versions.last().map(String::as_str)
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
