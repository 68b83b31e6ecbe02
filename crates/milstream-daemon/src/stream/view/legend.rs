//! One scored window (or bag) as the live view draws it: its values, and the legend the
//! figure of `milstream explain` and the prediction rows share. In: a prediction row, the
//! explanation it was made from, the window's values. Out: [`Explained`]. Owns nothing.
//!
//! The findings are the row's own (`FindingSummary::of`, the prediction rows' findings);
//! the rest and the bias come from the learning core's `explanation_findings` and `bias`,
//! the functions the figure uses, so the entries and the bias sum to the score as there.

use serde::Serialize;

use crate::mil::findings::{baseline, explanation_findings, orientation};
use crate::mil::{Explanation, Model};
use crate::stream::ingest::record::{FindingSummary, PredictionRecord};

/// A scored window of a watched series, with everything its drawing needs.
#[derive(Debug, Clone, Serialize)]
pub struct Explained {
    /// The id as shown (`feed::display_key`).
    pub key: String,
    pub model: String,
    pub version: String,
    /// `window` or `bag`.
    pub kind: String,
    pub label: String,
    pub classes: Vec<String>,
    pub scores: Vec<f64>,
    pub window_start_ms: Option<i64>,
    pub window_end_ms: Option<i64>,
    pub emitted_at_ms: i64,
    /// The window's values (its first channel), oldest first; empty for a bag.
    pub values: Vec<f64>,
    /// None for models without shapelets (MIORDM, the SVMs).
    pub legend: Option<Legend>,
}

/// What the drawing lists: the findings (numbered in this order), the rest, the bias.
#[derive(Debug, Clone, Serialize)]
pub struct Legend {
    /// Warm colours vote for this class, cool ones for `negative`.
    pub positive: String,
    pub negative: String,
    /// g(positive) - g(negative) (a single binary ensemble: g itself).
    pub score: f64,
    /// The baseline (`findings::baseline`): the bias and the hypotheses' training means.
    pub bias: f64,
    /// The model is one binary ensemble: `score` is `scores[1]`.
    pub single: bool,
    /// The prediction row's findings.
    pub findings: Vec<FindingSummary>,
    /// The findings not shown, as one entry.
    pub other: Option<OtherEntry>,
    /// The share of the score less the baseline that the findings carry.
    pub shown_share: Option<f64>,
}

/// The rest of the hypotheses, summed.
#[derive(Debug, Clone, Serialize)]
pub struct OtherEntry {
    pub hypotheses: usize,
    pub value: f64,
}

impl Explained {
    /// The drawing of `row`, made from explanation `e` of a window of `values` (none: a bag).
    pub fn of(
        key: &str,
        row: &PredictionRecord,
        e: &Explanation,
        values: &[f64],
        model: &Model,
    ) -> Self {
        Explained {
            key: key.to_string(),
            model: row.model_name.clone(),
            version: row.model_version.clone(),
            kind: row.kind.clone(),
            label: row.label.clone(),
            classes: row.classes.clone(),
            scores: row.scores.clone(),
            window_start_ms: row.window_start_ms,
            window_end_ms: row.window_end_ms,
            emitted_at_ms: row.emitted_at_ms,
            values: values.to_vec(),
            legend: legend(row, e, values.len(), model),
        }
    }
}

/// The legend of `row` (a window of `n` points; 0: a bag).
fn legend(row: &PredictionRecord, e: &Explanation, n: usize, model: &Model) -> Option<Legend> {
    let Model::LpboostShapelet(m) = model else {
        return None;
    };
    let findings = row.findings.clone()?;
    let o = orientation(m, &e.prediction);
    // As many as the row shows: the same groups are shown, so the same rest is left.
    let (_, other, _) = explanation_findings(m, e, n, findings.len());
    Some(Legend {
        positive: m.classes[o.pos].clone(),
        negative: m.classes[o.neg].clone(),
        score: o.score,
        bias: baseline(m, &o),
        single: m.ensembles.len() == 1,
        findings,
        other: other.map(|o| OtherEntry {
            hypotheses: o.hypotheses,
            value: o.value,
        }),
        shown_share: row.shown_share,
    })
}
