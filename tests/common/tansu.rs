//! Tansu, a Kafka-protocol broker from crates.io, as a real broker for the ignored
//! real-broker tests (`scripts/real-broker-tests.sh` installs it and runs them). It drops
//! offset-commit metadata, so recovery there goes through the output files' replay points.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;

use super::stream::{free_port, BAGS, LABELS, MODELS, POINTS};

const HINT: &str = "install it with scripts/real-broker-tests.sh (cargo install tansu \
    --version 0.6.0 --locked --features dynostore,libsql), or point MILSTREAM_TANSU at it";

/// A running broker; killed when dropped.
pub struct Tansu {
    child: Child,
    pub bootstrap: String,
    _dir: PathBuf,
}

impl Drop for Tansu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The tansu binary: `MILSTREAM_TANSU`, else `tansu` on PATH; a missing one fails the test
/// with the install hint.
fn binary() -> PathBuf {
    let bin = std::env::var_os("MILSTREAM_TANSU")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("tansu"));
    let ok = Command::new(&bin)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "{} does not run: {HINT}", bin.display());
    bin
}

impl Tansu {
    /// Starts a broker with sqlite storage in a scratch folder and creates the test topics
    /// with `partitions` each.
    pub fn start(name: &str, partitions: i32) -> Tansu {
        let port = free_port();
        // Each broker its own database: a second start in one test begins empty.
        let dir = super::scratch(&format!("tansu-{name}-{port}"));
        let url = format!("tcp://127.0.0.1:{port}");
        let log = std::fs::File::create(dir.join("tansu.log")).unwrap();
        let child = Command::new(binary())
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &url,
            ])
            // A relative sqlite URL, in the scratch folder (tansu reads `sqlite:///abs`
            // as relative to its working directory).
            .args(["--storage-engine", "sqlite://tansu.db"])
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("tansu starts");
        let bootstrap = format!("127.0.0.1:{port}");
        let t = Tansu {
            child,
            bootstrap,
            _dir: dir,
        };
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "tansu did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        t.create_topics(partitions);
        t
    }

    fn create_topics(&self, partitions: i32) {
        let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
            .set("bootstrap.servers", &self.bootstrap)
            .create()
            .expect("admin client");
        let topics: Vec<NewTopic> = [POINTS, BAGS, LABELS, MODELS]
            .iter()
            .map(|t| NewTopic::new(t, partitions, TopicReplication::Fixed(1)))
            .collect();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
        let results = rt
            .block_on(admin.create_topics(&topics, &opts))
            .expect("CreateTopics");
        for r in results {
            if let Err((topic, e)) = r {
                panic!("creating {topic} on tansu: {e:?}");
            }
        }
    }
}
