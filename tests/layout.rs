//! The repository's structure stays as documented: docs/ARCHITECTURE.md names every file of
//! `src/stream/`, the stream modules import one another without a circle and never the
//! command line, no source file grows past about 800 lines of
//! non-test code, and the dev-dependencies turn on no feature the build lacks (so the
//! test command's build reuses the library and its dependencies instead of compiling
//! them twice).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The stream modules: `src/stream/*.rs` by stem, and `sink` for the `sink/` folder.
fn stream_modules() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(root().join("src/stream")).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            out.insert(path.file_name().unwrap().to_string_lossy().into_owned());
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.insert(path.file_stem().unwrap().to_string_lossy().into_owned());
        }
    }
    out.remove("mod");
    out
}

/// docs/ARCHITECTURE.md is the reference for the structure (README points to it and no
/// longer lists files): it names every module of `src/stream/`.
#[test]
fn architecture_names_every_stream_file() {
    let files = stream_modules();
    let arch = read(&root().join("docs/ARCHITECTURE.md"));
    let missing: Vec<_> = files
        .iter()
        .filter(|m| !arch.contains(&format!("{m}.rs")) && !arch.contains(&format!("{m}/")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md does not name {missing:?}"
    );
}

/// The first path segment of each item of `use` paths and expressions after `prefix`
/// (`super::a::b`, `super::{a, b::c}`).
fn referenced_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        rest = &rest[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
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
            out.extend(items);
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            out.insert(rest[..end].to_string());
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

#[test]
fn stream_modules_import_no_cli_and_no_circle() {
    let modules = stream_modules();
    let dir = root().join("src/stream");
    // Edges between stream modules (`mod` stands for src/stream/mod.rs).
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut sources: Vec<(String, PathBuf)> = vec![("mod".into(), dir.join("mod.rs"))];
    for m in &modules {
        let file = dir.join(format!("{m}.rs"));
        if file.exists() {
            sources.push((m.clone(), file));
        } else {
            for e in std::fs::read_dir(dir.join(m)).unwrap() {
                sources.push((m.clone(), e.unwrap().path()));
            }
        }
    }
    for (m, file) in &sources {
        let code = non_test_code(&read(file));
        for bad in ["crate::cli", "cli::", "main.rs"] {
            assert!(
                !code.contains(bad),
                "{} refers to the command line ({bad})",
                file.display()
            );
        }
        // `super::` in src/stream/x.rs and sink/mod.rs is the stream module; in sink/x.rs
        // it is sink.
        let super_is_sink = file.parent() != Some(dir.as_path()) && !file.ends_with("mod.rs");
        let mut refs = referenced_after(&code, "crate::stream::");
        if !super_is_sink {
            refs.extend(referenced_after(&code, "super::"));
        }
        if m == "mod" {
            for line in code.lines() {
                let line = line.trim_start();
                let path = line
                    .strip_prefix("pub use ")
                    .or_else(|| line.strip_prefix("use "));
                if let Some(p) = path {
                    refs.extend(
                        modules
                            .iter()
                            .filter(|n| p.starts_with(&format!("{n}::")))
                            .cloned(),
                    );
                }
            }
        }
        for r in refs {
            let target = if modules.contains(&r) {
                r
            } else {
                "mod".into()
            };
            if &target != m {
                edges.entry(m.clone()).or_default().insert(target);
            }
        }
    }
    assert_no_circle(&edges, "src/stream");
    // The trainer and the models topic reach the pipeline only through `serving`.
    for side in ["trainer", "models_topic"] {
        let reached: Vec<_> = edges[side]
            .iter()
            .filter(|t| {
                [
                    "pipeline",
                    "worker",
                    "consumer",
                    "assignment",
                    "writer",
                    "labels",
                    "mod",
                ]
                .contains(&t.as_str())
            })
            .collect();
        assert!(
            reached.is_empty(),
            "{side} imports the pipeline: {reached:?}"
        );
    }
}

#[test]
fn no_source_file_has_more_than_800_lines_of_non_test_code() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&root().join("src"), &mut files);
    let over: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = read(f);
            let lines = match text.find("\n#[cfg(test)]\nmod ") {
                Some(i) => text[..i].lines().count(),
                None => text.lines().count(),
            };
            let name = f
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (lines > 800).then(|| format!("{name} ({lines} lines)"))
        })
        .collect();
    assert!(over.is_empty(), "split these: {over:?}");
}

/// The learning core is pure: no file of src/mil refers to anything outside it (not the
/// daemon, the command line or the crate's other modules), and its files form no import
/// circle (model.rs wraps the kinds; the types they share live in params.rs and
/// prediction.rs).
#[test]
fn the_learning_core_imports_nothing_outside_it_and_has_no_circle() {
    let dir = root().join("src/mil");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for m in names.iter().filter(|m| *m != "mod") {
        let code = non_test_code(&read(&dir.join(format!("{m}.rs"))));
        for (i, _) in code.match_indices("crate::") {
            assert!(
                code[i..].starts_with("crate::mil::"),
                "src/mil/{m}.rs refers outside the learning core: {}",
                code[i..].lines().next().unwrap_or_default()
            );
        }
        let mut refs = referenced_after(&code, "super::");
        refs.extend(referenced_after(&code, "crate::mil::"));
        for r in refs {
            if names.contains(&r) && r != *m && r != "mod" {
                edges.entry(m.clone()).or_default().insert(r);
            }
        }
    }
    assert_no_circle(&edges, "src/mil");
    assert!(edges.contains_key("shapelet") && !edges["shapelet"].contains("model"));
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
