//! `milstream inspect`: the model card of a saved model.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::load_model;

#[derive(Args)]
pub struct InspectArgs {
    model: PathBuf,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: InspectArgs) -> Result<()> {
    let model = load_model(&args.model)?;
    if args.json {
        println!("{}", milstream::card::card_json(&model));
    } else {
        print!("{}", milstream::card::card_text(&model));
    }
    Ok(())
}
