//! The repository's structure stays as documented: the crates depend on one another only
//! in the documented direction (core <- daemon, core <- tools, all <- the command line), so
//! the compiler refuses a wrong arrow; docs/ARCHITECTURE.md names every file of the
//! daemon's `stream/`, the stream files import one another without a circle, the learning core's files name nothing outside the core
//! and form no circle, no function grows past 120 lines (those that predate the rule may
//! only shrink), and the dev-dependencies turn on no feature the build lacks (so the
//! test command's build reuses the library and its dependencies instead of compiling
//! them twice).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The daemon's stages.
const STREAM: &str = "crates/milstream-daemon/src/stream";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The module path of a file under `dir` (`ingest/record/bounds.rs` -> [ingest, record,
/// bounds]; a folder's `mod.rs` is the folder's module).
fn module_path(dir: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(dir).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The files of the daemon's `stream/` that docs/ARCHITECTURE.md's Layout tree names: under a
/// `crates/milstream-daemon/src/stream/<folder>/` line, each indented line's first word ending in `.rs`.
fn layout_tree_files(arch: &str) -> BTreeSet<String> {
    let start = arch
        .find("\n## Layout")
        .expect("ARCHITECTURE has a Layout section");
    let tree = &arch[start..];
    let tree = &tree[tree.find("```").unwrap() + 3..];
    let tree = &tree[..tree.find("```").unwrap()];
    let mut folder: Option<String> = None;
    let mut out = BTreeSet::new();
    for line in tree.lines() {
        if let Some(rest) = line.strip_prefix("crates/milstream-daemon/src/stream/") {
            folder = Some(rest[..rest.find(' ').unwrap_or(rest.len())].to_string());
        } else if !line.starts_with(' ') {
            folder = None;
        } else if let Some(f) = &folder {
            let word = line.split_whitespace().next().unwrap_or("");
            if word.ends_with(".rs") {
                out.insert(format!("{f}{word}"));
            }
        }
    }
    out
}

#[test]
fn architecture_names_every_stream_file() {
    let dir = root().join(STREAM);
    let files: BTreeSet<String> = rust_files(&dir)
        .iter()
        .map(|f| f.strip_prefix(&dir).unwrap().to_string_lossy().into_owned())
        .collect();
    let named = layout_tree_files(&read(&root().join("docs/ARCHITECTURE.md")));
    let missing: Vec<_> = files.difference(&named).collect();
    let stale: Vec<_> = named.difference(&files).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "docs/ARCHITECTURE.md's Layout and {STREAM} differ: not in the doc {missing:?}, \
         not in {STREAM} {stale:?}"
    );
}

/// The first segment of each item of a `{a, b::c}` group (`group` starts after its `{`).
fn group_items(group: &str) -> Vec<String> {
    let (mut depth, mut item_start, mut items) = (0, true, Vec::new());
    for (j, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if item_start && (c.is_alphanumeric() || c == '_') => {
                item_start = false;
                let end = group[j..]
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .map_or(group.len(), |e| j + e);
                items.push(group[j..end].to_string());
            }
            _ => {}
        }
    }
    items
}

/// The module paths named after `prefix` in `code`: `prefix a::b::C` -> [a, b, C], and
/// `prefix a::{b::c, d}` -> [a, b, c] and [a, d] (items of a group by their first segments).
fn paths_after(code: &str, prefix: &str) -> BTreeSet<Vec<String>> {
    let ident = |t: &str| {
        t.find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(t.len())
    };
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        rest = &rest[i + prefix.len()..];
        let mut path = Vec::new();
        let mut t = rest;
        loop {
            let n = ident(t);
            if n == 0 {
                break;
            }
            path.push(t[..n].to_string());
            match t[n..].strip_prefix("::") {
                Some(next) => t = next,
                None => break,
            }
        }
        if let Some(group) = t.strip_prefix('{') {
            for item in group_items(group) {
                let mut p = path.clone();
                p.push(item);
                out.insert(p);
            }
        } else if !path.is_empty() {
            out.insert(path);
        }
    }
    out
}

/// A file's code without its `#[cfg(test)]` module and without comments.
fn non_test_code(text: &str) -> String {
    let code = match text.find("\n#[cfg(test)]\nmod ") {
        Some(i) => &text[..i],
        None => text,
    };
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules a file refers to through `super::` and `crate::stream::`, as absolute module
/// paths under the daemon's stream/ (`super::` resolved against the file's own module path).
fn stream_references(code: &str, own: &[String]) -> BTreeSet<Vec<String>> {
    // In `x.rs` (and a folder's `mod.rs`) `super` is the module holding x.
    let parent: Vec<String> = own[..own.len().saturating_sub(1)].to_vec();
    let mut out = BTreeSet::new();
    out.extend(paths_after(code, "crate::stream::"));
    for rel in paths_after(code, "super::") {
        if rel.first().is_some_and(|s| s == "super") {
            continue;
        }
        let mut path = parent.clone();
        path.extend(rel);
        out.insert(path);
    }
    out
}

#[test]
fn stream_files_import_no_cli_and_no_circle() {
    let dir = root().join(STREAM);
    let files = rust_files(&dir);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(&dir, f)).collect();
    // Per file, the files it reaches (`[]` is src/stream/mod.rs).
    let mut reaches: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for file in &files {
        let code = non_test_code(&read(file));
        for bad in [
            "crate::cli",
            "cli::",
            "main.rs",
            "crate::figure",
            "figure::",
        ] {
            assert!(
                !code.contains(bad),
                "{} refers to the command line or the plotting ({bad})",
                file.display()
            );
        }
        let own = module_path(&dir, file);
        for r in stream_references(&code, &own) {
            // The longest module the reference names (an item of a module names the module).
            let target = (1..=r.len())
                .rev()
                .map(|n| r[..n].to_vec())
                .find(|p| modules.contains(p))
                .unwrap_or_default();
            reaches.entry(own.clone()).or_default().insert(target);
        }
    }
    let files_edges: BTreeMap<String, BTreeSet<String>> = reaches
        .iter()
        .map(|(from, to)| {
            let to = to
                .iter()
                .filter(|t| *t != from)
                .map(|t| t.join("/"))
                .collect();
            (from.join("/"), to)
        })
        .collect();
    assert_no_circle(&files_edges, STREAM);
    // The trainer and the models topic reach the pipeline only through `score/serving`.
    let pipeline = |p: &Vec<String>| {
        let p: Vec<&str> = p.iter().map(String::as_str).collect();
        matches!(
            p.as_slice(),
            [] | ["pipeline"]
                | ["ingest", ..]
                | ["score", "worker", ..]
                | ["output", "writer"]
                | ["join", "labels"]
        )
    };
    for side in [["lifecycle", "trainer"], ["lifecycle", "models_topic"]] {
        let side: Vec<String> = side.iter().map(|s| s.to_string()).collect();
        let reached: Vec<_> = reaches
            .get(&side)
            .into_iter()
            .flatten()
            .filter(|t| pipeline(t))
            .collect();
        assert!(
            reached.is_empty(),
            "{side:?} imports the pipeline: {reached:?}"
        );
    }
}

/// The functions of a file's non-test code longer than `limit` lines: (name, first line,
/// lines). A function runs from its `fn` line to the closing brace at its indentation.
fn long_functions(text: &str, limit: usize) -> Vec<(String, usize, usize)> {
    let code = match text.find("\n#[cfg(test)]\nmod ") {
        Some(i) => &text[..i],
        None => text,
    };
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let indent = &line[..line.len() - line.trim_start().len()];
        let rest = line.trim_start();
        let rest = rest
            .strip_prefix("pub(crate) ")
            .or_else(|| rest.strip_prefix("pub(super) "))
            .or_else(|| rest.strip_prefix("pub "))
            .unwrap_or(rest);
        let rest = rest.strip_prefix("async ").unwrap_or(rest);
        let Some(sig) = rest.strip_prefix("fn ") else {
            i += 1;
            continue;
        };
        let name: String = sig
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // The body opens on the signature's last line; a declaration without a body ends in `;`.
        let Some(open) = (i..lines.len()).find(|&k| {
            let t = lines[k].trim_end();
            t.ends_with('{') || t.ends_with(';')
        }) else {
            break;
        };
        if lines[open].trim_end().ends_with(';') {
            i = open + 1;
            continue;
        }
        let close = (open + 1..lines.len())
            .find(|&k| lines[k] == format!("{indent}}}"))
            .unwrap_or(lines.len() - 1);
        let n = close - i + 1;
        if n > limit {
            out.push((name, i + 1, n));
        }
        i = close + 1;
    }
    out
}

/// Functions a reader can hold in mind: none over 120 lines, except the ones below, which
/// predate the rule and may only shrink (split one, and take it off the list). A file is
/// one responsibility: split by meaning, never by a line count (no cap on files).
const LONG_FUNCTIONS: &[(&str, &str, usize)] = &[
    // The simplex's pivot loop: pricing, ratio test and update read as one algorithm.
    (
        "crates/milstream-core/src/mil/lp/simplex.rs",
        "iterate",
        198,
    ),
    // A flat list of independent checks, one per key.
    ("crates/milstream-daemon/src/config.rs", "validate", 152),
    // The factorisation kernel, one loop nest.
    (
        "crates/milstream-core/src/mil/lp/basis_inverse.rs",
        "factor_portable",
        141,
    ),
    // A flat list of independent checks, one per field.
    ("crates/milstream-core/src/mil/shapelet.rs", "validate", 137),
];

#[test]
fn no_function_grows_past_120_lines() {
    let mut files = rust_files(&root().join("src"));
    files.extend(rust_files(&root().join("crates")));
    let mut over = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        for (name, line, n) in long_functions(&read(f), 120) {
            let allowed = LONG_FUNCTIONS
                .iter()
                .find(|(file, fun, _)| *file == rel && *fun == name)
                .map(|l| l.2);
            if allowed.is_none_or(|max| n > max) {
                over.push(format!(
                    "{rel}:{line} {name} ({n} lines, allowed {allowed:?})"
                ));
            }
        }
    }
    assert!(
        over.is_empty(),
        "split these by what they do (or say in a comment why one piece reads best): {over:?}"
    );
    // The list shrinks as functions are split: an entry that no longer applies goes.
    let stale: Vec<_> = LONG_FUNCTIONS
        .iter()
        .filter(|(file, fun, _)| {
            !long_functions(&read(&root().join(file)), 120)
                .iter()
                .any(|(n, _, _)| n == fun)
        })
        .collect();
    assert!(
        stale.is_empty(),
        "no longer long, take off LONG_FUNCTIONS: {stale:?}"
    );
}

/// The learning core is pure: its crate (crates/milstream-core) cannot name the daemon, and
/// no file of its `mil/` refers to anything outside the core (the dataset readers and drift
/// detectors beside it are the core too), and its files form no import circle (model.rs wraps the kinds; the types they share live in params.rs and
/// prediction.rs).
#[test]
fn the_learning_core_imports_nothing_outside_it_and_has_no_circle() {
    let dir = root().join("crates/milstream-core/src/mil");
    let files = rust_files(&dir);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(&dir, f)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let code = non_test_code(&read(file));
        let own = module_path(&dir, file);
        for (i, _) in code.match_indices("crate::") {
            assert!(
                ["crate::mil::", "crate::data::", "crate::drift::"]
                    .iter()
                    .any(|p| code[i..].starts_with(p)),
                "{} refers outside the learning core: {}",
                file.display(),
                code[i..].lines().next().unwrap_or_default()
            );
        }
        let parent = own[..own.len().saturating_sub(1)].to_vec();
        let mut refs = paths_after(&code, "crate::mil::");
        for rel in paths_after(&code, "super::") {
            if rel.first().is_some_and(|s| s != "super") {
                refs.insert(parent.iter().cloned().chain(rel).collect());
            }
        }
        for r in refs {
            let target = (1..=r.len())
                .rev()
                .map(|n| r[..n].to_vec())
                .find(|p| modules.contains(p));
            if let Some(t) = target.filter(|t| !t.is_empty() && *t != own) {
                edges.entry(own.join("/")).or_default().insert(t.join("/"));
            }
        }
    }
    assert_no_circle(&edges, "crates/milstream-core/src/mil");
    assert!(edges.contains_key("shapelet") && !edges["shapelet"].contains("model"));
}

/// The milstream crates a crate's manifest depends on (normal dependencies only).
fn milstream_dependencies(manifest: &str) -> BTreeSet<String> {
    let text = read(&root().join(manifest));
    let deps = &text[text
        .find("\n[dependencies]")
        .expect("a [dependencies] table")..];
    let deps = &deps[..deps[1..].find("\n[").map_or(deps.len(), |i| i + 1)];
    deps.lines()
        .filter_map(|l| l.split(['=', ' ']).next())
        .filter(|name| name.starts_with("milstream"))
        .map(str::to_string)
        .collect()
}

/// The layering is the crates': the core depends on no other milstream crate, the daemon
/// and the tools only on the core (so the daemon cannot reach the plotting, nor the tools
/// the daemon), the Python package on the core and the tools, never on the daemon (its
/// build compiles no Kafka client).
#[test]
fn crate_arrows_go_one_way() {
    let expect = |manifest: &str, names: &[&str]| {
        let got = milstream_dependencies(manifest);
        let want: BTreeSet<String> = names.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            got, want,
            "{manifest} depends on other milstream crates than documented"
        );
    };
    expect("crates/milstream-core/Cargo.toml", &[]);
    expect("crates/milstream-daemon/Cargo.toml", &["milstream-core"]);
    expect("crates/milstream-tools/Cargo.toml", &["milstream-core"]);
    expect("python/Cargo.toml", &["milstream-core", "milstream-tools"]);
    expect(
        "Cargo.toml",
        &["milstream-core", "milstream-daemon", "milstream-tools"],
    );
    for manifest in [
        "crates/milstream-core/Cargo.toml",
        "crates/milstream-daemon/Cargo.toml",
    ] {
        let text = read(&root().join(manifest));
        assert!(
            !text.contains("plotters"),
            "{manifest} depends on the plotting"
        );
    }
}

/// Depth-first search for a back edge among the files of `dir` (edges: file -> files it
/// imports); panics naming the circle.
fn assert_no_circle(edges: &BTreeMap<String, BTreeSet<String>>, dir: &str) {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        dir: &str,
    ) {
        if done.contains(n) {
            return;
        }
        if let Some(i) = path.iter().position(|p| p == n) {
            panic!(
                "import circle among {dir} files: {} -> {n}",
                path[i..].join(" -> ")
            );
        }
        path.push(n.to_string());
        for next in edges.get(n).into_iter().flatten() {
            visit(next, edges, path, done, dir);
        }
        path.pop();
        done.insert(n.to_string());
    }
    let mut done = BTreeSet::new();
    for n in edges.keys() {
        visit(n, edges, &mut Vec::new(), &mut done, dir);
    }
}

/// `cargo tree` of the root package as `name version features` lines, each package once.
fn feature_tree(edges: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .current_dir(root())
        .args([
            "tree",
            "--offline",
            "-p",
            "milstream",
            "--prefix",
            "none",
            "-f",
            "{p} {f}",
            "-e",
            edges,
        ])
        .output()
        .expect("running cargo tree");
    assert!(
        out.status.success(),
        "cargo tree -e {edges}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim_end_matches(" (*)").to_string())
        .collect()
}

/// A feature that only a dev-dependency turns on changes that crate's build, and with it
/// every crate above it: `cargo test` would compile the library and most of its tree a
/// second time (what made CI's cold build long). Cargo.toml's unification list fixes it.
#[test]
fn dev_dependencies_turn_on_no_feature_the_build_lacks() {
    let build = feature_tree("normal,build");
    let test = feature_tree("normal,build,dev");
    let parted: Vec<&String> = build.iter().filter(|l| !test.contains(*l)).collect();
    assert!(
        parted.is_empty(),
        "these build dependencies get other features under cargo test (add the test's \
         features to Cargo.toml's unification list): {parted:#?}\nunder test: {:#?}",
        parted
            .iter()
            .filter_map(|l| l.split(' ').next())
            .flat_map(|name| test
                .iter()
                .filter(move |t| t.split(' ').next() == Some(name)))
            .collect::<Vec<_>>()
    );
}
