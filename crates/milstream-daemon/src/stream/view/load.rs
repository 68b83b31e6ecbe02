//! Pages that only read: `n` clients of the event stream, each watching a series, for
//! `bench-stream --view-clients` (the view's cost with pages open). In: the server's
//! address, the series to watch. Out: the bytes the clients read. Owns their tasks.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// Open readers of `/view/events`; dropped, they disconnect.
pub struct Readers {
    tasks: Vec<JoinHandle<()>>,
    /// Bytes read by all of them.
    pub bytes: Arc<AtomicU64>,
}

impl Drop for Readers {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Opens `n` event streams on `addr`, the i-th watching `series[i % len]`; each reads as a
/// browser does (and reconnects when dropped for falling behind) until the [`Readers`] go.
pub fn open(addr: SocketAddr, n: usize, series: &[String]) -> Readers {
    let bytes = Arc::new(AtomicU64::new(0));
    let tasks = (0..n)
        .map(|i| {
            let key = series
                .get(i % series.len().max(1))
                .cloned()
                .unwrap_or_default();
            let bytes = bytes.clone();
            tokio::spawn(async move {
                loop {
                    let _ = read_stream(addr, &key, &bytes).await;
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            })
        })
        .collect();
    Readers { tasks, bytes }
}

async fn read_stream(addr: SocketAddr, key: &str, bytes: &AtomicU64) -> std::io::Result<()> {
    let mut s = TcpStream::connect(addr).await?;
    let path: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("series", key)
        .finish();
    let req = format!(
        "GET /view/events?{path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await?;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        bytes.fetch_add(n as u64, Ordering::Relaxed);
    }
}
