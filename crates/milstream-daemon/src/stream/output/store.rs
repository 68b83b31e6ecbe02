//! Where durable outputs live: a local folder or an object store. In: a location from the
//! config (`output.dir`, `training.dir`, `model.registry_dir`: a path, or a URL `s3://`,
//! `gs://`, `az://`, `file://`) and the `[object_store]` options. Out: whole files put,
//! read, listed by prefix and deleted by their path relative to the location. Owns: the
//! object-store client and the small runtime its requests run on.
//!
//! Commit = visibility on both: a local file is written to a hidden temp name, fsynced,
//! renamed and its folder fsynced; an object is one PUT when small, else a multipart upload
//! completed only once every part is in (and aborted on failure), so a reader never sees a
//! partial object. Orphaned parts of an upload cut short by a crash are invisible; a bucket
//! lifecycle rule (`AbortIncompleteMultipartUpload`) reclaims them.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use futures::TryStreamExt;
use object_store::path::Path as ObjPath;
pub use object_store::UpdateVersion;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutMode, PutPayload};

use crate::config::is_url;

/// Above this an object is uploaded in parts (S3's smallest part is 5 MiB).
pub const MULTIPART_THRESHOLD: usize = 8 << 20;
const PART_SIZE: usize = 8 << 20;

/// The requests of every object store run here, so blocking callers (writer threads, the
/// trainer, rebalance callbacks inside a tokio task) can wait for them from any context.
static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("milstream-store")
        .enable_all()
        .build()
        .expect("starting the object-store runtime")
});

/// Runs `fut` on the store runtime and waits for it.
fn block<T: Send + 'static>(
    fut: impl std::future::Future<Output = T> + Send + 'static,
) -> std::io::Result<T> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    RUNTIME.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv()
        .map_err(|_| std::io::Error::other("the object-store request was dropped"))
}

fn io_err(e: object_store::Error) -> std::io::Error {
    match e {
        object_store::Error::NotFound { .. } => {
            std::io::Error::new(std::io::ErrorKind::NotFound, e.to_string())
        }
        object_store::Error::AlreadyExists { .. } => {
            std::io::Error::new(std::io::ErrorKind::AlreadyExists, e.to_string())
        }
        // The store refuses (credentials, policy): retrying the same request gets the same
        // answer until someone fixes the configuration; the writer says so.
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => {
            std::io::Error::new(std::io::ErrorKind::PermissionDenied, e.to_string())
        }
        e => std::io::Error::other(e.to_string()),
    }
}

/// What a [`Store::put_if_unchanged`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swap {
    /// Put: the object was as expected.
    Done,
    /// Not put: another writer changed (or created) the object since it was read.
    Conflict,
    /// Not put: the store has no conditional put (a local folder, or one configured off).
    Unsupported,
}

/// A place for durable outputs.
#[derive(Clone)]
pub enum Store {
    Local(PathBuf),
    Object(ObjectTarget),
}

/// An object store and the key prefix under it.
#[derive(Clone)]
pub struct ObjectTarget {
    store: Arc<dyn ObjectStore>,
    prefix: ObjPath,
    /// `scheme://bucket/prefix`, no credentials: what logs show.
    shown: String,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.display())
    }
}

impl Store {
    /// Opens `location`: a local path (or `file://` URL), or an object-store URL whose
    /// credentials, region and endpoint come from the store's usual environment variables
    /// (`AWS_*`, `GOOGLE_*`, `AZURE_*`) and `options` (the `[object_store]` table; its keys
    /// win). Nothing is contacted yet.
    pub fn open(location: &Path, options: &BTreeMap<String, String>) -> std::io::Result<Self> {
        let text = location.to_string_lossy();
        if let Some(path) = text.strip_prefix("file://") {
            return Ok(Self::Local(PathBuf::from(path)));
        }
        if !is_url(&text) {
            return Ok(Self::Local(location.to_path_buf()));
        }
        let url = url::Url::parse(&text).map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{text}: {e}"))
        })?;
        let store = build(&url, options)?;
        let prefix = ObjPath::from_url_path(url.path()).map_err(io_err_generic)?;
        let shown = format!(
            "{}://{}{}",
            url.scheme(),
            url.host_str().unwrap_or_default(),
            url.path().trim_end_matches('/')
        );
        Ok(Self::Object(ObjectTarget {
            store,
            prefix,
            shown,
        }))
    }

    /// An object store given directly (tests: the in-memory store).
    pub fn from_object_store(store: Arc<dyn ObjectStore>, prefix: &str) -> Self {
        Self::Object(ObjectTarget {
            store,
            prefix: ObjPath::from(prefix),
            shown: format!("object-store/{prefix}"),
        })
    }

    pub fn is_local(&self) -> bool {
        matches!(self, Self::Local(_))
    }

    /// The location for logs: a path or `scheme://bucket/prefix`.
    pub fn display(&self) -> String {
        match self {
            Self::Local(p) => p.display().to_string(),
            Self::Object(o) => o.shown.clone(),
        }
    }

    /// The local path of `rel`, for a local store.
    pub fn local_path(&self, rel: &str) -> Option<PathBuf> {
        match self {
            Self::Local(root) => Some(root.join(rel)),
            Self::Object(_) => None,
        }
    }

    /// Creates the root folder of a local store; nothing for an object store (buckets are
    /// made by whoever runs them).
    pub fn ensure_root(&self) -> std::io::Result<()> {
        match self {
            Self::Local(root) => create_dir_durably(root),
            Self::Object(_) => Ok(()),
        }
    }

    /// Makes `bytes` visible as `rel` at once and whole; returns the size. Overwrites (a
    /// replay rewrites the same name with the same rows).
    pub fn put(&self, rel: &str, bytes: Vec<u8>) -> std::io::Result<u64> {
        let len = bytes.len() as u64;
        match self {
            Self::Local(root) => {
                let path = root.join(rel);
                let (dir, name) = split(&path)?;
                write_atomically(&dir, &name, |mut f| {
                    f.write_all(&bytes)?;
                    Ok(f)
                })?;
            }
            Self::Object(o) => {
                let (store, key) = (o.store.clone(), o.key(rel));
                block(async move { upload(store.as_ref(), &key, bytes).await })??;
            }
        }
        Ok(len)
    }

    /// Puts `bytes` as `rel` only if nothing is there yet (`PutMode::Create` on an object
    /// store): AlreadyExists otherwise.
    pub fn put_new(&self, rel: &str, bytes: Vec<u8>) -> std::io::Result<()> {
        match self {
            Self::Local(root) => {
                if root.join(rel).exists() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::AlreadyExists,
                        format!("{rel} exists"),
                    ));
                }
                self.put(rel, bytes).map(|_| ())
            }
            Self::Object(o) => {
                let (store, key) = (o.store.clone(), o.key(rel));
                block(async move {
                    let payload = PutPayload::from(bytes);
                    match store
                        .put_opts(&key, payload.clone(), PutMode::Create.into())
                        .await
                    {
                        // No conditional put on this store: look, then put (racy, the best
                        // it allows).
                        Err(object_store::Error::NotImplemented { .. }) => {
                            match store.head(&key).await {
                                Ok(_) => Err(std::io::Error::new(
                                    std::io::ErrorKind::AlreadyExists,
                                    format!("{key} exists"),
                                )),
                                Err(object_store::Error::NotFound { .. }) => {
                                    store.put(&key, payload).await.map(|_| ()).map_err(io_err)
                                }
                                Err(e) => Err(io_err(e)),
                            }
                        }
                        r => r.map(|_| ()).map_err(io_err),
                    }
                })?
            }
        }
    }

    /// The bytes of `rel` and the version a [`Store::put_if_unchanged`] expects; None when
    /// it does not exist.
    pub fn get_versioned(&self, rel: &str) -> std::io::Result<Option<(Vec<u8>, UpdateVersion)>> {
        let Self::Object(o) = self else {
            let none = UpdateVersion {
                e_tag: None,
                version: None,
            };
            return Ok(self.get(rel)?.map(|b| (b, none)));
        };
        let (store, key) = (o.store.clone(), o.key(rel));
        let got = block(async move {
            let r = store.get(&key).await.map_err(io_err)?;
            let version = UpdateVersion {
                e_tag: r.meta.e_tag.clone(),
                version: r.meta.version.clone(),
            };
            let bytes = r.bytes().await.map_err(io_err)?;
            Ok::<_, std::io::Error>((bytes.to_vec(), version))
        })?;
        match got {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Compare-and-swap on an object store: puts `bytes` as `rel` only if it is still as
    /// read (`expected`, from [`Store::get_versioned`]; None: only if it still does not
    /// exist), with the store's conditional put (`PutMode::Update` / `PutMode::Create`; on
    /// S3, If-Match / If-None-Match, `aws_conditional_put = "etag"`, the default).
    pub fn put_if_unchanged(
        &self,
        rel: &str,
        bytes: Vec<u8>,
        expected: Option<UpdateVersion>,
    ) -> std::io::Result<Swap> {
        let Self::Object(o) = self else {
            return Ok(Swap::Unsupported);
        };
        let (store, key) = (o.store.clone(), o.key(rel));
        let mode = match expected {
            Some(v) if v.e_tag.is_none() && v.version.is_none() => return Ok(Swap::Unsupported),
            Some(v) => PutMode::Update(v),
            None => PutMode::Create,
        };
        block(async move {
            match store
                .put_opts(&key, PutPayload::from(bytes), mode.into())
                .await
            {
                Ok(_) => Ok(Swap::Done),
                Err(
                    object_store::Error::Precondition { .. }
                    | object_store::Error::AlreadyExists { .. },
                ) => Ok(Swap::Conflict),
                Err(object_store::Error::NotImplemented { .. }) => Ok(Swap::Unsupported),
                Err(e) => Err(io_err(e)),
            }
        })?
    }

    /// The bytes of `rel`; None when it does not exist.
    pub fn get(&self, rel: &str) -> std::io::Result<Option<Vec<u8>>> {
        let got = match self {
            Self::Local(root) => std::fs::read(root.join(rel)),
            Self::Object(o) => {
                let (store, key) = (o.store.clone(), o.key(rel));
                block(async move {
                    let r = store.get(&key).await.map_err(io_err)?;
                    r.bytes().await.map(|b| b.to_vec()).map_err(io_err)
                })?
            }
        };
        match got {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The last `n` bytes of `rel` (all of it when shorter) and its whole size, in one
    /// ranged read; None when it does not exist.
    pub fn get_tail(&self, rel: &str, n: u64) -> std::io::Result<Option<(Vec<u8>, u64)>> {
        let got = match self {
            Self::Local(root) => read_local_range(&root.join(rel), None, n),
            Self::Object(o) => {
                let (store, key) = (o.store.clone(), o.key(rel));
                block(async move {
                    let opts = GetOptions::new().with_range(Some(GetRange::Suffix(n)));
                    let r = store.get_opts(&key, opts).await.map_err(io_err)?;
                    let size = r.meta.size;
                    let bytes = r.bytes().await.map_err(io_err)?;
                    Ok((bytes.to_vec(), size))
                })?
            }
        };
        match got {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Bytes `range` of `rel`, in one ranged read.
    pub fn get_range(&self, rel: &str, range: std::ops::Range<u64>) -> std::io::Result<Vec<u8>> {
        match self {
            Self::Local(root) => {
                read_local_range(&root.join(rel), Some(range.start), range.end - range.start)
                    .map(|(b, _)| b)
            }
            Self::Object(o) => {
                let (store, key) = (o.store.clone(), o.key(rel));
                block(async move {
                    store
                        .get_range(&key, range)
                        .await
                        .map(|b| b.to_vec())
                        .map_err(io_err)
                })?
            }
        }
    }

    /// Deletes `rel` (gone already is fine).
    pub fn delete(&self, rel: &str) -> std::io::Result<()> {
        let r = match self {
            Self::Local(root) => std::fs::remove_file(root.join(rel)),
            Self::Object(o) => {
                let (store, key) = (o.store.clone(), o.key(rel));
                block(async move { store.delete(&key).await.map_err(io_err) })?
            }
        };
        match r {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            r => r,
        }
    }

    /// Every file under `rel_dir` (recursively), as paths relative to the store's root,
    /// sorted; hidden temp files of a local store included (the sweep removes them).
    pub fn list(&self, rel_dir: &str) -> std::io::Result<Vec<String>> {
        let mut out = Vec::new();
        match self {
            Self::Local(root) => walk(root, &root.join(rel_dir), &mut out)?,
            Self::Object(o) => {
                let (store, prefix, base) = (o.store.clone(), o.key(rel_dir), o.prefix.clone());
                let metas: Vec<object_store::ObjectMeta> =
                    block(async move { store.list(Some(&prefix)).try_collect().await })?
                        .map_err(io_err)?;
                for m in metas {
                    if let Some(rel) = o.relative(&base, &m.location) {
                        out.push(rel);
                    }
                }
            }
        }
        out.sort();
        LISTED.with(|n| n.set(n.get() + out.len() as u64));
        Ok(out)
    }

    /// The immediate sub-folders of `rel_dir` (their names only), sorted.
    pub fn list_dirs(&self, rel_dir: &str) -> std::io::Result<Vec<String>> {
        let mut out = Vec::new();
        match self {
            Self::Local(root) => {
                // A folder not made yet holds nothing; any other error is an error (a
                // failed listing is not an empty one).
                let entries = match std::fs::read_dir(root.join(rel_dir)) {
                    Ok(entries) => entries,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
                    Err(e) => return Err(e),
                };
                for e in entries.flatten() {
                    if e.path().is_dir() {
                        out.push(e.file_name().to_string_lossy().into_owned());
                    }
                }
            }
            Self::Object(o) => {
                let (store, prefix) = (o.store.clone(), o.key(rel_dir));
                let listed = block(async move { store.list_with_delimiter(Some(&prefix)).await })?
                    .map_err(io_err)?;
                for p in listed.common_prefixes {
                    if let Some(name) = p.filename() {
                        out.push(name.to_string());
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }
}

impl ObjectTarget {
    fn key(&self, rel: &str) -> ObjPath {
        let mut key = self.prefix.clone();
        for part in rel.split('/').filter(|p| !p.is_empty()) {
            key = key.join(part);
        }
        key
    }

    fn relative(&self, base: &ObjPath, key: &ObjPath) -> Option<String> {
        let parts: Vec<String> = key.prefix_match(base)?.map(|p| p.as_ref().into()).collect();
        Some(parts.join("/"))
    }
}

fn io_err_generic(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string())
}

/// The object store of `url`: the scheme's builder from its environment variables, then
/// `options` on top. Options are never logged (they may hold secrets).
fn build(
    url: &url::Url,
    options: &BTreeMap<String, String>,
) -> std::io::Result<Arc<dyn ObjectStore>> {
    let opts = options.iter();
    // Few quick retries inside a request: the writer retries a failed file itself, with
    // backoff and for as long as it takes, and a store that stays down should show on
    // /readyz within seconds rather than after the crate's default three minutes.
    let retry = object_store::RetryConfig {
        max_retries: 2,
        retry_timeout: std::time::Duration::from_secs(15),
        ..Default::default()
    };
    let store: Arc<dyn ObjectStore> = match url.scheme() {
        "s3" | "s3a" => {
            let mut b = object_store::aws::AmazonS3Builder::from_env()
                .with_url(url.as_str())
                .with_retry(retry);
            for (k, v) in opts {
                b = b.with_config(k.parse().map_err(io_err_generic)?, v);
            }
            Arc::new(b.build().map_err(io_err)?)
        }
        "gs" => {
            let mut b = object_store::gcp::GoogleCloudStorageBuilder::from_env()
                .with_url(url.as_str())
                .with_retry(retry);
            for (k, v) in opts {
                b = b.with_config(k.parse().map_err(io_err_generic)?, v);
            }
            Arc::new(b.build().map_err(io_err)?)
        }
        "az" | "azure" | "abfs" | "abfss" | "adl" => {
            let mut b = object_store::azure::MicrosoftAzureBuilder::from_env()
                .with_url(url.as_str())
                .with_retry(retry);
            for (k, v) in opts {
                b = b.with_config(k.parse().map_err(io_err_generic)?, v);
            }
            Arc::new(b.build().map_err(io_err)?)
        }
        "memory" => Arc::new(object_store::memory::InMemory::new()),
        s => {
            return Err(io_err_generic(format!(
                "unsupported store URL scheme {s:?} (s3, gs, az, file, or a path)"
            )))
        }
    };
    Ok(store)
}

/// One PUT for a small object; otherwise a multipart upload that is completed only when
/// every part is in, and aborted on any failure.
async fn upload(store: &dyn ObjectStore, key: &ObjPath, bytes: Vec<u8>) -> std::io::Result<()> {
    if bytes.len() <= MULTIPART_THRESHOLD {
        return store
            .put(key, PutPayload::from(bytes))
            .await
            .map(|_| ())
            .map_err(io_err);
    }
    let mut upload = store.put_multipart(key).await.map_err(io_err)?;
    let bytes = bytes::Bytes::from(bytes);
    let mut result = Ok(());
    for start in (0..bytes.len()).step_by(PART_SIZE) {
        let part = bytes.slice(start..(start + PART_SIZE).min(bytes.len()));
        if let Err(e) = upload.put_part(PutPayload::from(part)).await {
            result = Err(e);
            break;
        }
    }
    if result.is_ok() {
        result = upload.complete().await.map(|_| ());
    }
    if let Err(e) = result {
        let _ = upload.abort().await;
        return Err(io_err(e));
    }
    Ok(())
}

/// `len` bytes of a local file from `start`, or its last `len` bytes when `start` is None;
/// with the file's size.
fn read_local_range(path: &Path, start: Option<u64>, len: u64) -> std::io::Result<(Vec<u8>, u64)> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    let size = f.metadata()?.len();
    let start = start.unwrap_or(size.saturating_sub(len));
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity(len.min(size) as usize);
    f.take(len).read_to_end(&mut buf)?;
    Ok((buf, size))
}

fn split(path: &Path) -> std::io::Result<(PathBuf, String)> {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let name = path
        .file_name()
        .ok_or_else(|| io_err_generic(format!("{} names no file", path.display())))?
        .to_string_lossy()
        .into_owned();
    Ok((dir, name))
}

thread_local! {
    /// Files this thread's [`Store::list`] calls returned: what an assignment's cost is
    /// measured in (see [`files_listed`]).
    static LISTED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many files this thread's listings have returned so far.
pub fn files_listed() -> u64 {
    LISTED.with(|n| n.get())
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    // A folder not made yet (or removed meanwhile) holds nothing; any other error is one.
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(root, &p, out)?;
        } else if let Ok(rel) = p.strip_prefix(root) {
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(())
}

/// Writes through `write` into `<dir>/.<name>.tmp`, fsyncs it, renames it to `<dir>/<name>`
/// and fsyncs the folder: the file is either absent or whole. A folder it creates (a new
/// `date=` folder) is made durable first (see [`create_dir_durably`]).
pub fn write_atomically(
    dir: &Path,
    name: &str,
    write: impl FnOnce(std::fs::File) -> std::io::Result<std::fs::File>,
) -> std::io::Result<(PathBuf, u64)> {
    create_dir_durably(dir)?;
    let tmp = dir.join(format!(".{name}.tmp"));
    let file = std::fs::File::create(&tmp)?;
    let file = write(file)?;
    file.sync_all()?;
    let len = file.metadata()?.len();
    drop(file);
    let dest = dir.join(name);
    std::fs::rename(&tmp, &dest)?;
    sync_dir(dir)?;
    Ok((dest, len))
}

/// Creates `dir` and each missing folder above it, fsyncing the parent of every folder it
/// creates, top down. A folder's entry lives in its parent: fsyncing the file and its own
/// folder does not make a new folder's entry durable, so a crash could lose a new `date=`
/// folder and the committed file in it (its offsets committed, its rows gone).
pub fn create_dir_durably(dir: &Path) -> std::io::Result<()> {
    // The common case, a folder that exists: one stat.
    if dir.is_dir() {
        return Ok(());
    }
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at.filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
        missing.push(d);
        at = d.parent();
    }
    for d in missing.into_iter().rev() {
        match std::fs::create_dir(d) {
            // Made meanwhile by another writer: its parent is synced below all the same
            // (that writer may not have got there yet).
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
        let parent = d.parent().filter(|p| !p.as_os_str().is_empty());
        sync_dir(parent.unwrap_or(Path::new(".")))?;
    }
    Ok(())
}

/// fsyncs a folder: its entries (files renamed into it, folders made in it) survive a crash.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(test)]
    tests::SYNCED.with(|s| s.borrow_mut().push(dir.to_path_buf()));
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// The folders this thread fsynced, in order.
        pub static SYNCED: std::cell::RefCell<Vec<PathBuf>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    /// A file written into a new `date=` folder under a new topic folder: each folder made is
    /// fsynced in its parent, top down, before the file's own folder after its rename. (Only
    /// that last fsync was made: a crash could lose the new folders' entries, and the
    /// committed file with them.)
    #[test]
    fn new_folders_are_fsynced_in_their_parents() {
        let root = std::env::temp_dir().join(format!("milstream-fsync-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let store = Store::Local(root.clone());
        SYNCED.with(|s| s.borrow_mut().clear());
        store
            .put("predictions/date=2026-12-07/a.parquet", b"x".to_vec())
            .unwrap();
        let synced = SYNCED.with(|s| s.take());
        let preds = root.join("predictions");
        let date = preds.join("date=2026-12-07");
        assert_eq!(synced, [root.clone(), preds.clone(), date.clone()]);
        // A second file in the same folder: only the folder's own fsync after its rename.
        store
            .put("predictions/date=2026-12-07/b.parquet", b"y".to_vec())
            .unwrap();
        assert_eq!(SYNCED.with(|s| s.take()), [date]);
        std::fs::remove_dir_all(&root).unwrap();
    }

    fn round_trip(store: &Store) {
        store.put("a/date=1/x.parquet", b"one".to_vec()).unwrap();
        store
            .put("a/date=2/y.parquet", vec![7u8; MULTIPART_THRESHOLD + 5])
            .unwrap();
        assert_eq!(store.get("a/date=1/x.parquet").unwrap().unwrap(), b"one");
        assert_eq!(
            store.get("a/date=2/y.parquet").unwrap().unwrap().len(),
            MULTIPART_THRESHOLD + 5
        );
        assert!(store.get("a/none").unwrap().is_none());
        assert_eq!(
            store.get_tail("a/date=1/x.parquet", 2).unwrap().unwrap(),
            (b"ne".to_vec(), 3)
        );
        assert_eq!(
            store.get_tail("a/date=1/x.parquet", 9).unwrap().unwrap().0,
            b"one"
        );
        assert!(store.get_tail("a/none", 2).unwrap().is_none());
        assert_eq!(store.get_range("a/date=1/x.parquet", 1..2).unwrap(), b"n");
        assert_eq!(
            store.list("a").unwrap(),
            vec!["a/date=1/x.parquet", "a/date=2/y.parquet"]
        );
        assert_eq!(store.list_dirs("a").unwrap(), vec!["date=1", "date=2"]);
        store.put_new("c", b"1".to_vec()).unwrap();
        assert_eq!(
            store.put_new("c", b"2".to_vec()).unwrap_err().kind(),
            std::io::ErrorKind::AlreadyExists
        );
        store.delete("a/date=1/x.parquet").unwrap();
        store.delete("a/date=1/x.parquet").unwrap();
        if !store.is_local() {
            // Compare-and-swap: of two writers that read the same version, one wins.
            assert_eq!(
                store.put_if_unchanged("p", b"1".to_vec(), None).unwrap(),
                Swap::Done
            );
            assert_eq!(
                store.put_if_unchanged("p", b"x".to_vec(), None).unwrap(),
                Swap::Conflict
            );
            let (_, seen) = store.get_versioned("p").unwrap().unwrap();
            let put = |b: &[u8]| store.put_if_unchanged("p", b.to_vec(), Some(seen.clone()));
            assert_eq!(put(b"2").unwrap(), Swap::Done);
            assert_eq!(put(b"3").unwrap(), Swap::Conflict);
            assert_eq!(store.get("p").unwrap().unwrap(), b"2");
        }
        assert_eq!(store.list("a").unwrap(), vec!["a/date=2/y.parquet"]);
    }

    #[test]
    fn local_and_object_stores_put_list_get_delete_alike() {
        let dir = std::env::temp_dir().join(format!("milstream-store-rt-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        round_trip(&Store::open(&dir, &BTreeMap::new()).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
        let mem = Arc::new(object_store::memory::InMemory::new());
        round_trip(&Store::from_object_store(mem, "out/prefix"));
    }

    #[test]
    fn urls_open_object_stores_and_paths_stay_local() {
        let opts: BTreeMap<String, String> = [
            ("aws_region".to_string(), "us-east-1".to_string()),
            ("aws_access_key_id".to_string(), "KEY".to_string()),
            ("aws_secret_access_key".to_string(), "SECRET".to_string()),
        ]
        .into();
        let s = Store::open(Path::new("s3://bucket/some/prefix"), &opts).unwrap();
        assert!(!s.is_local());
        assert_eq!(s.display(), "s3://bucket/some/prefix");
        assert!(!format!("{s:?}").contains("SECRET"));
        assert!(Store::open(Path::new("file:///tmp/x"), &opts)
            .unwrap()
            .is_local());
        assert!(Store::open(Path::new("milstream-out"), &opts)
            .unwrap()
            .is_local());
        let bad: BTreeMap<String, String> = [("no_such_key".to_string(), "1".to_string())].into();
        assert!(Store::open(Path::new("s3://bucket/p"), &bad).is_err());
    }
}
