//! The live view's routes, merged into the ops server (`http.rs`). In: GET requests. Out:
//! the page, its assets, a page of the streams table, one series, and the event stream.
//! Owns nothing: every answer is read from the [`ViewHub`].

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode, Uri};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::assets::{APP_JS, INDEX_HTML, STYLE_CSS};
use super::events::page_stream;
use super::feed::display_key;
use super::ViewHub;

/// The view's routes, with their state.
pub fn router(hub: Arc<ViewHub>) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }),
        )
        .route(
            "/view/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/view/style.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE_CSS) }),
        )
        .route("/view/api/series", get(series_page))
        .route("/view/api/one", get(one_series))
        .route("/view/events", get(events))
        .with_state(hub)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

fn json(v: serde_json::Value) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], v.to_string()).into_response()
}

/// The query parameter `name` of `uri`, cut to `max` bytes.
fn param(uri: &Uri, name: &str, max: usize) -> Option<String> {
    let q = uri.query()?;
    url::form_urlencoded::parse(q.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| super::feed::cut(&v, max).into_owned())
}

/// A key a page asks for: as the view shows keys (a longer one cannot be one of them).
fn key_param(hub: &ViewHub, uri: &Uri, name: &str) -> Option<String> {
    let max = hub.cfg.max_id_bytes + 32;
    param(uri, name, max * 4)
        .filter(|k| !k.is_empty())
        .map(|k| display_key(&k, max).into_owned())
}

/// `?q=&offset=&limit=`: a page of the streams table.
async fn series_page(State(hub): State<Arc<ViewHub>>, uri: Uri) -> Response {
    let q = param(&uri, "q", hub.cfg.max_id_bytes).unwrap_or_default();
    let num = |n: &str, d: usize| param(&uri, n, 12).and_then(|v| v.parse().ok()).unwrap_or(d);
    json(hub.state().page(&q, num("offset", 0), num("limit", 50)))
}

/// `?key=`: one series, its strip and its latest drawing.
async fn one_series(State(hub): State<Arc<ViewHub>>, uri: Uri) -> Response {
    match key_param(&hub, &uri, "key") {
        Some(k) => json(hub.state().one(&k)),
        None => (StatusCode::BAD_REQUEST, "key=<series id> expected").into_response(),
    }
}

/// `?series=`: the page's events, its series' drawings among them (it is watched while
/// the page is open).
async fn events(State(hub): State<Arc<ViewHub>>, uri: Uri) -> Response {
    let key = key_param(&hub, &uri, "series");
    let Some((mut seat, rx)) = hub.events.join() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "too many live-view pages open (view.max_clients)",
        )
            .into_response();
    };
    if let Some(k) = &key {
        let watched = hub.state().watch(k);
        hub.feed.set_watched(watched);
        let (hub, k) = (hub.clone(), k.clone());
        seat.on_close(move || {
            let watched = hub.state().unwatch(&k);
            hub.feed.set_watched(watched);
        });
    }
    let first = hub.first_events(key.as_deref());
    Sse::new(page_stream(seat, rx, first, key))
        .keep_alive(KeepAlive::default())
        .into_response()
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use crate::config::ViewConfig;
    use crate::http::{serve_with, Health};
    use crate::metrics::Metrics;
    use crate::stream::view::ViewHub;

    /// The first `n` bytes (or all, at EOF) of `GET path`.
    async fn get(addr: SocketAddr, path: &str, n: usize) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while out.len() < n {
            match tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf)).await {
                Ok(Ok(0)) | Err(_) => break,
                Ok(Ok(k)) => out.extend_from_slice(&buf[..k]),
                Ok(Err(e)) => panic!("{e}"),
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    /// The page, its script and the API answer beside /metrics; the event stream starts with
    /// the summary; pages past `view.max_clients` get 503.
    #[tokio::test]
    async fn the_view_is_served_beside_the_metrics() {
        let (metrics, health) = (Metrics::new(), std::sync::Arc::new(Health::default()));
        let (_stop, stop) = tokio::sync::watch::channel(false);
        let cfg = ViewConfig {
            max_clients: 1,
            ..ViewConfig::default()
        };
        let hub = ViewHub::start(&cfg, metrics.clone(), health.clone(), stop);
        let routes = super::router(hub);
        let pending = std::future::pending();
        let (addr, _) = serve_with("127.0.0.1:0", metrics, health, routes, pending)
            .await
            .unwrap();
        let page = get(addr, "/", usize::MAX).await;
        assert!(
            page.starts_with("HTTP/1.1 200") && page.contains("/view/app.js"),
            "{page}"
        );
        assert!(get(addr, "/view/app.js", usize::MAX)
            .await
            .contains("EventSource"));
        let api = get(addr, "/view/api/series?q=x&limit=5", usize::MAX).await;
        assert!(api.contains("\"matched\":0"), "{api}");
        assert!(get(addr, "/metrics", usize::MAX)
            .await
            .starts_with("HTTP/1.1 200"));
        // One page open (its stream stays open while we read it) ...
        let mut first = TcpStream::connect(addr).await.unwrap();
        let req = "GET /view/events?series=a HTTP/1.1\r\nHost: x\r\n\r\n";
        first.write_all(req.as_bytes()).await.unwrap();
        let mut buf = vec![0u8; 4096];
        let mut got = String::new();
        while !got.contains("event: summary") {
            let k = tokio::time::timeout(Duration::from_secs(10), first.read(&mut buf))
                .await
                .expect("the summary in time")
                .unwrap();
            assert!(k > 0, "the stream closed: {got}");
            got.push_str(&String::from_utf8_lossy(&buf[..k]));
        }
        // ... is all `max_clients` allows.
        let second = get(addr, "/view/events", 200).await;
        assert!(second.starts_with("HTTP/1.1 503"), "{second}");
    }
}
