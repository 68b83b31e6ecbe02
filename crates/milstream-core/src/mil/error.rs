use thiserror::Error;

/// Errors of the learning core. Each carries enough context to act on without a debugger.
#[derive(Debug, Error)]
pub enum MilError {
    /// Bad input data: the message names what and where.
    #[error("invalid data: {0}")]
    InvalidData(String),
    /// Bad hyperparameters or options.
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
    /// Clarabel did not return a usable solution.
    #[error("solver failed in {context}: status {status} after {iterations} iterations ({vars} variables, {rows} rows)")]
    Solver {
        context: String,
        status: String,
        iterations: u32,
        vars: usize,
        rows: usize,
    },
    /// Training could not produce any hypothesis.
    #[error("training failed: {0}")]
    Training(String),
    /// A model artifact that cannot be used.
    #[error("invalid model artifact: {0}")]
    Artifact(String),
    /// The fit was cancelled (`cancel::cancel_all`) before it finished.
    #[error("the fit was cancelled")]
    Cancelled,
}

pub type Result<T> = std::result::Result<T, MilError>;
