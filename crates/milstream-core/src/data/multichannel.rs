//! Multichannel offline formats: the `.ts` files of the UEA / sktime / aeon archive and a
//! long CSV (`series_id,label,<channel names...>`, one row per time step). One channel
//! reads as a univariate series, so a univariate `.ts` file trains the univariate model.

use std::collections::HashMap;

use super::{fill_missing, is_missing, parse_value, report_filled, split_fields, DataError};
use crate::mil::{Dataset, Sample};

fn at(file: &str, line: usize, column: usize, message: impl Into<String>) -> DataError {
    DataError::At {
        file: file.into(),
        line,
        column,
        message: message.into(),
    }
}

/// A series from its channels: univariate for one, multichannel otherwise.
fn sample(mut channels: Vec<Vec<f64>>) -> Sample {
    if channels.len() == 1 {
        Sample::Series(channels.pop().expect("one channel"))
    } else {
        Sample::Multi(channels)
    }
}

fn parse_bool(file: &str, line: usize, key: &str, v: &str) -> Result<bool, DataError> {
    match v.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(at(
            file,
            line,
            1,
            format!("@{key} takes true or false, not '{v}'"),
        )),
    }
}

fn parse_count(file: &str, line: usize, key: &str, v: &str) -> Result<usize, DataError> {
    v.parse::<usize>().ok().filter(|&n| n > 0).ok_or_else(|| {
        at(
            file,
            line,
            1,
            format!("@{key} takes a positive count, not '{v}'"),
        )
    })
}

/// The header of a `.ts` file, as far as it constrains the data.
#[derive(Default)]
struct TsHeader {
    univariate: Option<bool>,
    dimensions: Option<usize>,
    equal_length: Option<bool>,
    series_length: Option<usize>,
    /// Some(labels) when `@classLabel true ...`; Some(empty) for `true` without a list.
    class_labels: Option<Vec<String>>,
    /// The channels a series must have: `@dimensions`, or 1 for `@univariate true`.
    dims: Option<usize>,
}

/// The `.ts` format (aeon's `load_from_ts_file`): `#` comments, `@key value` header lines up
/// to `@data`, then one series per line, channels separated by `:`, values by `,`, the class
/// label last. Missing values (`?`) are an error: no model here imputes.
pub fn parse_ts(file: &str, text: &str) -> Result<Dataset, DataError> {
    let mut lines = text.lines().enumerate();
    let h = read_ts_header(file, &mut lines)?;
    let mut ds = Dataset::default();
    let mut width: Option<usize> = h.dims;
    let (mut filled, mut filled_series) = (0, 0);
    for (n, raw) in lines {
        let line_no = n + 1;
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        // Byte offsets of each ':'-separated part, for 1-based columns.
        let mut parts: Vec<(usize, &str)> = Vec::new();
        let mut start = 0;
        for piece in line.split(':') {
            parts.push((start, piece));
            start += piece.len() + 1;
        }
        let (label_at, label) = parts.pop().expect("split yields at least one part");
        let label = label.trim();
        if parts.is_empty() || label.is_empty() {
            return Err(at(
                file,
                line_no,
                label_at + 1,
                "a series needs its channels and a class label after the last ':'",
            ));
        }
        if let Some(labels) = h.class_labels.as_ref().filter(|l| !l.is_empty()) {
            if !labels.iter().any(|l| l == label) {
                return Err(at(
                    file,
                    line_no,
                    label_at + 1,
                    format!("class label '{label}' is not among @classLabel {labels:?}"),
                ));
            }
        }
        let d = *width.get_or_insert(parts.len());
        if parts.len() != d {
            return Err(at(
                file,
                line_no,
                1,
                format!("series has {} channels, expected {d}", parts.len()),
            ));
        }
        let mut channels: Vec<Vec<f64>> = Vec::with_capacity(d);
        let mut series_filled = false;
        for (c, &(offset, part)) in parts.iter().enumerate() {
            let (values, missing) = read_ts_channel(file, line_no, c, offset, part)?;
            filled += missing;
            series_filled |= missing > 0;
            if let Some(first) = channels.first() {
                if values.len() != first.len() {
                    return Err(at(
                        file,
                        line_no,
                        offset + 1,
                        format!(
                            "channel {} has {} values, channel 1 has {}",
                            c + 1,
                            values.len(),
                            first.len()
                        ),
                    ));
                }
            }
            channels.push(values);
        }
        let first = ds.samples.first().and_then(Sample::series_len);
        check_ts_length(file, line_no, &h, channels[0].len(), first)?;
        ds.ids.push(format!("{file}:{line_no}"));
        ds.labels.push(label.to_string());
        ds.samples.push(sample(channels));
        filled_series += usize::from(series_filled);
    }
    if ds.is_empty() {
        return Err(DataError::File {
            file: file.into(),
            message: "no series after @data".into(),
        });
    }
    report_filled(file, filled, filled_series);
    Ok(ds)
}

/// Reads the header up to and including `@data` and checks it: its keys, with `dims`
/// resolved (from `@dimensions`, or 1 for `@univariate true`).
fn read_ts_header<'t>(
    file: &str,
    lines: &mut impl Iterator<Item = (usize, &'t str)>,
) -> Result<TsHeader, DataError> {
    let mut h = TsHeader::default();
    let mut data_line = None;
    for (n, raw) in lines.by_ref() {
        let line_no = n + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(rest) = line.strip_prefix('@') else {
            return Err(at(
                file,
                line_no,
                1,
                "a header line (@key value) or @data expected",
            ));
        };
        let (key, value) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let value = value.trim();
        match key.to_ascii_lowercase().as_str() {
            "data" => {
                data_line = Some(line_no);
                break;
            }
            "univariate" => h.univariate = Some(parse_bool(file, line_no, key, value)?),
            "dimensions" => h.dimensions = Some(parse_count(file, line_no, key, value)?),
            "equallength" => h.equal_length = Some(parse_bool(file, line_no, key, value)?),
            "serieslength" => h.series_length = Some(parse_count(file, line_no, key, value)?),
            "classlabel" => {
                let mut words = value.split_whitespace();
                let on = parse_bool(file, line_no, key, words.next().unwrap_or(""))?;
                h.class_labels = on.then(|| words.map(str::to_string).collect());
            }
            "timestamps" if parse_bool(file, line_no, key, value)? => {
                return Err(at(file, line_no, 1, "@timeStamps true is not supported"));
            }
            "targetlabel" if parse_bool(file, line_no, key, value)? => {
                return Err(at(
                    file,
                    line_no,
                    1,
                    "regression targets (@targetLabel true) are not supported",
                ));
            }
            // @problemName, @missing and keys of later format versions do not constrain
            // what is read.
            _ => {}
        }
    }
    let Some(data_line) = data_line else {
        return Err(DataError::File {
            file: file.into(),
            message: "no @data line".into(),
        });
    };
    if h.univariate == Some(true) && h.dimensions.is_some_and(|d| d > 1) {
        return Err(at(
            file,
            data_line,
            1,
            "@univariate true but @dimensions is above 1",
        ));
    }
    h.dims = h
        .dimensions
        .or_else(|| (h.univariate == Some(true)).then_some(1));
    if h.class_labels.is_none() {
        return Err(at(
            file,
            data_line,
            1,
            "the file has no class labels (@classLabel false)",
        ));
    }
    Ok(h)
}

/// Reads one channel of a series line (`part`, at byte `offset`): its values with the
/// missing ones filled, and how many were missing.
fn read_ts_channel(
    file: &str,
    line_no: usize,
    c: usize,
    offset: usize,
    part: &str,
) -> Result<(Vec<f64>, usize), DataError> {
    let mut read = Vec::new();
    let mut col = offset;
    for field in part.split(',') {
        let f = field.trim();
        if is_missing(f) {
            read.push(None);
            col += field.len() + 1;
            continue;
        }
        if f.is_empty() {
            return Err(at(
                file,
                line_no,
                col + 1,
                format!("channel {}: empty value", c + 1),
            ));
        }
        let v = parse_value(file, line_no, col + 1, f).map_err(|e| {
            at(
                file,
                line_no,
                col + 1,
                format!("channel {}: {}", c + 1, inner(&e)),
            )
        })?;
        read.push(Some(v));
        col += field.len() + 1;
    }
    let missing = read.iter().filter(|v| v.is_none()).count();
    let Some(values) = fill_missing(&read) else {
        return Err(at(
            file,
            line_no,
            offset + 1,
            format!("channel {}: every value is missing", c + 1),
        ));
    };
    Ok((values, missing))
}

/// Under `@equalLength true`, a series of `len` values per channel must have
/// `@seriesLength` values, else the first series' (`first`).
fn check_ts_length(
    file: &str,
    line_no: usize,
    h: &TsHeader,
    len: usize,
    first: Option<usize>,
) -> Result<(), DataError> {
    if h.equal_length != Some(true) {
        return Ok(());
    }
    let (want, what) = match (h.series_length, first) {
        (Some(want), _) => (want, "@seriesLength is"),
        (None, Some(first)) => (first, "the first has"),
        (None, None) => return Ok(()),
    };
    if len != want {
        let suffix = if h.series_length.is_some() {
            ""
        } else {
            " (@equalLength true)"
        };
        return Err(at(
            file,
            line_no,
            1,
            format!("series has {len} values per channel, {what} {want}{suffix}"),
        ));
    }
    Ok(())
}

/// The message of an `At` error without its location (re-located with the channel).
fn inner(e: &DataError) -> String {
    match e {
        DataError::At { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// Long CSV: a header `series_id,label,<channel names...>`, then one row per time step, in
/// time order within each series. Series keep the order of their first row; their rows need
/// not be adjacent but must agree on the label.
pub fn parse_long(file: &str, text: &str) -> Result<Dataset, DataError> {
    let ((header_at, header), lines) = super::header_and_rows(file, text)?;
    let names: Vec<String> = split_fields(header.trim_end_matches('\r'))
        .iter()
        .map(|f| f.trim().to_string())
        .collect();
    let width = names.len();
    if width < 3 {
        return Err(at(
            file,
            header_at + 1,
            width.max(1),
            "the header needs series_id, label and at least one channel",
        ));
    }
    let d = width - 2;
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut series: Vec<Vec<Vec<Option<f64>>>> = Vec::new();
    let mut first_line: Vec<usize> = Vec::new();
    let mut ds = Dataset::default();
    for (n, line) in lines {
        let line_no = n + 1;
        let fields = split_fields(line.trim_end_matches('\r'));
        if fields.len() != width {
            return Err(at(
                file,
                line_no,
                fields.len().min(width) + 1,
                format!("row has {} fields, the header has {width}", fields.len()),
            ));
        }
        let id = fields[0].trim().to_string();
        let label = fields[1].trim().to_string();
        if label.is_empty() {
            return Err(at(file, line_no, 2, "empty class label"));
        }
        let s = *index.entry(id.clone()).or_insert_with(|| {
            ds.ids.push(id.clone());
            ds.labels.push(label.clone());
            series.push(vec![Vec::new(); d]);
            first_line.push(line_no);
            series.len() - 1
        });
        if ds.labels[s] != label {
            return Err(at(
                file,
                line_no,
                2,
                format!(
                    "series '{id}' has label '{label}' here but '{}' on line {}",
                    ds.labels[s], first_line[s]
                ),
            ));
        }
        for (c, f) in fields[2..].iter().enumerate() {
            if is_missing(f) {
                series[s][c].push(None);
                continue;
            }
            let v = parse_value(file, line_no, c + 3, f).map_err(|e| {
                at(
                    file,
                    line_no,
                    c + 3,
                    format!("channel '{}': {}", names[c + 2], inner(&e)),
                )
            })?;
            series[s][c].push(Some(v));
        }
    }
    if ds.ids.is_empty() {
        return Err(DataError::File {
            file: file.into(),
            message: "no series in the file".into(),
        });
    }
    let (mut filled, mut filled_series) = (0, 0);
    let mut samples = Vec::with_capacity(series.len());
    for (s, channels) in series.into_iter().enumerate() {
        let missing: usize = channels.iter().flatten().filter(|v| v.is_none()).count();
        filled += missing;
        filled_series += usize::from(missing > 0);
        let mut values = Vec::with_capacity(d);
        for (c, read) in channels.iter().enumerate() {
            values.push(fill_missing(read).ok_or_else(|| {
                at(
                    file,
                    first_line[s],
                    c + 3,
                    format!(
                        "series '{}': channel '{}': every value is missing",
                        ds.ids[s],
                        names[c + 2]
                    ),
                )
            })?);
        }
        samples.push(sample(values));
    }
    report_filled(file, filled, filled_series);
    ds.samples = samples;
    if d > 1 {
        ds.channels = names[2..].to_vec();
    }
    Ok(ds)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TS: &str = "# a comment\n@problemName Toy\n@univariate false\n@dimensions 2\n\
        @equalLength true\n@seriesLength 3\n@classLabel true a b\n@data\n\
        1,2,3:4,5,6:a\n0.5,0.5,0.5:1,1,1:b\n";

    #[test]
    fn ts_multivariate_equal_length() {
        let ds = parse_ts("t.ts", TS).unwrap();
        assert_eq!(ds.labels, vec!["a", "b"]);
        assert_eq!(
            ds.samples[0],
            Sample::Multi(vec![vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0]])
        );
        assert_eq!(ds.ids[1], "t.ts:10");
    }

    #[test]
    fn ts_univariate_and_unequal_lengths() {
        let text = "@problemName U\n@univariate true\n@equalLength false\n@classLabel true 1 2\n@data\n1,2,3:1\n4,5:2\n";
        let ds = parse_ts("u.ts", text).unwrap();
        assert_eq!(ds.samples[0], Sample::Series(vec![1.0, 2.0, 3.0]));
        assert_eq!(ds.samples[1], Sample::Series(vec![4.0, 5.0]));
        let multi =
            "@dimensions 2\n@equalLength false\n@classLabel true x\n@data\n1,2,3:4,5,6:x\n1:2:x\n";
        let ds = parse_ts("m.ts", multi).unwrap();
        assert_eq!(ds.samples[1], Sample::Multi(vec![vec![1.0], vec![2.0]]));
    }

    /// A `.ts` file's missing readings (`?`, `NaN`) are filled channel by channel, in place.
    #[test]
    fn ts_missing_readings_are_filled_in_place() {
        let text =
            "@dimensions 2\n@equalLength true\n@classLabel true a\n@data\n1,?,3,?:?,5,NaN,9:a\n";
        let ds = parse_ts("m.ts", text).unwrap();
        assert_eq!(
            ds.samples[0],
            Sample::Multi(vec![vec![1.0, 2.0, 3.0, 3.0], vec![5.0, 5.0, 7.0, 9.0]])
        );
    }

    #[test]
    fn ts_malformed() {
        let err = |text: &str| parse_ts("e.ts", text).unwrap_err().to_string();
        let head =
            "@dimensions 2\n@equalLength true\n@seriesLength 2\n@classLabel true a b\n@data\n";
        assert_eq!(
            err(&format!("{head}?,?:3,4:a\n")),
            "e.ts:6:1: channel 1: every value is missing"
        );
        assert_eq!(
            err(&format!("{head}1,2:3,x:a\n")),
            "e.ts:6:7: channel 2: 'x' is not a number"
        );
        assert_eq!(
            err(&format!("{head}1,2:3,4:c\n")),
            "e.ts:6:9: class label 'c' is not among @classLabel [\"a\", \"b\"]"
        );
        assert_eq!(
            err(&format!("{head}1,2:a\n")),
            "e.ts:6:1: series has 1 channels, expected 2"
        );
        assert_eq!(
            err(&format!("{head}1,2:3:a\n")),
            "e.ts:6:5: channel 2 has 1 values, channel 1 has 2"
        );
        assert_eq!(
            err(&format!("{head}1,2,3:3,4,5:a\n")),
            "e.ts:6:1: series has 3 values per channel, @seriesLength is 2"
        );
        assert_eq!(
            err(&format!("{head}1,2:3,4:\n")),
            "e.ts:6:9: a series needs its channels and a class label after the last ':'"
        );
        assert_eq!(
            err(&format!("{head}1,:3,4:a\n")),
            "e.ts:6:3: channel 1: empty value"
        );
        assert_eq!(
            err(&format!("{head}1,inf:3,4:a\n")),
            "e.ts:6:3: channel 1: value 'inf' is not finite"
        );
        assert_eq!(err(head), "e.ts: no series after @data");
        assert_eq!(
            err("@classLabel true a\n1,2:a\n"),
            "e.ts:2:1: a header line (@key value) or @data expected"
        );
        assert_eq!(err("@classLabel true a\n"), "e.ts: no @data line");
        assert_eq!(
            err("@dimensions two\n@data\n"),
            "e.ts:1:1: @dimensions takes a positive count, not 'two'"
        );
        assert_eq!(
            err("@univariate maybe\n@data\n"),
            "e.ts:1:1: @univariate takes true or false, not 'maybe'"
        );
        assert_eq!(
            err("@classLabel false\n@data\n1:2\n"),
            "e.ts:2:1: the file has no class labels (@classLabel false)"
        );
        assert_eq!(
            err("@univariate true\n@dimensions 3\n@classLabel true\n@data\n"),
            "e.ts:4:1: @univariate true but @dimensions is above 1"
        );
        assert_eq!(
            err("@timeStamps true\n@data\n"),
            "e.ts:1:1: @timeStamps true is not supported"
        );
        let unequal = "@equalLength true\n@classLabel true a\n@data\n1,2:3,4:a\n1:2:a\n";
        assert_eq!(
            err(unequal),
            "e.ts:5:1: series has 1 values per channel, the first has 2 (@equalLength true)"
        );
    }

    #[test]
    fn long_csv_groups_rows_by_series() {
        let text = "series_id,label,ax,ay\ns1,walk,1,2\ns2,run,5,6\ns1,walk,3,4\n";
        let ds = parse_long("l.csv", text).unwrap();
        assert_eq!(ds.ids, vec!["s1", "s2"]);
        assert_eq!(ds.channels, vec!["ax", "ay"]);
        assert_eq!(
            ds.samples[0],
            Sample::Multi(vec![vec![1.0, 3.0], vec![2.0, 4.0]])
        );
        assert_eq!(ds.samples[1], Sample::Multi(vec![vec![5.0], vec![6.0]]));
        let uni = parse_long("l.csv", "series_id,label,v\na,1,1\na,1,2\nb,2,3\n").unwrap();
        assert_eq!(uni.samples[0], Sample::Series(vec![1.0, 2.0]));
        assert!(uni.channels.is_empty());
    }

    #[test]
    fn long_csv_malformed() {
        let err = |text: &str| parse_long("l.csv", text).unwrap_err().to_string();
        assert_eq!(
            err("series_id,label\n"),
            "l.csv:1:2: the header needs series_id, label and at least one channel"
        );
        assert_eq!(
            err("series_id,label,a,b\ns,1,2\n"),
            "l.csv:2:4: row has 3 fields, the header has 4"
        );
        assert_eq!(
            err("series_id,label,a\ns,1,2\ns,2,3\n"),
            "l.csv:3:2: series 's' has label '2' here but '1' on line 2"
        );
        assert_eq!(
            err("series_id,label,a,b\ns,1,2,x\n"),
            "l.csv:2:4: channel 'b': 'x' is not a number"
        );
        assert_eq!(
            err("series_id,label,a,b\ns,1,2,?\ns,1,3,NaN\n"),
            "l.csv:2:4: series 's': channel 'b': every value is missing"
        );
        let ds = parse_long("l.csv", "series_id,label,a\ns,1,2\ns,1,?\ns,1,4\n").unwrap();
        assert_eq!(ds.samples[0], Sample::Series(vec![2.0, 3.0, 4.0]));
        assert_eq!(
            err("series_id,label,a\ns,,2\n"),
            "l.csv:2:2: empty class label"
        );
        assert_eq!(err("series_id,label,a\n"), "l.csv: no series in the file");
    }
}
