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
    /// Contributions shown per bag; with --out, the findings the figure draws (the rest are
    /// one "other" entry).
    #[arg(long, default_value_t = 5)]
    top: usize,
    /// Only the sample at this 0-based position in the file.
    #[arg(long)]
    index: Option<usize>,
    /// Draw the paper's Figure 1 for the sample at --index: SVG, or PNG when the name
    /// ends in .png. Prints one line: where it went, the decision, the top findings.
    #[arg(long, requires = "index")]
    out: Option<PathBuf>,
    /// With --out: print the figure's data (findings, segments, offsets, values) as JSON
    /// instead of the one line.
    #[arg(long, requires = "out")]
    json: bool,
}

pub fn run(args: ExplainArgs) -> Result<()> {
    let ExplainArgs {
        input,
        top,
        index,
        out,
        json,
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
        // The title names the file and the case, not the path (it has to fit).
        let name = input.data.file_name().map_or_else(
            || input.data.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let fig = milstream::figure::figure(m, &ds.samples[i], &format!("{name} #{i}"), truth, top)
            .with_context(|| format!("explaining {}", ds.ids[i]))?;
        milstream::figure::write(&fig, out)?;
        if json {
            println!(
                "{}",
                json!({"out": out.display().to_string(), "figure": fig})
            );
        } else {
            let findings: Vec<String> = fig
                .findings
                .iter()
                .take(3)
                .map(|f| format!("{}: {}", f.text, milstream::figure::legend_text(f.value)))
                .collect();
            println!(
                "wrote {}: predicted {}{}, {} = {} (baseline {}), {:.0} % of its distance from the \
                 baseline in the top {}; {}",
                out.display(),
                fig.label,
                fig.truth
                    .as_ref()
                    .map(|t| format!(" (truth {t})"))
                    .unwrap_or_default(),
                if fig.single {
                    "g".to_string()
                } else {
                    format!("g({}) - g({})", fig.positive, fig.negative)
                },
                milstream::figure::legend_text(fig.score),
                milstream::figure::legend_text(fig.bias),
                100.0 * fig.shown_share,
                fig.findings.len(),
                findings.join("; ")
            );
        }
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
