//! Readers for the offline formats: UCR-style series files, MIL CSV, and the multichannel
//! `.ts` and long CSV ([`multichannel`]). Every error names the file, the line and (where
//! there is one) the column, 1-based.

pub mod multichannel;

use std::collections::HashMap;
use std::path::Path;

use thiserror::Error;

use crate::mil::{Bag, Dataset, Sample};

pub use multichannel::{parse_long, parse_ts};

/// A file that cannot be read as a dataset.
#[derive(Debug, Error)]
pub enum DataError {
    #[error("{file}: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}:{line}:{column}: {message}")]
    At {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{file}: {message}")]
    File { file: String, message: String },
}

/// The offline input layouts (a command-line value with the `clap` feature, which the
/// command line turns on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Format {
    /// One series per line: label, then the values (comma or tab separated).
    Ucr,
    /// Header, then `bag_id,label,f1,...,fd`, one instance per row.
    Mil,
    /// The UEA / aeon `.ts` format: `@` header, then `ch1:ch2:...:label` per line.
    Ts,
    /// Header `series_id,label,<channel names...>`, one row per time step.
    Long,
}

/// Reads a dataset, detecting the format from the header when `format` is None: a first
/// line starting with `@` or `#` means `.ts`, a first field named `bag_id` MIL CSV, one
/// named `series_id` long CSV, anything else UCR.
pub fn read_dataset(path: &Path, format: Option<Format>) -> Result<Dataset, DataError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| DataError::Io {
        file: file.clone(),
        source,
    })?;
    parse_dataset(&file, &text, format)
}

/// Parses `text` (named `file` in errors) in `format`, or the format detected from it.
pub fn parse_dataset(file: &str, text: &str, format: Option<Format>) -> Result<Dataset, DataError> {
    match format.unwrap_or_else(|| detect_format(text)) {
        Format::Ucr => parse_ucr(file, text),
        Format::Mil => parse_mil(file, text),
        Format::Ts => parse_ts(file, text),
        Format::Long => parse_long(file, text),
    }
}

pub fn detect_format(text: &str) -> Format {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if first.trim_start().starts_with(['@', '#']) {
        return Format::Ts;
    }
    let field = first
        .split([',', '\t'])
        .next()
        .unwrap_or("")
        .trim()
        .trim_matches('"');
    if field.eq_ignore_ascii_case("bag_id") {
        Format::Mil
    } else if field.eq_ignore_ascii_case("series_id") {
        Format::Long
    } else {
        Format::Ucr
    }
}

/// The fields of one line: tab- or comma-separated as CSV (the `csv` crate, so a quoted field
/// may hold the delimiter, `"worn, left"`, and `""` is a quote), else whitespace-separated.
/// Quotes are removed; a quoted field spanning lines is not supported (files are line-based).
fn split_fields(line: &str) -> Vec<String> {
    let delimiter = if line.contains('\t') {
        b'\t'
    } else if line.contains(',') {
        b','
    } else {
        return line.split_whitespace().map(str::to_string).collect();
    };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .from_reader(line.as_bytes());
    let mut record = csv::StringRecord::new();
    match reader.read_record(&mut record) {
        Ok(true) => record.iter().map(str::to_string).collect(),
        // Unreachable for a &str line (valid UTF-8, no I/O), but never lose the line.
        _ => line.split(delimiter as char).map(str::to_string).collect(),
    }
}

fn parse_value(file: &str, line: usize, column: usize, field: &str) -> Result<f64, DataError> {
    let at = |message: String| DataError::At {
        file: file.to_string(),
        line,
        column,
        message,
    };
    let v: f64 = field
        .trim()
        .parse()
        .map_err(|_| at(format!("'{}' is not a number", field.trim())))?;
    if !v.is_finite() {
        return Err(at(format!("value '{}' is not finite", field.trim())));
    }
    Ok(v)
}

/// Whether a field is a missing reading: `NaN` (the UCR archive's mark) or `?` (the UEA
/// `.ts` format's).
fn is_missing(field: &str) -> bool {
    let f = field.trim();
    f == "?" || f.eq_ignore_ascii_case("nan")
}

/// One series or channel with its missing readings (None) filled: a gap between two
/// readings by the straight line between them, a gap at either end by the nearest reading,
/// so every value keeps its place in time (a position threshold reads where a match lies).
/// None when there is no reading at all.
fn fill_missing(values: &[Option<f64>]) -> Option<Vec<f64>> {
    let known: Vec<(usize, f64)> = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (i, v)))
        .collect();
    let (&(_, first), &(last_at, last)) = (known.first()?, known.last()?);
    let mut out = vec![first; values.len()];
    for pair in known.windows(2) {
        let ((a, va), (b, vb)) = (pair[0], pair[1]);
        for (i, o) in out.iter_mut().enumerate().take(b).skip(a) {
            *o = va + (vb - va) * (i - a) as f64 / (b - a) as f64;
        }
    }
    out[last_at..].fill(last);
    Some(out)
}

/// Says how many missing readings a file had filled (a warning: the data were changed).
fn report_filled(file: &str, values: usize, series: usize) {
    if values > 0 {
        tracing::warn!(
            file,
            values,
            series,
            "missing readings filled: linear between neighbours, the nearest at either end"
        );
    }
}

/// UCR layout. Trailing `NaN` fields are the UCR 2018 archive's padding of shorter series
/// and are dropped; a `NaN` before the last real value is a missing reading, filled by
/// [`fill_missing`] (a series of none is an error).
pub fn parse_ucr(file: &str, text: &str) -> Result<Dataset, DataError> {
    let mut ds = Dataset::default();
    let (mut filled, mut filled_series) = (0, 0);
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        if line.trim().is_empty() {
            continue;
        }
        let fields = split_fields(line.trim_end_matches('\r'));
        let label = fields[0].trim();
        if label.is_empty() {
            return Err(DataError::At {
                file: file.into(),
                line: line_no,
                column: 1,
                message: "empty class label".into(),
            });
        }
        let mut end = fields.len();
        while end > 1 && fields[end - 1].trim().eq_ignore_ascii_case("nan") {
            end -= 1;
        }
        let mut read = Vec::with_capacity(end - 1);
        for (c, f) in fields[1..end].iter().enumerate() {
            read.push(if is_missing(f) {
                None
            } else {
                Some(parse_value(file, line_no, c + 2, f)?)
            });
        }
        let missing = read.iter().filter(|v| v.is_none()).count();
        filled += missing;
        filled_series += usize::from(missing > 0);
        let values = fill_missing(&read).unwrap_or_default();
        if values.is_empty() {
            return Err(DataError::At {
                file: file.into(),
                line: line_no,
                column: 2,
                message: "a series needs at least one value".into(),
            });
        }
        ds.ids.push(format!("{file}:{line_no}"));
        ds.labels.push(label.to_string());
        ds.samples.push(Sample::Series(values));
    }
    if ds.is_empty() {
        return Err(DataError::File {
            file: file.into(),
            message: "no series in the file".into(),
        });
    }
    report_filled(file, filled, filled_series);
    Ok(ds)
}

/// A line of a file: (0-based index, text).
type Line<'t> = (usize, &'t str);

/// The first non-empty line of a CSV with a header, (index, text), and the non-empty lines
/// after it; an empty file is an error.
fn header_and_rows<'t>(
    file: &str,
    text: &'t str,
) -> Result<(Line<'t>, impl Iterator<Item = Line<'t>>), DataError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let header = lines.next().ok_or_else(|| DataError::File {
        file: file.into(),
        message: "empty file".into(),
    })?;
    Ok((header, lines))
}

/// MIL CSV: `bag_id,label,f1..fd`. Bags are kept in order of first appearance; their rows
/// need not be adjacent, but they must agree on the label.
pub fn parse_mil(file: &str, text: &str) -> Result<Dataset, DataError> {
    let ((_, header), lines) = header_and_rows(file, text)?;
    let width = split_fields(header).len();
    if width < 3 {
        return Err(DataError::At {
            file: file.into(),
            line: 1,
            column: width,
            message: "the header needs bag_id, label and at least one feature".into(),
        });
    }
    let dim = width - 2;
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut rows: Vec<Vec<f64>> = Vec::new();
    let mut first_line: Vec<usize> = Vec::new();
    let mut ds = Dataset::default();
    for (n, line) in lines {
        let line_no = n + 1;
        let fields = split_fields(line.trim_end_matches('\r'));
        if fields.len() != width {
            return Err(DataError::At {
                file: file.into(),
                line: line_no,
                column: fields.len().min(width) + 1,
                message: format!("row has {} fields, the header has {width}", fields.len()),
            });
        }
        let id = fields[0].trim().to_string();
        let label = fields[1].trim().to_string();
        let b = *index.entry(id.clone()).or_insert_with(|| {
            ds.ids.push(id.clone());
            ds.labels.push(label.clone());
            rows.push(Vec::new());
            first_line.push(line_no);
            rows.len() - 1
        });
        if ds.labels[b] != label {
            return Err(DataError::At {
                file: file.into(),
                line: line_no,
                column: 2,
                message: format!(
                    "bag '{id}' has label '{label}' here but '{}' on line {}",
                    ds.labels[b], first_line[b]
                ),
            });
        }
        for (c, f) in fields[2..].iter().enumerate() {
            rows[b].push(parse_value(file, line_no, c + 3, f)?);
        }
    }
    for (b, data) in rows.into_iter().enumerate() {
        let bag = Bag::new(dim, data).map_err(|e| DataError::At {
            file: file.into(),
            line: first_line[b],
            column: 1,
            message: format!("bag '{}': {e}", ds.ids[b]),
        })?;
        ds.samples.push(Sample::Bag(bag));
    }
    if ds.is_empty() {
        return Err(DataError::File {
            file: file.into(),
            message: "no bags in the file".into(),
        });
    }
    Ok(ds)
}

/// The cylinder-bell-funnel problem (Saito, 1994), seeded: `n` labelled series of `len`
/// points, the three classes in turn. A plateau (cylinder), a rising ramp (bell) or a
/// falling ramp (funnel) of height 6 + eta on [a, b], on N(0, 1) noise; a and b - a are
/// drawn in proportion to the original 128-point layout (a in [1/8, 1/4], b - a in
/// [1/4, 3/4] of the length). The benchmarks' labelled shape classes.
pub fn cylinder_bell_funnel(n: usize, len: usize, seed: u64) -> Dataset {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let normal = |rng: &mut rand_chacha::ChaCha8Rng| -> f64 {
        // Box-Muller.
        let u1: f64 = rng.random::<f64>().max(1e-300);
        let u2: f64 = rng.random();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    };
    let lf = len as f64;
    let mut ds = Dataset::default();
    for i in 0..n {
        let class = i % 3;
        let a = rng.random_range(lf / 8.0..=lf / 4.0);
        let b = a + rng.random_range(lf / 4.0..=3.0 * lf / 4.0);
        let eta = normal(&mut rng);
        let v: Vec<f64> = (0..len)
            .map(|t| {
                let t = t as f64;
                let inside = if t >= a && t <= b { 1.0 } else { 0.0 };
                let shape = match class {
                    0 => 1.0,
                    1 => (t - a) / (b - a),
                    _ => (b - t) / (b - a),
                };
                (6.0 + eta) * inside * shape + normal(&mut rng)
            })
            .collect();
        ds.ids.push(format!("cbf-{i}"));
        ds.labels
            .push(["cylinder", "bell", "funnel"][class].to_string());
        ds.samples.push(Sample::Series(v));
    }
    ds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_field_may_hold_the_delimiter() {
        let ds = parse_ucr("q.csv", "\"worn, left\",1,2,3\nok,4,5,6\n").unwrap();
        assert_eq!(ds.labels, ["worn, left", "ok"]);
        assert_eq!(ds.samples[0], Sample::Series(vec![1.0, 2.0, 3.0]));
        let long =
            "series_id,label,x\n\"a,1\",\"say \"\"hi\"\"\",1\n\"a,1\",\"say \"\"hi\"\"\",2\n";
        let ds = parse_dataset("l.csv", long, None).unwrap();
        assert_eq!(ds.ids, ["a,1"]);
        assert_eq!(ds.labels, ["say \"hi\""]);
    }

    #[test]
    fn ucr_comma_tab_and_padding() {
        let ds = parse_ucr("f", "1,0.5,1.5\n2\t3\t4\t5\tNaN\tNaN\n").unwrap();
        assert_eq!(ds.labels, vec!["1", "2"]);
        assert_eq!(ds.samples[1], Sample::Series(vec![3.0, 4.0, 5.0]));
    }

    #[test]
    fn ucr_errors_name_line_and_column() {
        let e = parse_ucr("a.tsv", "1,0.5\n2,0.1,abc\n")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "a.tsv:2:3: 'abc' is not a number");
        let e = parse_ucr("a.tsv", "1,0.5,inf\n").unwrap_err().to_string();
        assert_eq!(e, "a.tsv:1:3: value 'inf' is not finite");
        let e = parse_ucr("a.tsv", "1,NaN,NaN\n").unwrap_err().to_string();
        assert_eq!(e, "a.tsv:1:2: a series needs at least one value");
    }

    /// The archives' missing readings (DodgerLoopDay's, MelbournePedestrian's `NaN` inside a
    /// series) are filled where they stand: linear between neighbours, the nearest reading
    /// at the start; trailing `NaN` stays padding.
    #[test]
    fn ucr_missing_readings_are_filled_in_place() {
        let ds = parse_ucr("m.tsv", "a\tNaN\t2\tNaN\tNaN\t8\t9\tNaN\nb,1,?,3\n").unwrap();
        assert_eq!(
            ds.samples[0],
            Sample::Series(vec![2.0, 2.0, 4.0, 6.0, 8.0, 9.0])
        );
        assert_eq!(ds.samples[1], Sample::Series(vec![1.0, 2.0, 3.0]));
        assert_eq!(fill_missing(&[None, None]), None);
        assert_eq!(
            fill_missing(&[Some(1.0), None, None, None, Some(-1.0), None]),
            Some(vec![1.0, 0.5, 0.0, -0.5, -1.0, -1.0])
        );
    }

    #[test]
    fn mil_csv_groups_bags() {
        let ds = parse_mil("m.csv", "bag_id,label,f1,f2\na,1,1,2\nb,0,3,4\na,1,5,6\n").unwrap();
        assert_eq!(ds.ids, vec!["a", "b"]);
        match &ds.samples[0] {
            Sample::Bag(b) => assert_eq!(b.as_slice(), &[1.0, 2.0, 5.0, 6.0]),
            _ => panic!("a bag"),
        }
        assert_eq!(detect_format("bag_id,label,f1\n"), Format::Mil);
        assert_eq!(detect_format("1,0.5,0.7\n"), Format::Ucr);
        assert_eq!(detect_format("series_id,label,x\n"), Format::Long);
        assert_eq!(detect_format("# c\n@data\n"), Format::Ts);
    }

    #[test]
    fn mil_csv_errors() {
        let e = parse_mil("m.csv", "bag_id,label,f1,f2\na,1,1\n")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "m.csv:2:4: row has 3 fields, the header has 4");
        let e = parse_mil("m.csv", "bag_id,label,f1\na,1,1\na,0,2\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("m.csv:3:2: bag 'a' has label '0'"), "{e}");
        let e = parse_mil("m.csv", "bag_id,label,f1\na,1,x\n")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "m.csv:2:3: 'x' is not a number");
    }

    #[test]
    fn cylinder_bell_funnel_is_seeded_and_balanced() {
        let a = super::cylinder_bell_funnel(30, 150, 7);
        assert_eq!(a.len(), 30);
        assert_eq!(a.labels.iter().filter(|l| *l == "bell").count(), 10);
        assert_eq!(a.samples, super::cylinder_bell_funnel(30, 150, 7).samples);
        assert_ne!(a.samples, super::cylinder_bell_funnel(30, 150, 8).samples);
    }
}
