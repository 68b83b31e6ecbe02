//! `milstream predict`: score every bag of a dataset with a saved model, one line per bag.

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;

use super::ModelOnData;

#[derive(Args)]
pub struct PredictArgs {
    #[command(flatten)]
    input: ModelOnData,
    /// Print one JSON object per bag.
    #[arg(long)]
    json: bool,
    /// JSON lines with each bag's top hypotheses (`top`: hypothesis, class, offset,
    /// contribution w_j h_j(B)), its top findings (`findings`: hypotheses grouped by the
    /// place their best match covers, what each asserts) and the share of the decision
    /// margin they carry (`shown_share`): the data the daemon writes into prediction rows.
    #[arg(long)]
    explain: bool,
    /// Hypotheses and findings per bag with --explain (the daemon's
    /// window.top_contributions default).
    #[arg(long, default_value_t = 3, requires = "explain")]
    top: usize,
}

pub fn run(args: PredictArgs) -> Result<()> {
    let (model, ds) = args.input.load()?;
    for (i, s) in ds.samples.iter().enumerate() {
        if args.explain {
            let e = model
                .explain(s)
                .with_context(|| format!("explaining {}", ds.ids[i]))?;
            let top =
                milstream::stream::ingest::record::TopContribution::top_named(&e, args.top, &model);
            // Positions count along the series (a bag has none), as in a window's row.
            let points = match s {
                milstream::mil::Sample::Series(v) => v.len(),
                milstream::mil::Sample::Multi(c) => c.first().map_or(0, Vec::len),
                milstream::mil::Sample::Bag(_) => 0,
            };
            let (findings, shown_share) =
                milstream::stream::ingest::record::FindingSummary::of(&e, points, args.top, &model);
            println!(
                "{}",
                json!({"id": ds.ids[i], "label": e.prediction.label, "scores": e.prediction.scores,
                       "truth": ds.labels[i], "top": top, "findings": findings,
                       "shown_share": shown_share})
            );
            continue;
        }
        let p = model
            .predict(s)
            .with_context(|| format!("predicting {}", ds.ids[i]))?;
        if args.json {
            println!(
                "{}",
                json!({"id": ds.ids[i], "label": p.label, "scores": p.scores, "truth": ds.labels[i]})
            );
        } else {
            println!(
                "{}\t{}\t{}",
                ds.ids[i],
                p.label,
                p.scores
                    .iter()
                    .map(|v| format!("{v:.6}"))
                    .collect::<Vec<_>>()
                    .join(",")
            );
        }
    }
    Ok(())
}
