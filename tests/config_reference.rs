//! docs/CONFIGURATION.md is generated from the configuration structs, so it cannot drift
//! from the code: every key of the daemon's TOML file, its type, its default and its doc
//! comment (STYLE.md: "its config struct with doc comments is its documentation").
//!
//! How: the sources under `src/` are parsed with `syn` (the doc comments exist only there),
//! and the walk starts at `Config` and follows each field's type by name to the struct or
//! enum that defines it, wherever it lives under `src/` or `crates/*/src/`: moving a file
//! changes nothing here.
//! Defaults are not read from the source but from the program: `Config::default()`
//! serialized to TOML (the structs derive `Serialize`; secrets serialize redacted), and for
//! a `[[models]]` entry the entry a minimal file parses to. The two sources are checked
//! against each other: a serialized key the walk missed, or a walked key with no default,
//! fails. So do a key without a doc comment, a key of `deploy/milstream.example.toml` the
//! reference lacks, and a committed docs/CONFIGURATION.md that differs from the generated
//! text. To rewrite it:
//!
//! ```sh
//! MILSTREAM_BLESS=1 cargo test --release --test config_reference
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use milstream::config::Config;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const OUT: &str = "docs/CONFIGURATION.md";

/// A field of a config struct as the source has it.
struct Field {
    /// Its TOML key (`#[serde(rename)]` applied).
    key: String,
    ty: syn::Type,
    doc: String,
    /// `#[serde(default)]` on the field.
    default: bool,
}

enum Def {
    /// A struct with named fields; `default`: `#[serde(default)]` on the struct.
    Struct { fields: Vec<Field>, default: bool },
    /// A newtype, e.g. `#[serde(transparent)] struct StoreOptions(BTreeMap<..>)`.
    Newtype(syn::Type),
    /// An enum of unit variants: its TOML names and their docs.
    Enum(Vec<(String, String)>),
}

/// Every type under `src/` and `crates/*/src/` that derives `Deserialize`, by name, with the
/// files defining it.
fn definitions() -> BTreeMap<String, Vec<(PathBuf, Def)>> {
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
    fn collect(file: &Path, items: &[syn::Item], out: &mut BTreeMap<String, Vec<(PathBuf, Def)>>) {
        for item in items {
            match item {
                syn::Item::Struct(s) if derives_deserialize(&s.attrs) => {
                    let def = match &s.fields {
                        syn::Fields::Named(named) => {
                            let rename_all = serde_arg(&s.attrs, "rename_all");
                            let fields = named
                                .named
                                .iter()
                                .filter(|f| !serde_flag(&f.attrs, "skip"))
                                .map(|f| {
                                    assert!(
                                        !serde_flag(&f.attrs, "flatten"),
                                        "{}: #[serde(flatten)] is not supported here",
                                        s.ident
                                    );
                                    let name = f.ident.as_ref().unwrap().to_string();
                                    Field {
                                        key: serde_arg(&f.attrs, "rename").unwrap_or_else(|| {
                                            renamed(&name, rename_all.as_deref(), false)
                                        }),
                                        ty: f.ty.clone(),
                                        doc: doc(&f.attrs),
                                        default: serde_flag(&f.attrs, "default"),
                                    }
                                })
                                .collect();
                            Def::Struct {
                                fields,
                                default: serde_flag(&s.attrs, "default"),
                            }
                        }
                        syn::Fields::Unnamed(u) if u.unnamed.len() == 1 => {
                            Def::Newtype(u.unnamed[0].ty.clone())
                        }
                        _ => continue,
                    };
                    out.entry(s.ident.to_string())
                        .or_default()
                        .push((file.to_path_buf(), def));
                }
                syn::Item::Enum(e) if derives_deserialize(&e.attrs) => {
                    let rename_all = serde_arg(&e.attrs, "rename_all");
                    let variants = e
                        .variants
                        .iter()
                        .filter(|v| matches!(v.fields, syn::Fields::Unit))
                        .map(|v| {
                            let name = serde_arg(&v.attrs, "rename").unwrap_or_else(|| {
                                renamed(&v.ident.to_string(), rename_all.as_deref(), true)
                            });
                            (name, doc(&v.attrs))
                        })
                        .collect();
                    out.entry(e.ident.to_string())
                        .or_default()
                        .push((file.to_path_buf(), Def::Enum(variants)));
                }
                syn::Item::Mod(m) => {
                    let test_only = m.attrs.iter().any(|a| {
                        a.path().is_ident("cfg") && a.meta.to_token_stream_string().contains("test")
                    });
                    if let (Some((_, inner)), false) = (&m.content, test_only) {
                        collect(file, inner, out);
                    }
                }
                _ => {}
            }
        }
    }
    // The daemon's sources and the workspace's crates (the learning core's types, such as
    // the model kind and the detectors' parameters, may live in a crate of their own).
    let mut files = Vec::new();
    walk(&root().join("src"), &mut files);
    if let Ok(crates) = std::fs::read_dir(root().join("crates")) {
        for c in crates {
            let src = c.unwrap().path().join("src");
            if src.is_dir() {
                walk(&src, &mut files);
            }
        }
    }
    files.sort();
    let mut out = BTreeMap::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        collect(&f, &parsed.items, &mut out);
    }
    out
}

trait TokenString {
    fn to_token_stream_string(&self) -> String;
}

impl TokenString for syn::Meta {
    fn to_token_stream_string(&self) -> String {
        match self {
            syn::Meta::List(l) => l.tokens.to_string(),
            _ => String::new(),
        }
    }
}

fn derives_deserialize(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("derive") && a.meta.to_token_stream_string().contains("Deserialize")
    })
}

/// The `#[serde(...)]` arguments of `attrs`, as (name, string value) pairs.
fn serde_args(attrs: &[syn::Attribute]) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for a in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        a.parse_nested_meta(|m| {
            let name = m
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            let value = if m.input.peek(syn::Token![=]) {
                let lit: syn::LitStr = m.value()?.parse()?;
                Some(lit.value())
            } else {
                None
            };
            out.push((name, value));
            Ok(())
        })
        .unwrap_or_else(|e| panic!("#[serde(..)] not understood: {e}"));
    }
    out
}

fn serde_flag(attrs: &[syn::Attribute], name: &str) -> bool {
    serde_args(attrs).iter().any(|(n, _)| n == name)
}

fn serde_arg(attrs: &[syn::Attribute], name: &str) -> Option<String> {
    serde_args(attrs)
        .into_iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, v)| v)
}

/// A field or variant name under `#[serde(rename_all = ..)]`.
fn renamed(name: &str, rule: Option<&str>, variant: bool) -> String {
    let snake = || {
        let mut s = String::new();
        for (i, c) in name.chars().enumerate() {
            if c.is_uppercase() && i > 0 {
                s.push('_');
            }
            s.extend(c.to_lowercase());
        }
        s
    };
    match rule {
        None => name.to_string(),
        Some("lowercase") => name.to_lowercase(),
        Some("snake_case") if variant => snake(),
        Some("kebab-case") if variant => snake().replace('_', "-"),
        Some("snake_case") => name.to_string(),
        Some(other) => panic!("rename_all = {other:?} is not supported here"),
    }
}

/// The doc comment, as one line of Markdown fit for a table cell.
fn doc(attrs: &[syn::Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value().trim().to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    lines
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        // Intra-doc links read as code.
        .replace("[`", "`")
        .replace("`]", "`")
        .replace('|', "\\|")
}

/// The last path segment of a type and its generic arguments.
fn segment(ty: &syn::Type) -> (String, Vec<syn::Type>) {
    let syn::Type::Path(p) = ty else {
        panic!("unsupported type {}", quote_type(ty))
    };
    let last = p.path.segments.last().unwrap();
    let args = match &last.arguments {
        syn::PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                syn::GenericArgument::Type(t) => Some(t.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    (last.ident.to_string(), args)
}

fn quote_type(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect::<Vec<_>>()
            .join("::"),
        _ => "a non-path type".into(),
    }
}

/// What a field is in the TOML file.
enum Kind {
    /// A value: its type as the reference writes it, and the variants of an enum.
    Value {
        ty: String,
        variants: Vec<(String, String)>,
    },
    /// A table of the named struct (`[kafka]`).
    Table(String),
    /// An array of tables of the named struct (`[[models]]`).
    Tables(String),
    /// A table of free keys (`[kafka.properties]`): the type of its values.
    Map(String),
}

struct Walker {
    defs: BTreeMap<String, Vec<(PathBuf, Def)>>,
}

impl Walker {
    fn def(&self, name: &str) -> Option<&Def> {
        let found = self.defs.get(name)?;
        assert!(
            found.len() == 1,
            "config type {name} is defined {} times under src/ ({:?}): give it a name of its own",
            found.len(),
            found.iter().map(|(f, _)| f).collect::<Vec<_>>()
        );
        Some(&found[0].1)
    }

    fn kind(&self, ty: &syn::Type) -> (Kind, bool) {
        let (name, args) = segment(ty);
        let value = |t: &str| Kind::Value {
            ty: t.into(),
            variants: Vec::new(),
        };
        let kind = match name.as_str() {
            "Option" => return (self.kind(&args[0]).0, true),
            "String" => value("string"),
            "PathBuf" => value("path"),
            "bool" => value("boolean"),
            "usize" | "u64" | "u32" | "u16" | "u8" | "i64" | "i32" => value("integer"),
            "f64" | "f32" => value("float"),
            "Table" => Kind::Map("any TOML value (see above)".into()),
            "BTreeMap" | "HashMap" => match self.kind(&args[1]).0 {
                Kind::Value { ty, .. } => Kind::Map(ty),
                _ => panic!("a map of tables is not supported here"),
            },
            "Vec" => match self.kind(&args[0]).0 {
                Kind::Table(t) => Kind::Tables(t),
                Kind::Value { ty, .. } => value(&format!("array of {ty}")),
                _ => panic!("an array of maps is not supported here"),
            },
            other => match self.def(other) {
                Some(Def::Struct { .. }) => Kind::Table(other.into()),
                Some(Def::Newtype(inner)) => return self.kind(inner),
                Some(Def::Enum(variants)) => Kind::Value {
                    ty: "string".into(),
                    variants: variants.clone(),
                },
                None => panic!(
                    "type {other} of a config field: not a known scalar, and no struct or enum \
                     of that name derives Deserialize under src/ or crates/"
                ),
            },
        };
        (kind, false)
    }
}

/// One section of the reference: a TOML table.
struct Section {
    /// `kafka`, `drift.adwin`, `models` (an array of tables), `kafka.properties` (free keys).
    path: String,
    header: String,
    doc: String,
    rows: Vec<[String; 4]>,
    /// For a table of free keys: the type of its values and its default.
    free: Option<String>,
}

/// Where to read defaults: a serialized default value, or (`[[models]]`) required keys.
struct Defaults<'a> {
    value: Option<&'a toml::Value>,
}

fn render_value(key: &str, v: &toml::Value) -> String {
    let text = match v {
        toml::Value::Table(t) if t.is_empty() => return "empty".into(),
        toml::Value::Array(a) if a.is_empty() => return "none".into(),
        toml::Value::String(s) if s.is_empty() => return "`\"\"`".into(),
        other => other.to_string(),
    };
    let mut out = format!("`{text}`");
    // Sizes and durations also in their unit, as the prose gives them.
    let units: &[(i64, &str)] = if key.ends_with("_bytes") {
        &[(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
    } else if key.ends_with("_ms") {
        &[(3_600_000, "h"), (60_000, "min"), (1_000, "s")]
    } else {
        &[]
    };
    if let toml::Value::Integer(n) = v {
        if let Some((size, unit)) = units.iter().find(|(s, _)| n % s == 0 && n >= s) {
            out.push_str(&format!(" ({} {unit})", n / size));
        }
    }
    out
}

/// A table below the one being walked, walked after its keys.
enum Below<'a> {
    /// A table of a struct: its type, key path, doc and serialized default.
    Table(String, String, String, Option<&'a toml::Value>),
    /// An array of tables of a struct.
    Tables(String, String, String),
    /// A table of free keys, rendered as it is.
    Free(Section),
}

/// What the walk makes: the sections, and the keys without a doc comment.
#[derive(Default)]
struct Out {
    sections: Vec<Section>,
    missing_docs: Vec<String>,
}

/// Walks struct `name` as the table at `path`, appending its section and those below it.
fn walk(
    w: &Walker,
    name: &str,
    path: &str,
    header: String,
    doc: String,
    defaults: Defaults,
    out: &mut Out,
) {
    let Some(Def::Struct { fields, default }) = w.def(name) else {
        panic!("{name} is not a struct with named fields")
    };
    let at = out.sections.len();
    out.sections.push(Section {
        path: path.into(),
        header,
        doc,
        rows: Vec::new(),
        free: None,
    });
    let mut below = Vec::new();
    for f in fields {
        let key = if path.is_empty() {
            f.key.clone()
        } else {
            format!("{path}.{}", f.key)
        };
        if f.doc.is_empty() {
            out.missing_docs.push(format!("{key} ({name}.{})", f.key));
        }
        let (kind, optional) = w.kind(&f.ty);
        let required = !optional && !f.default && !default;
        let value = defaults.value.and_then(|v| v.get(&f.key));
        match kind {
            Kind::Value { ty, variants } => {
                let shown = match (value, required) {
                    (_, true) => "required".into(),
                    (Some(v), false) => render_value(&f.key, v),
                    (None, false) if optional => "unset".into(),
                    (None, false) => {
                        panic!("{key}: no default in the serialized configuration")
                    }
                };
                let ty = if variants.is_empty() {
                    ty
                } else {
                    let names: Vec<String> =
                        variants.iter().map(|(n, _)| format!("`\"{n}\"`")).collect();
                    format!("one of {}", names.join(", "))
                };
                let mut doc = f.doc.clone();
                let told: Vec<String> = variants
                    .iter()
                    .filter(|(_, d)| !d.is_empty())
                    .map(|(n, d)| format!("`\"{n}\"`: {d}"))
                    .collect();
                if !told.is_empty() {
                    doc = format!("{doc} {}", told.join(" "));
                }
                out.sections[at]
                    .rows
                    .push([format!("`{}`", f.key), ty, shown, doc]);
            }
            Kind::Table(t) => below.push(Below::Table(t, key, f.doc.clone(), value)),
            Kind::Tables(t) => below.push(Below::Tables(t, key, f.doc.clone())),
            Kind::Map(values) => {
                if let Some(v) = value {
                    assert!(
                        v.as_table().is_some_and(|t| t.is_empty()),
                        "{key}: a table of free keys is documented as empty by default"
                    );
                }
                let free = if optional {
                    format!("{values}; unset by default")
                } else {
                    format!("{values}; empty by default")
                };
                below.push(Below::Free(Section {
                    header: format!("`[{key}]`"),
                    path: key,
                    doc: f.doc.clone(),
                    rows: Vec::new(),
                    free: Some(free),
                }));
            }
        }
    }
    // The tables below this one, in the order of their fields.
    for b in below {
        match b {
            Below::Free(section) => out.sections.push(section),
            Below::Tables(t, key, doc) => {
                // An entry's defaults: what an entry of only its required keys parses to.
                let entry = entry_value(&key, &required_entry(w, &t));
                let header = format!("`[[{key}]]`");
                walk(
                    w,
                    &t,
                    &key,
                    header,
                    doc,
                    Defaults { value: Some(entry) },
                    out,
                );
            }
            Below::Table(t, key, doc, value) => {
                let header = format!("`[{key}]`");
                walk(w, &t, &key, header, doc, Defaults { value }, out);
            }
        }
    }
}

/// A TOML array-of-tables entry holding only the required (string) keys of struct `name`.
fn required_entry(w: &Walker, name: &str) -> String {
    let Some(Def::Struct { fields, default }) = w.def(name) else {
        panic!("{name} is not a struct")
    };
    let mut text = String::new();
    for f in fields {
        let (kind, optional) = w.kind(&f.ty);
        if !optional && !f.default && !default {
            match kind {
                Kind::Value { ty, .. } if ty == "string" => {
                    text.push_str(&format!("{} = \"x\"\n", f.key))
                }
                _ => panic!(
                    "required key {} of {name}: only strings are supported",
                    f.key
                ),
            }
        }
    }
    text
}

/// The serialized first entry of the array `key` after parsing `[[key]]` + `entry`.
fn entry_value(key: &str, entry: &str) -> &'static toml::Value {
    let text = format!("[[{key}]]\n{entry}");
    let cfg = Config::parse("a minimal entry", &text)
        .unwrap_or_else(|e| panic!("{text}\ndoes not parse: {e}"));
    let value = toml::Value::try_from(&cfg).expect("the configuration serializes");
    let entry = value[key][0].clone();
    Box::leak(Box::new(entry))
}

/// The reference, and the keys without a doc comment.
fn generate() -> (String, Vec<String>, Vec<Section>) {
    let w = Walker {
        defs: definitions(),
    };
    let defaults = toml::Value::try_from(Config::default()).expect("the default serializes");
    let mut out = Out::default();
    walk(
        &w,
        "Config",
        "",
        String::new(),
        String::new(),
        Defaults {
            value: Some(&defaults),
        },
        &mut out,
    );
    let Out {
        mut sections,
        missing_docs: missing,
    } = out;
    assert!(
        sections[0].rows.is_empty(),
        "a top-level key that is not a table: {:?}",
        sections[0].rows
    );
    sections.remove(0);

    let mut md = String::new();
    md.push_str(
        "# Configuration reference\n\n\
         Generated from the doc comments of the configuration structs (`crates/milstream-daemon/src/config.rs`, \
         `crates/milstream-daemon/src/config/`) and from `Config::default()` by `tests/config_reference.rs`; do not \
         edit it by hand. After changing a key, rewrite it with\n\n\
         ```sh\nMILSTREAM_BLESS=1 cargo test --release --test config_reference\n```\n\n\
         `milstream run --config FILE` reads one TOML file. Every key has a default, so an \
         empty file (or none) is the embedded default; an unknown key or a bad value is an \
         error naming its path, and cross-field checks run at start-up. Every string may hold \
         `${VAR}` or `${VAR:-default}`, read from the environment when the daemon loads the \
         file (an unset `${VAR}` is an error naming it). Durations such as `training.every` \
         are written `\"250ms\"`, `\"30s\"`, `\"15m\"`, `\"1h\"`, `\"7d\"`. \
         `deploy/milstream.example.toml` is an annotated example.\n\n",
    );
    for s in &sections {
        md.push_str(&format!("- [{}](#{})\n", s.header, anchor(&s.header)));
    }
    for s in &sections {
        md.push_str(&format!("\n## {}\n\n{}\n", s.header, s.doc));
        if let Some(values) = &s.free {
            md.push_str(&format!("\nFree keys; values: {values}.\n"));
            continue;
        }
        md.push_str("\n| key | type | default | description |\n|---|---|---|---|\n");
        for [k, t, d, doc] in &s.rows {
            md.push_str(&format!("| {k} | {t} | {d} | {doc} |\n"));
        }
    }
    (md, missing, sections)
}

/// GitHub's anchor of a heading.
fn anchor(header: &str) -> String {
    header
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every key path of a TOML value, stopping at the tables of free keys in `free`.
fn key_paths(v: &toml::Value, path: &str, free: &[String], out: &mut Vec<String>) {
    let tables: Vec<&toml::Table> = match v {
        toml::Value::Table(t) => vec![t],
        toml::Value::Array(a) if a.iter().all(|x| x.is_table()) && !a.is_empty() => {
            a.iter().filter_map(|x| x.as_table()).collect()
        }
        _ => return,
    };
    if free.iter().any(|f| f == path) {
        return;
    }
    for t in tables {
        for (k, v) in t {
            let p = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            out.push(p.clone());
            key_paths(v, &p, free, out);
        }
    }
}

/// The key paths the reference documents: each section's rows, the sections themselves.
fn documented(sections: &[Section]) -> Vec<String> {
    let mut out = Vec::new();
    for s in sections {
        out.push(s.path.clone());
        for [k, ..] in &s.rows {
            out.push(format!("{}.{}", s.path, k.trim_matches('`')));
        }
    }
    out
}

#[test]
fn every_key_has_a_doc_comment_and_the_reference_is_current() {
    let (md, missing, _) = generate();
    assert!(
        missing.is_empty(),
        "these configuration keys have no doc comment (the reference is made of them): \
         {missing:#?}"
    );
    let path = root().join(OUT);
    if std::env::var_os("MILSTREAM_BLESS").is_some() {
        std::fs::write(&path, &md).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == md,
        "{OUT} is stale: rewrite it with `MILSTREAM_BLESS=1 cargo test --release --test \
         config_reference` (first differing line: {:?})",
        committed
            .lines()
            .zip(md.lines())
            .find(|(a, b)| a != b)
            .map(|(a, _)| a)
            .or(committed.lines().nth(md.lines().count()))
    );
}

/// The walk over the sources and the serialized defaults agree: every key that
/// `Config::default()` serializes is documented, and so is every key of the annotated
/// example (a key only the example had would be a key the reference missed).
#[test]
fn the_reference_covers_every_serialized_and_example_key() {
    let (_, _, sections) = generate();
    let documented = documented(&sections);
    let free: Vec<String> = sections
        .iter()
        .filter(|s| s.free.is_some())
        .map(|s| s.path.clone())
        .collect();
    let mut keys = Vec::new();
    let defaults = toml::Value::try_from(Config::default()).unwrap();
    key_paths(&defaults, "", &free, &mut keys);
    let example = std::fs::read_to_string(root().join("deploy/milstream.example.toml")).unwrap();
    let example: toml::Value = toml::from_str(&example).unwrap();
    key_paths(&example, "", &free, &mut keys);
    let missing: Vec<&String> = keys.iter().filter(|k| !documented.contains(k)).collect();
    assert!(missing.is_empty(), "keys missing from {OUT}: {missing:?}");
}

/// Serializing a configuration (what the reference's defaults come from) never writes a
/// secret: `kafka.properties` as its `Debug` shows them, `[object_store]` keys only.
#[test]
fn a_serialized_configuration_carries_no_secret() {
    let text = r#"
[kafka.properties]
"sasl.username" = "milstream"
"sasl.password" = "s3cr3t-in-file"
[object_store]
aws_secret_access_key = "s3cr3t-key"
aws_endpoint = "http://minio:9000"
"#;
    let cfg = Config::parse("x.toml", text).unwrap();
    let shown = toml::to_string(&cfg).unwrap();
    assert!(!shown.contains("s3cr3t"), "{shown}");
    assert!(!shown.contains("minio"), "{shown}");
    assert!(
        shown.contains("\"sasl.username\" = \"milstream\""),
        "{shown}"
    );
    assert!(
        shown.contains("aws_secret_access_key = \"<redacted>\""),
        "{shown}"
    );
}

/// README's configuration example is a valid configuration (its keys are the reference's).
#[test]
fn the_readme_configuration_example_parses() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let toml = readme
        .split("\n## Configuration\n")
        .nth(1)
        .and_then(|s| s.split("```toml\n").nth(1))
        .and_then(|s| s.split("```").next())
        .expect("README's Configuration section has a TOML block");
    let cfg = Config::parse("README.md", toml).unwrap();
    assert!(!cfg.is_embedded());
    assert_eq!(cfg.training.every, "1h");
}
