//! A real S3-protocol server for the tests: moto's server mode (`moto_server`, installed by
//! scripts/test.sh into the project's `.venv`) on a free port, a bucket in it, and readers of
//! what the daemon wrote there: the crate's own store (for waiting) and pyarrow through the
//! S3 endpoint (the independent reader the assertions use).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type, TimestampMicrosecondType};
use arrow_array::Array;
use milstream::stream::output::store::Store;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::stream::{free_port, Row};
use super::tools::python;

pub const BUCKET: &str = "milstream-test";

/// A running moto server; killed on drop.
pub struct Moto {
    pub port: u16,
    child: Child,
}

impl Moto {
    /// Starts `moto_server` on a free port and creates [`BUCKET`]; panics with the install
    /// hint when moto is missing.
    pub fn start() -> Self {
        let server = moto_server();
        let port = free_port();
        let child = Command::new(&server)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{} does not start: {e}", server.display()));
        let moto = Self { port, child };
        let up = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                up.elapsed() < Duration::from_secs(30),
                "moto_server did not listen on {port} within 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        moto.python(&format!("s3.create_bucket(Bucket='{BUCKET}')"));
        moto
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The `[object_store]` table pointing the daemon at this server.
    pub fn config_table(&self) -> String {
        format!(
            "[object_store]\naws_endpoint = \"{}\"\naws_allow_http = \"true\"\naws_access_key_id = \"test\"\naws_secret_access_key = \"test\"\naws_region = \"us-east-1\"\n",
            self.endpoint()
        )
    }

    pub fn options(&self) -> BTreeMap<String, String> {
        [
            ("aws_endpoint", self.endpoint()),
            ("aws_allow_http", "true".into()),
            ("aws_access_key_id", "test".into()),
            ("aws_secret_access_key", "test".into()),
            ("aws_region", "us-east-1".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// The crate's store at `s3://BUCKET/<prefix>` on this server.
    pub fn store(&self, prefix: &str) -> Store {
        Store::open(
            std::path::Path::new(&format!("s3://{BUCKET}/{prefix}")),
            &self.options(),
        )
        .expect("the S3 store opens")
    }

    /// Runs Python with `s3` (a boto3 client), `fs` (pyarrow's S3FileSystem) and `endpoint`
    /// bound to this server; returns stdout.
    pub fn python(&self, body: &str) -> String {
        let script = format!(
            r#"
import boto3, pyarrow.fs
endpoint = "{ep}"
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                  aws_secret_access_key="test", region_name="us-east-1")
fs = pyarrow.fs.S3FileSystem(endpoint_override="127.0.0.1:{port}", scheme="http",
                             access_key="test", secret_key="test", region="us-east-1")
{body}
"#,
            ep = self.endpoint(),
            port = self.port
        );
        let out = super::tools::python_with("pyarrow.fs, boto3", "pyarrow boto3")
            .args(["-c", &script])
            .output()
            .expect("python runs");
        assert!(
            out.status.success(),
            "python against moto failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stderr),
            script
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// SIGSTOP: the store stops answering (connections hang) until [`Moto::resume`].
    pub fn pause(&self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGSTOP) };
    }

    pub fn resume(&self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGCONT) };
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.resume();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `moto_server` next to the test Python, or a panic naming the fix.
fn moto_server() -> PathBuf {
    let py = python();
    let beside = py.parent().map(|d| d.join("moto_server"));
    if let Some(p) = beside.filter(|p| p.exists()) {
        return p;
    }
    assert!(
        Command::new("moto_server").arg("--help").output().is_ok(),
        "moto_server not found: run the tests with `scripts/test.sh`, which installs it \
         (or `pip install \"moto[server]\"` into the .venv)"
    );
    PathBuf::from("moto_server")
}

/// Every prediction row under `predictions/` of `store`, read with arrow-rs from the
/// objects' bytes (for waiting; assertions read with pyarrow).
pub fn read_store_predictions(store: &Store) -> Vec<Row> {
    let mut rows = Vec::new();
    for rel in store.list("predictions").unwrap_or_default() {
        if !rel.ends_with(".parquet") {
            continue;
        }
        let Ok(Some(bytes)) = store.get(&rel) else {
            continue;
        };
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
            .expect("a visible object is a whole Parquet file")
            .build()
            .unwrap();
        for batch in reader {
            let b = batch.unwrap();
            let col = |n: &str| b.column_by_name(n).unwrap().clone();
            let (key, kind, start, end, label) = (
                col("key"),
                col("kind"),
                col("window_start"),
                col("window_end"),
                col("label"),
            );
            let (scores, version, part, off) = (
                col("scores"),
                col("model_version"),
                col("source_partition"),
                col("source_offset"),
            );
            let start = start.as_primitive::<TimestampMicrosecondType>();
            let end = end.as_primitive::<TimestampMicrosecondType>();
            for i in 0..b.num_rows() {
                rows.push(Row {
                    key: key.as_string::<i32>().value(i).to_string(),
                    kind: kind.as_string::<i32>().value(i).to_string(),
                    start: (!start.is_null(i)).then(|| start.value(i) / 1000),
                    end: (!end.is_null(i)).then(|| end.value(i) / 1000),
                    label: label.as_string::<i32>().value(i).to_string(),
                    scores: scores
                        .as_list::<i32>()
                        .value(i)
                        .as_primitive::<Float64Type>()
                        .values()
                        .to_vec(),
                    model_version: version.as_string::<i32>().value(i).to_string(),
                    model_name: b
                        .column_by_name("model_name")
                        .unwrap()
                        .as_string::<i32>()
                        .value(i)
                        .to_string(),
                    source_partition: part.as_primitive::<Int32Type>().value(i),
                    source_offset: off.as_primitive::<Int64Type>().value(i),
                    file: rel.clone(),
                    // For waiting only: the findings are checked on local output.
                    findings: Vec::new(),
                    shown_share: None,
                });
            }
        }
    }
    rows
}

/// An HTTP forwarder to the store at `target` that passes every request on and answers it
/// with the store's answer, except the PUT of every `every`-th Delta commit
/// (`_delta_log/*.json`): the store makes it, and the client gets a 500 instead — the
/// answer S3 sometimes loses, which clients retry (the retry then finds the object there).
/// One request per connection (`Connection: close` both ways). Returns the port and the
/// count of answers lost.
pub fn lose_commit_answers(
    target: std::net::SocketAddr,
    every: usize,
) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// One request from `client`: its head (without `Connection`) and body; None at EOF.
    fn request(client: &mut TcpStream) -> Option<(String, Vec<u8>)> {
        let mut bytes = Vec::new();
        let mut byte = [0u8; 1];
        while !bytes.ends_with(b"\r\n\r\n") {
            if client.read(&mut byte).ok()? == 0 {
                return None;
            }
            bytes.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&bytes).into_owned();
        let length = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse::<usize>().ok())?
            })
            .unwrap_or(0);
        let mut body = vec![0u8; length];
        client.read_exact(&mut body).ok()?;
        let head: String = head
            .trim_end()
            .lines()
            .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
            .map(|l| format!("{l}\r\n"))
            .collect();
        Some((head, body))
    }

    /// `answer` with its `Connection` header replaced by `close`.
    fn closing(answer: &[u8]) -> Vec<u8> {
        let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
            return answer.to_vec();
        };
        let head = String::from_utf8_lossy(&answer[..end]);
        let mut out: String = head
            .lines()
            .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
            .map(|l| format!("{l}\r\n"))
            .collect();
        out.push_str("Connection: close\r\n\r\n");
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(&answer[end + 4..]);
        bytes
    }

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (commits, lost) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let lost_count = lost.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let (commits, lost) = (commits.clone(), lost.clone());
            std::thread::spawn(move || {
                let mut client = client;
                let Some((head, body)) = request(&mut client) else {
                    return;
                };
                let Ok(mut store) = TcpStream::connect(target) else {
                    return;
                };
                let _ = store.write_all(format!("{head}Connection: close\r\n\r\n").as_bytes());
                let _ = store.write_all(&body);
                let mut answer = Vec::new();
                let _ = store.read_to_end(&mut answer);
                let line = head.lines().next().unwrap_or("");
                let path = line.split(' ').nth(1).unwrap_or("");
                let path = path.split('?').next().unwrap_or("");
                let commit = line.starts_with("PUT ")
                    && path.contains("/_delta_log/")
                    && path.ends_with(".json");
                let made =
                    answer.starts_with(b"HTTP/1.1 200") || answer.starts_with(b"HTTP/1.0 200");
                if commit && made && (commits.fetch_add(1, Ordering::SeqCst) + 1) % every == 0 {
                    lost.fetch_add(1, Ordering::SeqCst);
                    let body = "<Error><Code>InternalError</Code><Message>lost</Message></Error>";
                    answer = format!(
                        "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    )
                    .into_bytes();
                }
                let _ = client.write_all(&closing(&answer));
            });
        }
    });
    (port, lost_count)
}
