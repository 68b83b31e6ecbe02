//! The top contributions a prediction row carries: which hypotheses (shapelets) moved the
//! score, where they matched and, for a multichannel model, on which channel.

use serde::{Deserialize, Serialize};

/// One shapelet hypothesis's part in a prediction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopContribution {
    /// Index of the hypothesis (shapelet) in the model.
    pub hypothesis: u32,
    /// The class whose score it contributed to.
    pub class: String,
    /// Index of the instance (for a window: the subsequence start) it matched best.
    pub offset: u32,
    /// Its weighted contribution w_j h_j(B) to that class's score.
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
