//! Findings: the hypotheses of a figure grouped by the positions their maximising
//! subsequence covers, each with what it asserts in words; the `top` kept, the rest summed.

use super::{Finding, Other};
use crate::mil::prediction::{Asserts, Contribution};
use crate::mil::space::View;

/// (first channel, channels, first position, last position): what a finding covers.
pub(super) type FindingKey = (usize, usize, usize, usize);

/// `raw d1 z`: a space's view, dilation and normalisation, as findings name them.
pub(super) fn space_name(c: &Contribution) -> String {
    let view = match c.view {
        View::Raw => "raw",
        View::Diff => "diff",
    };
    format!("{view} d{}{}", c.dilation, if c.znorm { " z" } else { "" })
}

/// Which third of a series a relative position lies in.
fn third(at: f64) -> &'static str {
    if at < 1.0 / 3.0 {
        "first"
    } else if at < 2.0 / 3.0 {
        "middle"
    } else {
        "last"
    }
}

/// What one hypothesis asserts about the sample, in words: `match` and `mean` name the
/// positions and the space, thresholds and positions their verdict.
fn asserts_text(c: &Contribution, key: &FindingKey, n: usize) -> String {
    let (ch, chs, start, end) = *key;
    let on = match (n, chs) {
        (0, _) => format!("instance {start}"),
        (_, 1) if ch > 0 => format!("{start}-{end} on channel {ch}"),
        (_, 1) => format!("{start}-{end}"),
        _ => format!("{start}-{end} on {chs} channels"),
    };
    let space = space_name(c);
    let verdict = |yes: bool| if yes { "yes" } else { "no" };
    match c.asserts {
        Asserts::Match if n == 0 => format!("instance {start} matches"),
        Asserts::Match => format!("matches a pattern at {on} ({space})"),
        Asserts::Mean => format!("a pattern occurs often, best at {on} ({space})"),
        Asserts::Threshold { above, mean, .. } => format!(
            "{} within reach of a pattern ({space}): {}",
            if mean {
                "subsequences on average"
            } else {
                "a subsequence"
            },
            // The output is 1 when the assertion in its `above` form holds.
            verdict((c.similarity > 0.5) == above)
        ),
        Asserts::Position { at, above } => format!(
            "best match of a pattern {} the {} third ({space}): {}, at {start}",
            if above { "from" } else { "before" },
            third(at),
            verdict(c.similarity > 0.5)
        ),
    }
}

/// One hypothesis in a finding: its value in the score, its contribution and its space.
type Member<'a> = (f64, &'a Contribution, String);

/// Groups the hypotheses by what their maximising subsequence covers, orders the groups by
/// |summed value| and keeps the `top` largest; the rest become one `Other`. Also the share
/// of the contributions' sum the kept ones carry.
pub(super) fn findings_of(
    parts: Vec<(FindingKey, f64, &Contribution, String)>,
    top: usize,
    n: usize,
) -> (Vec<Finding>, Option<Other>, f64) {
    let total: f64 = parts.iter().map(|p| p.1).sum();
    let mut groups: Vec<(FindingKey, Vec<Member>)> = Vec::new();
    for (key, value, c, space) in parts {
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push((value, c, space)),
            None => groups.push((key, vec![(value, c, space)])),
        }
    }
    let mut findings: Vec<Finding> = groups
        .into_iter()
        .map(|(key, mut g)| {
            g.sort_by(|a, b| b.0.abs().total_cmp(&a.0.abs()));
            let value: f64 = g.iter().map(|p| p.0).sum();
            let mut spaces: Vec<String> = Vec::new();
            for (_, _, s) in &g {
                if !spaces.contains(s) {
                    spaces.push(s.clone());
                }
            }
            let mut text = asserts_text(g[0].1, &key, n);
            if g.len() > 1 {
                text.push_str(&format!(" +{} more", g.len() - 1));
            }
            Finding {
                text,
                value,
                channel: key.0,
                channels: key.1,
                start: key.2,
                end: key.3,
                hypotheses: g
                    .iter()
                    .map(|(_, c, _)| (c.class.clone(), c.hypothesis))
                    .collect(),
                spaces,
            }
        })
        .collect();
    findings.sort_by(|a, b| b.value.abs().total_cmp(&a.value.abs()));
    // A finding a thousand times smaller than the largest says nothing a reader can see
    // (its entry would print as zero): it joins the rest.
    let largest = findings.first().map_or(0.0, |f| f.value.abs());
    let shown = findings
        .iter()
        .take(top)
        .take_while(|f| f.value != 0.0 && f.value.abs() >= 1e-3 * largest)
        .count();
    let rest = findings.split_off(shown);
    let other = (!rest.is_empty()).then(|| Other {
        hypotheses: rest.iter().map(|f| f.hypotheses.len()).sum(),
        value: rest.iter().map(|f| f.value).sum(),
    });
    let kept: f64 = findings.iter().map(|f| f.value).sum();
    let share = if total != 0.0 { kept / total } else { 1.0 };
    (findings, other, share)
}
