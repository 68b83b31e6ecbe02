//! The page's files, built into the binary: no CDN and no build step, so the view works
//! offline and is the same file in every copy of a version.

/// The page (`/`).
pub const INDEX_HTML: &str = include_str!("page/index.html");
/// Its script: plain JavaScript, SVG drawn by hand.
pub const APP_JS: &str = include_str!("page/app.js");
pub const STYLE_CSS: &str = include_str!("page/style.css");
