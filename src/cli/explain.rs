//! `milstream explain`: each hypothesis's maximising instance and contribution, or the
//! paper's Figure 1 for one sample.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;

use super::ModelOnData;

#[derive(Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    input: ModelOnData,
    /// Contributions shown per bag.
    #[arg(long, default_value_t = 5)]
    top: usize,
    /// Only the sample at this 0-based position in the file.
    #[arg(long)]
    index: Option<usize>,
    /// Draw the paper's Figure 1 for the sample at --index: SVG, or PNG when the name
    /// ends in .png. Prints the figure's data (segments, offsets, values) as JSON.
    #[arg(long, requires = "index")]
    out: Option<PathBuf>,
}

pub fn run(args: ExplainArgs) -> Result<()> {
    let ExplainArgs {
        input,
        top,
        index,
        out,
    } = args;
    let (model, ds) = input.load()?;
    if let Some(i) = index {
        anyhow::ensure!(
            i < ds.len(),
            "--index {i} is out of range: {} holds {} samples",
            input.data.display(),
            ds.len()
        );
    }
    if let (Some(out), Some(i)) = (&out, index) {
        let m = milstream::figure::shapelet_model(&model)?;
        let truth = Some(ds.labels[i].as_str()).filter(|t| !t.is_empty());
        let fig = milstream::figure::figure(m, &ds.samples[i], &ds.ids[i], truth)
            .with_context(|| format!("explaining {}", ds.ids[i]))?;
        milstream::figure::write(&fig, out)?;
        println!(
            "{}",
            json!({"out": out.display().to_string(), "figure": fig})
        );
        return Ok(());
    }
    for (i, s) in ds.samples.iter().enumerate() {
        if index.is_some_and(|x| x != i) {
            continue;
        }
        let mut e = model
            .explain(s)
            .with_context(|| format!("explaining {}", ds.ids[i]))?;
        e.contributions.truncate(top);
        println!(
            "{}",
            json!({"id": ds.ids[i], "truth": ds.labels[i], "explanation": e})
        );
    }
    Ok(())
}
