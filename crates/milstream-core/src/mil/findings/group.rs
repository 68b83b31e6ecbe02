//! Findings: the hypotheses of an explanation grouped by the positions their maximising
//! subsequence covers, each with what it asserts in words; the `top` kept, the rest summed.

use std::collections::HashMap;

use super::{Finding, Other};
use crate::mil::prediction::{Asserts, Contribution};
use crate::mil::space::{Extraction, View};

/// (first channel, channels, first position, last position): what a finding covers.
pub type FindingKey = (usize, usize, usize, usize);

/// `raw d1 z`: a space's view, dilation and normalisation, as findings name them; `level`
/// for a level space (single raw points).
pub fn space_name(c: &Contribution) -> String {
    if extraction(c).is_level() {
        return "level".into();
    }
    let view = match c.view {
        View::Raw => "raw",
        View::Diff => "diff",
        View::Centred => "centred",
        View::Lag => "lag",
    };
    format!("{view} d{}{}", c.dilation, if c.znorm { " z" } else { "" })
}

/// The space a contribution reads, as an extraction at its first channel.
pub fn extraction(c: &Contribution) -> Extraction {
    Extraction {
        view: c.view,
        length: c.length,
        dilation: c.dilation,
        znorm: c.znorm,
        channel: 0,
        block: 0,
        unit_exp: c.unit_exp,
    }
}

/// Whether a threshold or position hypothesis's assertion holds, in its `above` form for a
/// threshold (a subsequence *is* this similar), as stated for a position. The output is 1
/// when the assertion in its stated (`above` or below) form holds.
fn verdict(c: &Contribution) -> Option<bool> {
    let holds = c.similarity > 0.5;
    match c.asserts {
        Asserts::Threshold { above, .. } => Some(holds == above),
        Asserts::Position { .. } => Some(holds),
        Asserts::Match | Asserts::Mean => None,
    }
}

/// The series positions a position hypothesis asserts its best match lies in: the raw
/// points spanned by the subsequences whose relative offset (offset / subsequence count,
/// as `kernel_table::position`) is on the asserted side of `at`. None for bags (`n` = 0).
fn band(c: &Contribution, n: usize) -> Option<(usize, usize)> {
    let Asserts::Position { at, above } = c.asserts else {
        return None;
    };
    if n == 0 {
        return None;
    }
    let e = extraction(c);
    let count = e.count(n, 1);
    // The first offset o with o / count >= at.
    let cut = ((at * count as f64).ceil().max(0.0) as usize).min(count);
    let last = n - 1;
    let (lo, hi) = if above {
        (cut.min(count - 1), count - 1)
    } else {
        (0, cut.saturating_sub(1))
    };
    Some((lo.min(last), (hi + e.footprint() - 1).min(last)))
}

/// A kernel value in words: three decimals, or two significant digits when smaller.
fn similarity_text(v: f64) -> String {
    if v.abs() >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.1e}")
    }
}

/// What one hypothesis asserts about the sample, in words: `match` and `mean` name the
/// positions and the space, thresholds and positions their verdict.
fn asserts_text(c: &Contribution, key: &FindingKey, n: usize) -> String {
    let (ch, chs, start, end) = *key;
    let span = if start == end {
        format!("{start}")
    } else {
        format!("{start}-{end}")
    };
    let level = extraction(c).is_level();
    let on = match (n, chs) {
        (0, _) => format!("instance {start}"),
        // A level finding covers its whole channel (`covers`): named, not spanned.
        (_, 1) if level && ch > 0 => format!("channel {ch}"),
        (_, 1) if level => "the series".to_string(),
        _ if level => format!("{chs} channels"),
        (_, 1) if ch > 0 => format!("{span} on channel {ch}"),
        (_, 1) => span,
        _ => format!("{span} on {chs} channels"),
    };
    // Where a level finding's values lie: the whole of `on`.
    let at = if level && n > 0 { "on" } else { "at" };
    let space = space_name(c);
    let yes = |v: Option<bool>| if v == Some(true) { "yes" } else { "no" };
    // A level space's instances are single values and its patterns levels.
    let (one, many, pattern) = if level {
        ("a value", "values on average", "a level")
    } else {
        ("a subsequence", "subsequences on average", "a pattern")
    };
    match c.asserts {
        Asserts::Match if n == 0 => format!("instance {start} matches a pattern"),
        Asserts::Match => format!("matches {pattern} {at} {on} ({space})"),
        Asserts::Mean if level && n > 0 => format!("{pattern} occurs often on {on} ({space})"),
        Asserts::Mean => format!("{pattern} occurs often, best at {on} ({space})"),
        Asserts::Threshold { at: cut, mean, .. } if level && n > 0 => format!(
            "{} at least {} similar to {pattern} ({space}): {}, on {on}",
            if mean { many } else { one },
            similarity_text(cut),
            yes(verdict(c)),
        ),
        Asserts::Threshold { at: cut, mean, .. } => format!(
            "{} at least {} similar to {pattern} ({space}): {}, {} at {on}",
            if mean { many } else { one },
            similarity_text(cut),
            yes(verdict(c)),
            if mean { "best" } else { "closest" }
        ),
        Asserts::Position { at: cut, above } => match band(c, n) {
            Some((lo, hi)) => format!(
                "best match of {pattern} in {lo}-{hi} ({space}): {}, {at} {on}",
                yes(verdict(c))
            ),
            None => format!(
                "best match of {pattern} in the {} {:.0} % of instances: {}, at {on}",
                if above { "last" } else { "first" },
                if above {
                    100.0 * (1.0 - cut)
                } else {
                    100.0 * cut
                },
                yes(verdict(c))
            ),
        },
    }
}

/// One hypothesis of a finding: its value in the score and its contribution.
type Member<'a> = (f64, &'a Contribution);

/// Hypotheses whose best matches cover one place of a series say one thing about it, and
/// at shifts of a point or two they split into as many findings. Strongest first, a group
/// joins the first stronger one on the same channels whose first span and its own overlap
/// on at least half of their union (spans of about one size and place: a finding grows to
/// at most three times its strongest's span, never along a chain of overlaps). The finding
/// is named by its strongest's span: the union of shifted wide (dilated) spans reads as
/// most of the series. Level findings (a channel's values, not a place) stay apart from
/// pattern findings. Bags (`n` = 0) name instances, which do not overlap.
fn merge_overlapping<'a>(
    groups: Vec<(FindingKey, f64, Vec<Member<'a>>)>,
    n: usize,
) -> Vec<(FindingKey, f64, Vec<Member<'a>>)> {
    if n == 0 {
        return groups;
    }
    let is_level = |members: &[Member]| members.iter().any(|(_, c)| extraction(c).is_level());
    // (the seed's span, whether of levels, the merged group)
    type Merged<'a> = (FindingKey, bool, (FindingKey, f64, Vec<Member<'a>>));
    let mut merged: Vec<Merged<'a>> = Vec::new();
    for (key, value, members) in groups {
        let (ch, chs, start, end) = key;
        let level = is_level(&members);
        let joins = merged.iter().position(|(seed, seed_level, _)| {
            let overlap = end.min(seed.3) as isize - start.max(seed.2) as isize + 1;
            let union = end.max(seed.3) - start.min(seed.2) + 1;
            seed.0 == ch && seed.1 == chs && *seed_level == level && 2 * overlap >= union as isize
        });
        match joins {
            Some(i) => {
                let g = &mut merged[i].2;
                g.1 += value;
                g.2.extend(members);
            }
            None => merged.push((key, level, (key, value, members))),
        }
    }
    merged.into_iter().map(|(.., g)| g).collect()
}

/// Groups the hypotheses by what their maximising subsequence covers, orders the groups by
/// |summed value| and keeps the `top` largest; the rest become one `Other`. Also the share
/// of the contributions' sum the kept ones carry. `n`: the series' length (0 for a bag).
pub fn findings_of(
    parts: Vec<(FindingKey, f64, &Contribution)>,
    top: usize,
    n: usize,
) -> (Vec<Finding>, Option<Other>, f64) {
    let total: f64 = parts.iter().map(|p| p.1).sum();
    let mut index: HashMap<FindingKey, usize> = HashMap::new();
    let mut groups: Vec<(FindingKey, f64, Vec<Member>)> = Vec::new();
    for (key, value, c) in parts {
        let g = *index.entry(key).or_insert_with(|| {
            groups.push((key, 0.0, Vec::new()));
            groups.len() - 1
        });
        groups[g].1 += value;
        groups[g].2.push((value, c));
    }
    // Stable: equal sums keep the order of their strongest hypotheses.
    groups.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
    let mut groups = merge_overlapping(groups, n);
    groups.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
    // A finding a thousand times smaller than the largest says nothing a reader can see
    // (its entry would print as zero): it joins the rest.
    let largest = groups.first().map_or(0.0, |g| g.1.abs());
    let shown = groups
        .iter()
        .take(top)
        .take_while(|g| g.1 != 0.0 && g.1.abs() >= 1e-3 * largest)
        .count();
    let rest = groups.split_off(shown);
    let other = (!rest.is_empty()).then(|| Other {
        hypotheses: rest.iter().map(|g| g.2.len()).sum(),
        value: rest.iter().map(|g| g.1).sum(),
    });
    // Only the findings shown are put in words: the daemon does this for every window.
    let findings: Vec<Finding> = groups
        .into_iter()
        .map(|(key, value, mut g)| {
            g.sort_by(|a, b| b.0.abs().total_cmp(&a.0.abs()));
            let mut spaces: Vec<String> = Vec::new();
            for (_, c) in &g {
                let s = space_name(c);
                if !spaces.contains(&s) {
                    spaces.push(s);
                }
            }
            let strongest = g[0].1;
            let mut text = asserts_text(strongest, &key, n);
            if g.len() > 1 {
                let more = g.len() - 1;
                let s = if more == 1 { "is" } else { "es" };
                text.push_str(&format!(" (+{more} hypothes{s})"));
            }
            Finding {
                text,
                value,
                asserts: strongest.asserts,
                verdict: verdict(strongest),
                band: band(strongest, n),
                channel: key.0,
                channels: key.1,
                start: key.2,
                end: key.3,
                hypotheses: g
                    .iter()
                    .map(|(_, c)| (c.class.clone(), c.hypothesis))
                    .collect(),
                spaces,
            }
        })
        .collect();
    let kept: f64 = findings.iter().map(|f| f.value).sum();
    let share = if total != 0.0 { kept / total } else { 1.0 };
    (findings, other, share)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contribution(asserts: Asserts, similarity: f64) -> Contribution {
        Contribution {
            class: "a".into(),
            hypothesis: 0,
            length: 10,
            offset: 80,
            dilation: 1,
            view: View::Raw,
            znorm: false,
            channel: 0,
            block: 0,
            unit_exp: 0,
            similarity,
            weight: 1.0,
            baseline: 0.0,
            contribution: similarity,
            asserts,
        }
    }

    #[test]
    fn a_position_band_covers_the_subsequences_on_its_side() {
        // 100 points, length 10: 91 offsets; at 2/3 the first offset on the late side is
        // ceil(60.67) = 61, and its subsequences reach the last point.
        let late = contribution(
            Asserts::Position {
                at: 2.0 / 3.0,
                above: true,
            },
            1.0,
        );
        assert_eq!(band(&late, 100), Some((61, 99)));
        assert_eq!(verdict(&late), Some(true));
        let early = contribution(
            Asserts::Position {
                at: 2.0 / 3.0,
                above: false,
            },
            0.0,
        );
        // Offsets 0..=60, each spanning 10 points.
        assert_eq!(band(&early, 100), Some((0, 69)));
        assert_eq!(verdict(&early), Some(false));
        assert_eq!(band(&early, 0), None);
        assert!(asserts_text(&early, &(0, 1, 80, 89), 100)
            .starts_with("best match of a pattern in 0-69 (raw d1): no"));
    }

    #[test]
    fn a_threshold_is_stated_in_its_above_form() {
        // Below the threshold and saying 1: no subsequence is that similar.
        let below = Asserts::Threshold {
            at: 0.62,
            above: false,
            mean: false,
        };
        let c = contribution(below, 1.0);
        assert_eq!(verdict(&c), Some(false));
        assert_eq!(
            asserts_text(&c, &(0, 1, 80, 89), 100),
            "a subsequence at least 0.620 similar to a pattern (raw d1): no, closest at 80-89"
        );
        assert_eq!(verdict(&contribution(Asserts::Mean, 0.3)), None);
    }

    /// A level space's hypotheses speak of values and levels, on their whole channel.
    #[test]
    fn a_level_finding_names_values_and_a_level() {
        let mut c = contribution(
            Asserts::Threshold {
                at: 0.3,
                above: true,
                mean: true,
            },
            1.0,
        );
        c.length = 1;
        assert_eq!(space_name(&c), "level");
        assert_eq!(
            asserts_text(&c, &(2, 1, 0, 99), 100),
            "values on average at least 0.300 similar to a level (level): yes, on channel 2"
        );
        c.asserts = Asserts::Mean;
        assert_eq!(
            asserts_text(&c, &(0, 1, 0, 99), 100),
            "a level occurs often on the series (level)"
        );
    }

    /// Findings a point or two apart on the same channels are one finding, named by the
    /// strongest's span, with their summed value; a span that only touches the strongest's, another
    /// channel's, and a level finding over the same points stay apart.
    #[test]
    fn shifted_spans_merge_around_the_strongest() {
        let pattern = contribution(Asserts::Mean, 1.0);
        let mut level = contribution(Asserts::Mean, 1.0);
        level.length = 1;
        let groups = vec![
            ((0, 1, 10, 19), 3.0, vec![(3.0, &pattern)]),
            ((0, 1, 12, 21), 2.0, vec![(2.0, &pattern)]),
            ((0, 1, 19, 28), 1.5, vec![(1.5, &pattern)]),
            ((1, 1, 10, 19), 1.0, vec![(1.0, &pattern)]),
            ((0, 1, 0, 99), 0.9, vec![(0.9, &level)]),
            ((0, 1, 9, 18), -0.5, vec![(-0.5, &pattern)]),
        ];
        let merged = merge_overlapping(groups, 100);
        let summary: Vec<(FindingKey, f64, usize)> =
            merged.iter().map(|g| (g.0, g.1, g.2.len())).collect();
        assert_eq!(
            summary,
            vec![
                ((0, 1, 10, 19), 4.5, 3),
                ((0, 1, 19, 28), 1.5, 1),
                ((1, 1, 10, 19), 1.0, 1),
                ((0, 1, 0, 99), 0.9, 1),
            ]
        );
        // A bag's instances are left as they are.
        let bag = vec![((0, 1, 3, 3), 1.0, vec![(1.0, &pattern)])];
        assert_eq!(merge_overlapping(bag, 0).len(), 1);
    }
}
