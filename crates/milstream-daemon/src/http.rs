//! The ops endpoints: `/metrics` (Prometheus text), `/healthz` (liveness), `/readyz` (readiness);
//! the live view's routes (`stream/view/routes.rs`) are merged beside them (`serve_with`).
//!
//! Liveness and readiness differ on purpose: `/healthz` answers 200 while the process can
//! serve HTTP and every thread of the pipeline is alive (a scoring worker, a writer, the
//! trainer or the models follower that ended before shutdown is a 503 naming it: nothing
//! restarts it in-process, so the orchestrator restarts the pod); `/readyz` answers 200
//! only while partitions are being consumed (see [`Health`]), so a daemon that is still joining
//! its group, or draining on shutdown, is taken out of rotation without being killed.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use prometheus::TEXT_FORMAT;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tracing::{error, info};

use crate::metrics::Metrics;

/// Readiness shared with the daemon: ready while partitions are assigned and consumed (the
/// model is loaded before consuming starts), no sink is failing and the last offset commit
/// succeeded; not ready while joining the group, while an assigned partition could not be
/// started (its output store could not be listed), while a sink's writes fail (the writer
/// retries), while commits fail (the committer retries), and once shutdown begins.
#[derive(Debug, Default)]
pub struct Health {
    ready: AtomicBool,
    sink_failing: AtomicBool,
    /// The failing sink's last error was a refusal (permission, authentication): waiting
    /// does not heal it, a person must.
    sink_refused: AtomicBool,
    commit_failing: AtomicBool,
    brokers_down: AtomicBool,
    partitions_not_started: AtomicBool,
    /// Set once at start when a served model cannot take what is sent to it (a stale
    /// registry, a demo feed of another channel count): not ready until restarted with a fit.
    model_mismatch: std::sync::OnceLock<String>,
    /// Why the process cannot recover by itself (a partition that could not be started for
    /// longer than its bound): `/healthz` fails, so the orchestrator restarts it.
    stalled: std::sync::Mutex<Option<String>>,
    /// The pipeline's threads that ended before shutdown (a panic outside the per-message
    /// boundary): not alive, for good.
    dead_threads: std::sync::Mutex<Vec<String>>,
    /// Secret values of the configuration, masked in what the probes answer.
    secrets: std::sync::OnceLock<crate::config::Secrets>,
}

impl Health {
    /// Marks the daemon ready (partitions assigned and consumed) or not (starting, draining).
    pub fn set_ready(&self, ready: bool) {
        // Relaxed is enough: the flag publishes no other data, it is only reported.
        self.ready.store(ready, Ordering::Relaxed);
    }

    /// A sink write failed (true) or succeeded again (false).
    pub fn set_sink_failing(&self, failing: bool) {
        self.sink_failing.store(failing, Ordering::Relaxed);
        if !failing {
            self.sink_refused.store(false, Ordering::Relaxed);
        }
    }

    /// A sink write was refused by the store (permission or authentication): failing, and
    /// said so on `/readyz`, until a write succeeds again.
    pub fn set_sink_refused(&self) {
        self.sink_failing.store(true, Ordering::Relaxed);
        self.sink_refused.store(true, Ordering::Relaxed);
    }

    /// The last offset commit failed (true) or one succeeded again (false).
    pub fn set_commit_failing(&self, failing: bool) {
        self.commit_failing.store(failing, Ordering::Relaxed);
    }

    /// No broker is reachable (true; librdkafka's all-brokers-down, or statistics with no
    /// broker up) or one is again (false).
    pub fn set_brokers_down(&self, down: bool) {
        self.brokers_down.store(down, Ordering::Relaxed);
    }

    /// An assigned partition was not started (true: its output store could not be listed,
    /// so its replay point and what to sweep are unknown), or every assigned one was.
    pub fn set_partitions_not_started(&self, not_started: bool) {
        self.partitions_not_started
            .store(not_started, Ordering::Relaxed);
    }

    /// A start-up model does not take what its routes or the demo feed send (`why` names both).
    pub fn set_model_mismatch(&self, why: String) {
        let _ = self.model_mismatch.set(why);
    }

    /// The process cannot recover by itself (`why`), or can again (None).
    pub fn set_stalled(&self, why: Option<String>) {
        *self.stalled.lock().expect("health lock") = why;
    }

    /// The pipeline's thread `name` has ended while it should run: `/healthz` and `/readyz`
    /// answer 503 naming it from now on.
    pub fn thread_ended(&self, name: &str) {
        let mut dead = self.dead_threads.lock().unwrap_or_else(|e| e.into_inner());
        if !dead.iter().any(|d| d == name) {
            dead.push(name.to_string());
        }
    }

    /// The configuration's secret values, masked in the probes' answers.
    pub fn set_secrets(&self, secrets: crate::config::Secrets) {
        let _ = self.secrets.set(secrets);
    }

    /// Why `/healthz` answers 503 (a thread of the pipeline has ended, or a partition could
    /// not be started for longer than its bound), if it does.
    pub fn not_alive_reason(&self) -> Option<String> {
        let dead = self.dead_threads.lock().unwrap_or_else(|e| e.into_inner());
        if !dead.is_empty() {
            return Some(format!(
                "not alive: thread(s) {} ended (see the log for the panic); restart the process",
                dead.join(", ")
            ));
        }
        let stalled = self.stalled.lock().unwrap_or_else(|e| e.into_inner());
        stalled.as_ref().map(|why| format!("not alive: {why}"))
    }

    /// Whether `/readyz` answers 200.
    pub fn is_ready(&self) -> bool {
        self.not_ready_reason().is_none()
    }

    /// Why `/readyz` answers 503, if it does.
    pub fn not_ready_reason(&self) -> Option<std::borrow::Cow<'static, str>> {
        if let Some(why) = self.not_alive_reason() {
            return Some(why.into());
        }
        if let Some(why) = self.model_mismatch.get() {
            return Some(format!("not ready: a model does not fit its input: {why}").into());
        }
        let why = if !self.ready.load(Ordering::Relaxed) {
            Some("not ready: no partitions being consumed (starting, rebalancing or stopping)")
        } else if self.partitions_not_started.load(Ordering::Relaxed) {
            Some("not ready: an assigned partition was not started: its output store could not be listed (see the log; it is retried with backoff, and /healthz fails if it cannot start within 5 minutes)")
        } else if self.brokers_down.load(Ordering::Relaxed) {
            Some("not ready: no Kafka broker is reachable (consuming and committing wait)")
        } else if self.sink_refused.load(Ordering::Relaxed) {
            Some("not ready: the output store refuses writes (permission denied or not authenticated): fix its credentials or policy; the segments wait and are retried, nothing is dropped")
        } else if self.sink_failing.load(Ordering::Relaxed) {
            Some("not ready: a sink is failing to write (see milstream_sink_errors_total)")
        } else if self.commit_failing.load(Ordering::Relaxed) {
            Some("not ready: offset commits are failing (see milstream_commit_failures_total)")
        } else {
            None
        };
        why.map(Into::into)
    }
}

/// What the handlers share.
#[derive(Clone)]
struct Ops {
    metrics: Arc<Metrics>,
    health: Arc<Health>,
}

/// Binds `addr` (e.g. "127.0.0.1:9464"; port 0 = any free port), serves until `shutdown`
/// resolves. Returns the bound address once listening, plus the server's JoinHandle.
///
/// On shutdown the server stops accepting, lets in-flight requests finish, then the task ends.
pub async fn serve(
    addr: &str,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<(SocketAddr, JoinHandle<()>)> {
    serve_with(addr, metrics, health, Router::new(), shutdown).await
}

/// [`serve`], with `more` routes beside the ops endpoints (the live view's).
pub async fn serve_with(
    addr: &str,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    more: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<(SocketAddr, JoinHandle<()>)> {
    let with_addr =
        |e: io::Error| io::Error::new(e.kind(), format!("ops HTTP endpoint on {addr}: {e}"));
    let listener = TcpListener::bind(addr).await.map_err(with_addr)?;
    let local = listener.local_addr().map_err(with_addr)?;

    let app = Router::new()
        .route("/metrics", get(metrics_text))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(Ops { metrics, health })
        .merge(more);

    // Bound before spawning, so the caller (and a test) can connect as soon as we return.
    let task = tokio::spawn(async move {
        info!(addr = %local, "Serving /metrics, /healthz and /readyz.");
        match axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
        {
            Ok(()) => info!(addr = %local, "Ops HTTP endpoint stopped."),
            Err(error) => error!(addr = %local, %error, "Ops HTTP endpoint failed."),
        }
    });
    Ok((local, task))
}

async fn metrics_text(State(ops): State<Ops>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, TEXT_FORMAT)], ops.metrics.encode())
}

async fn healthz(State(ops): State<Ops>) -> (StatusCode, String) {
    match ops.health.not_alive_reason() {
        None => (StatusCode::OK, "ok".into()),
        Some(why) => (StatusCode::SERVICE_UNAVAILABLE, ops.health.masked(why)),
    }
}

async fn readyz(State(ops): State<Ops>) -> (StatusCode, String) {
    match ops.health.not_ready_reason() {
        None => (StatusCode::OK, "ready".into()),
        Some(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            ops.health.masked(why.into_owned()),
        ),
    }
}

impl Health {
    /// `text` with every secret value of the configuration masked: a reason may quote an
    /// error that quotes a setting.
    fn masked(&self, text: String) -> String {
        match self.secrets.get() {
            Some(s) => s.mask(&text),
            None => text,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;
    use tokio::sync::oneshot;
    use tokio::time::timeout;

    use super::*;
    use crate::metrics::RECORDS_CONSUMED;

    const LIMIT: Duration = Duration::from_secs(10);

    struct Response {
        status: u16,
        head: String,
        body: String,
    }

    /// A raw HTTP/1.1 GET with `Connection: close`, read to EOF.
    async fn get(addr: SocketAddr, path: &str) -> Response {
        let exchange = async {
            let mut stream = TcpStream::connect(addr).await.expect("connect");
            let request =
                format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
            stream.write_all(request.as_bytes()).await.expect("send");
            let mut raw = Vec::new();
            stream.read_to_end(&mut raw).await.expect("receive");
            String::from_utf8(raw).expect("UTF-8 response")
        };
        let raw = timeout(LIMIT, exchange).await.expect("response in time");
        let (head, body) = raw.split_once("\r\n\r\n").expect("head and body");
        let status = head
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("bad status line: {head:?}"));
        Response {
            status,
            head: head.to_ascii_lowercase(),
            body: body.to_owned(),
        }
    }

    #[tokio::test]
    async fn routes_answer_and_shutdown_ends_the_server() {
        let metrics = Metrics::new();
        metrics.register_topic("points");
        metrics
            .records_consumed
            .with_label_values(&["points", "0"])
            .inc();
        let health = Arc::new(Health::default());
        let (stop, stopped) = oneshot::channel::<()>();
        let (addr, task) = serve("127.0.0.1:0", metrics, health.clone(), async {
            let _ = stopped.await;
        })
        .await
        .expect("bind an ephemeral port");
        assert_ne!(addr.port(), 0);

        let r = get(addr, "/metrics").await;
        assert_eq!(r.status, 200);
        assert!(
            r.head.contains("content-type: text/plain; version=0.0.4"),
            "{}",
            r.head
        );
        assert!(r.body.contains(RECORDS_CONSUMED));
        assert!(r
            .body
            .contains("milstream_records_consumed_total{partition=\"0\",topic=\"points\"} 1"));

        let r = get(addr, "/healthz").await;
        assert_eq!((r.status, r.body.as_str()), (200, "ok"));

        let r = get(addr, "/readyz").await;
        assert_eq!(r.status, 503);
        assert!(r.body.contains("no partitions"), "{}", r.body);
        health.set_ready(true);
        let r = get(addr, "/readyz").await;
        assert_eq!((r.status, r.body.as_str()), (200, "ready"));
        // A failing sink takes the daemon out of rotation until a write succeeds again.
        health.set_sink_failing(true);
        let r = get(addr, "/readyz").await;
        assert_eq!(r.status, 503);
        assert!(r.body.contains("sink"), "{}", r.body);
        health.set_sink_failing(false);
        assert_eq!(get(addr, "/readyz").await.status, 200);
        // A refusal says that waiting will not heal it, until a write succeeds.
        health.set_sink_refused();
        let r = get(addr, "/readyz").await;
        assert_eq!(r.status, 503);
        assert!(r.body.contains("refuses writes"), "{}", r.body);
        health.set_sink_failing(false);
        assert_eq!(get(addr, "/readyz").await.status, 200);
        // So does a failing commit, until a commit succeeds again.
        health.set_commit_failing(true);
        let r = get(addr, "/readyz").await;
        assert_eq!(r.status, 503);
        assert!(r.body.contains("commits"), "{}", r.body);
        health.set_commit_failing(false);
        assert_eq!(get(addr, "/readyz").await.status, 200);
        health.set_ready(false);
        assert_eq!(get(addr, "/readyz").await.status, 503);

        assert_eq!(get(addr, "/nope").await.status, 404);

        stop.send(()).expect("server still listening");
        timeout(LIMIT, task)
            .await
            .expect("server stops after shutdown")
            .expect("server task did not panic");
        // The listener is owned by the finished task, so it is closed. (Connecting to check
        // is not a sound test: a concurrent test may be handed the freed ephemeral port.)
    }

    #[tokio::test]
    async fn bind_failure_names_the_address() {
        let taken = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = taken.local_addr().expect("local addr").to_string();
        let err = serve(
            &addr,
            Metrics::new(),
            Arc::new(Health::default()),
            std::future::pending(),
        )
        .await
        .expect_err("port already in use");
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
        assert!(err.to_string().contains(&addr), "{err}");

        let err = serve(
            "not-an-address",
            Metrics::new(),
            Arc::new(Health::default()),
            std::future::pending(),
        )
        .await
        .expect_err("unparsable address");
        assert!(err.to_string().contains("not-an-address"), "{err}");
    }
}
