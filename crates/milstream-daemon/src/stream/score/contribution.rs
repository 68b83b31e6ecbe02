//! The top contributions a prediction row carries: which hypotheses (shapelets) moved the
//! score, where they matched and, for a multichannel model, on which channel.

use serde::{Deserialize, Serialize};

use crate::mil::prediction::Asserts;

/// One shapelet hypothesis's part in a prediction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopContribution {
    /// Index of the hypothesis (shapelet) in the model.
    pub hypothesis: u32,
    /// The class whose score it contributed to.
    pub class: String,
    /// Index of the instance (for a window: the subsequence start) it matched best.
    pub offset: u32,
    /// Its weighted contribution w_j (h_j(B) - mean_j) to that class's score, against the
    /// hypothesis's training-set mean (`Contribution::contribution`).
    pub contribution: f64,
    /// The channel its hypothesis reads, for a multichannel model: the training header's
    /// name, `channel <i>` when unnamed, `all` for a dependent space. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
}

impl TopContribution {
    /// [`top`](Self::top), each naming its channel when `model` takes multichannel series.
    pub fn top_named(
        e: &crate::mil::Explanation,
        k: usize,
        model: &crate::mil::Model,
    ) -> Vec<TopContribution> {
        let mut out = Self::top(e, k);
        if let crate::mil::Model::LpboostShapelet(m) = model {
            if let crate::mil::InputKind::Multi { .. } = m.input {
                for (t, c) in out.iter_mut().zip(&e.contributions) {
                    t.channel = Some(if c.block > 0 {
                        "all".to_string()
                    } else {
                        m.channel_names
                            .get(c.channel)
                            .cloned()
                            .unwrap_or_else(|| format!("channel {}", c.channel))
                    });
                }
            }
        }
        out
    }

    /// The `k` largest contributions of an explanation (it lists them largest |w_j h_j(B)|
    /// first), as every prediction row carries them; `predict --explain` prints the same.
    pub fn top(e: &crate::mil::Explanation, k: usize) -> Vec<TopContribution> {
        e.contributions
            .iter()
            .take(k)
            .map(|c| TopContribution {
                hypothesis: c.hypothesis as u32,
                class: c.class.clone(),
                offset: c.offset as u32,
                contribution: c.contribution,
                channel: None,
            })
            .collect()
    }
}

/// One finding of a prediction (issue 27): the hypotheses whose best match covers the same
/// positions, their contributions summed, as `explain --out` draws and lists them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingSummary {
    /// What it asserts, in words, as the figure's legend says it.
    pub text: String,
    /// What its strongest hypothesis asserts: `match`, `mean`, `threshold` or `position`.
    pub asserts: String,
    /// A threshold's or position's verdict (does the assertion hold); null otherwise.
    pub verdict: Option<bool>,
    /// Its hypotheses' summed contribution to the decision margin: positive votes for the
    /// predicted class (for two classes: for the second class, as in the figure).
    pub value: f64,
    /// First and last position covered within the window (for a bag: the instance, twice).
    pub start: u32,
    pub end: u32,
    /// How many hypotheses it groups.
    pub hypotheses: u32,
    /// The channel it reads, for a multichannel model (as `TopContribution::channel`);
    /// null otherwise.
    pub channel: Option<String>,
}

impl FindingSummary {
    /// The `k` largest findings of an explanation of a window of `points` points (0 for a
    /// bag) and the share of the decision margin they carry, exactly as `explain --out`
    /// computes them from the same explanation; (None, None) for models without shapelets.
    pub fn of(
        e: &crate::mil::Explanation,
        points: usize,
        k: usize,
        model: &crate::mil::Model,
    ) -> (Option<Vec<FindingSummary>>, Option<f64>) {
        let crate::mil::Model::LpboostShapelet(m) = model else {
            return (None, None);
        };
        let (findings, _, share) = crate::mil::findings::explanation_findings(m, e, points, k);
        let multi = matches!(m.input, crate::mil::InputKind::Multi { .. });
        let out = findings
            .into_iter()
            .map(|f| FindingSummary {
                asserts: match f.asserts {
                    Asserts::Match => "match",
                    Asserts::Mean => "mean",
                    Asserts::Threshold { .. } => "threshold",
                    Asserts::Position { .. } => "position",
                }
                .to_string(),
                verdict: f.verdict,
                value: f.value,
                start: f.start as u32,
                end: f.end as u32,
                hypotheses: f.hypotheses.len() as u32,
                channel: multi.then(|| {
                    if f.channels > 1 {
                        "all".to_string()
                    } else {
                        m.channel_names
                            .get(f.channel)
                            .cloned()
                            .unwrap_or_else(|| format!("channel {}", f.channel))
                    }
                }),
                text: f.text,
            })
            .collect();
        (Some(out), Some(share))
    }
}
