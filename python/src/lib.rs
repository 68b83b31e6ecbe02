//! The native core of the `milstream` Python package (`milstream._core`): the library's fit,
//! predict, explain, figure and artifact, with the command line's fit options
//! (`milstream_tools::fit_options::FitOptions`, so names and defaults have one source). The
//! estimators with scikit-learn's and aeon's conventions are Python (`milstream/`).
//!
//! Every long call runs on a thread of its own with the GIL released; the calling thread
//! waits in slices of `SIGNAL_POLL` and checks for Ctrl-C between them.

use std::sync::{mpsc, Arc};
use std::time::Duration;

use clap::{CommandFactory, Parser};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use milstream_tools::fit_options::{fit, FitOptions};
use milstream_tools::mil::{Bag, Dataset, MilError, Model, Sample};

/// How often a waiting call looks for a pending KeyboardInterrupt.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// The fit options as the command line parses them, without a program name.
#[derive(Parser)]
#[command(name = "milstream", no_binary_name = true, disable_help_flag = true)]
struct FitArgs {
    #[command(flatten)]
    opts: FitOptions,
}

/// Learning-core errors a user can act on (bad data, bad parameters, a bad artifact) are
/// ValueError; a solver or training failure is RuntimeError.
fn to_py_err(e: anyhow::Error) -> PyErr {
    let text = format!("{e:#}");
    match e.downcast_ref::<MilError>() {
        Some(MilError::Solver { .. } | MilError::Training(_)) => PyRuntimeError::new_err(text),
        _ => PyValueError::new_err(text),
    }
}

/// Runs `work` on its own thread (in a pool of `n_jobs` threads when given, else rayon's
/// global pool, the command line's) with the GIL released. Ctrl-C returns
/// KeyboardInterrupt at once and cancels the fit (`mil::cancel`): it stops at its next
/// boosting round or grid point, and its result is dropped.
fn run_released<T: Send + 'static>(
    py: Python<'_>,
    n_jobs: Option<usize>,
    work: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> PyResult<T> {
    let pool = match n_jobs {
        Some(n) => Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .thread_name(|i| format!("milstream-py-{i}"))
                .build()
                .map_err(|e| PyRuntimeError::new_err(format!("n_jobs={n}: {e}")))?,
        ),
        None => None,
    };
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("milstream-py".into())
        .spawn(move || {
            let out = match &pool {
                Some(p) => p.install(work),
                None => work(),
            };
            // The receiver is gone only after a KeyboardInterrupt: nobody wants the result.
            let _ = tx.send(out);
        })
        .map_err(|e| PyRuntimeError::new_err(format!("starting a thread: {e}")))?;
    let mut rx = rx;
    loop {
        // The receiver moves into the GIL-free closure and back (it is Send, not Sync).
        let (got, back) = py.detach(move || (rx.recv_timeout(SIGNAL_POLL), rx));
        rx = back;
        match got {
            Ok(out) => return out.map_err(to_py_err),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(interrupt) = py.check_signals() {
                    // Ctrl-C: the fit in progress stops at its next boosting round.
                    milstream_tools::mil::cancel::cancel_all();
                    return Err(interrupt);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let why = match handle.join() {
                    Err(p) => p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default(),
                    Ok(()) => String::new(),
                };
                return Err(PyRuntimeError::new_err(format!(
                    "milstream failed internally: {why}"
                )));
            }
        }
    }
}

/// The samples of a call: series (cases x channels x time steps; one channel is a
/// univariate series) or bags (cases x instances x features).
fn samples(cases: Vec<Vec<Vec<f64>>>, bags: bool) -> anyhow::Result<Vec<Sample>> {
    cases
        .into_iter()
        .enumerate()
        .map(|(i, mut c)| {
            Ok(if bags {
                Sample::Bag(Bag::from_instances(&c).map_err(|e| anyhow::anyhow!("X[{i}]: {e}"))?)
            } else if c.len() == 1 {
                Sample::Series(c.pop().expect("one channel"))
            } else {
                Sample::Multi(c)
            })
        })
        .collect()
}

/// Each fit option: (parameter name, default as the command line reads it, whether it is a
/// flag, whether it takes a comma-separated list, help text). The parameter name is the
/// option's long name with `_` for `-`.
#[pyfunction]
fn fit_options() -> Vec<(String, Option<String>, bool, bool, String)> {
    FitArgs::command()
        .get_arguments()
        .filter_map(|a| {
            let long = a.get_long()?;
            let default = a
                .get_default_values()
                .first()
                .map(|v| v.to_string_lossy().into_owned());
            let flag = !a.get_action().takes_values();
            let list = a.get_value_delimiter().is_some();
            let help = a.get_help().map(ToString::to_string).unwrap_or_default();
            Some((long.replace('-', "_"), default, flag, list, help))
        })
        .collect()
}

/// Parses command-line style fit options (`["--nu", "0.2", "--paper"]`); the error is
/// clap's message, which names the option.
fn parse_options(args: &[String]) -> PyResult<FitOptions> {
    FitArgs::try_parse_from(args)
        .map(|a| a.opts)
        .map_err(|e| PyValueError::new_err(e.render().to_string().trim().to_string()))
}

/// Checks fit options without fitting (the estimators call it before converting X).
#[pyfunction]
fn check_options(args: Vec<String>) -> PyResult<()> {
    parse_options(&args).map(|_| ())
}

/// A fitted model of any kind.
#[pyclass(name = "Model", module = "milstream._core", frozen)]
struct PyModel {
    model: Arc<Model>,
}

#[pymethods]
impl PyModel {
    /// Fits with the command line's options `args` on `cases` labelled `labels`, exactly as
    /// `milstream train` does (its `fit`, with `--search` when asked).
    #[staticmethod]
    #[pyo3(signature = (args, cases, labels, bags, n_jobs=None))]
    fn fit(
        py: Python<'_>,
        args: Vec<String>,
        cases: Vec<Vec<Vec<f64>>>,
        labels: Vec<String>,
        bags: bool,
        n_jobs: Option<usize>,
    ) -> PyResult<Self> {
        let mut opts = parse_options(&args)?;
        opts.quiet = true;
        let model = run_released(py, n_jobs, move || {
            let samples = samples(cases, bags)?;
            let ds = Dataset {
                ids: (0..samples.len()).map(|i| i.to_string()).collect(),
                samples,
                labels,
                channels: Vec::new(),
            };
            let mut model = fit(&ds, &[], &opts)?.0;
            // The card's explanation shares, as `milstream train` records them.
            milstream_tools::mil::findings::record_shown_shares(&mut model, &ds);
            Ok(model)
        })?;
        Ok(Self {
            model: Arc::new(model),
        })
    }

    /// Per case the predicted class's index and the scores of every class (aligned with
    /// `classes`), as `Model::predict` (the command line's `predict`) gives them.
    #[pyo3(signature = (cases, bags, n_jobs=None))]
    fn predict(
        &self,
        py: Python<'_>,
        cases: Vec<Vec<Vec<f64>>>,
        bags: bool,
        n_jobs: Option<usize>,
    ) -> PyResult<(Vec<usize>, Vec<Vec<f64>>)> {
        let model = Arc::clone(&self.model);
        run_released(py, n_jobs, move || {
            use rayon::prelude::*;
            let preds = samples(cases, bags)?
                .par_iter()
                .enumerate()
                .map(|(i, s)| model.predict(s).map_err(|e| anyhow::anyhow!("X[{i}]: {e}")))
                .collect::<anyhow::Result<Vec<_>>>()?;
            Ok(preds.into_iter().map(|p| (p.class_index, p.scores)).unzip())
        })
    }

    /// Per case the class probabilities (aligned with `classes`), as `Model::predict_proba`
    /// gives them: calibrated on held-out folds when the model was (`calibration.rs`).
    #[pyo3(signature = (cases, bags, n_jobs=None))]
    fn predict_proba(
        &self,
        py: Python<'_>,
        cases: Vec<Vec<Vec<f64>>>,
        bags: bool,
        n_jobs: Option<usize>,
    ) -> PyResult<Vec<Vec<f64>>> {
        let model = Arc::clone(&self.model);
        run_released(py, n_jobs, move || {
            use rayon::prelude::*;
            samples(cases, bags)?
                .par_iter()
                .enumerate()
                .map(|(i, s)| {
                    let (_, p) = model
                        .predict_proba(s)
                        .map_err(|e| anyhow::anyhow!("X[{i}]: {e}"))?;
                    Ok(p)
                })
                .collect()
        })
    }

    /// Per case the explanation as JSON: the prediction and every hypothesis's
    /// contribution (`Model::explain`, what `milstream explain` prints).
    #[pyo3(signature = (cases, bags, n_jobs=None))]
    fn explain(
        &self,
        py: Python<'_>,
        cases: Vec<Vec<Vec<f64>>>,
        bags: bool,
        n_jobs: Option<usize>,
    ) -> PyResult<Vec<String>> {
        let model = Arc::clone(&self.model);
        run_released(py, n_jobs, move || {
            use rayon::prelude::*;
            samples(cases, bags)?
                .par_iter()
                .enumerate()
                .map(|(i, s)| {
                    let e = model
                        .explain(s)
                        .map_err(|e| anyhow::anyhow!("X[{i}]: {e}"))?;
                    Ok(serde_json::to_string(&e)?)
                })
                .collect()
        })
    }

    /// The SVG of the paper's Figure 1 for one case, as `milstream explain --out x.svg`
    /// draws it.
    #[pyo3(signature = (case, bags, title, truth=None, top=5))]
    fn figure_svg(
        &self,
        py: Python<'_>,
        case: Vec<Vec<f64>>,
        bags: bool,
        title: String,
        truth: Option<String>,
        top: usize,
    ) -> PyResult<String> {
        let model = Arc::clone(&self.model);
        run_released(py, None, move || {
            let sample = samples(vec![case], bags)?.pop().expect("one case");
            let m = milstream_tools::figure::shapelet_model(&model)?;
            let fig = milstream_tools::figure::figure(m, &sample, &title, truth.as_deref(), top)?;
            Ok(milstream_tools::figure::render_svg(&fig)?)
        })
    }

    /// The artifact, byte for byte what `milstream train --out` writes.
    fn to_json(&self) -> String {
        self.model.to_json()
    }

    /// Reads and checks an artifact (`Model::from_json`, as the daemon and the command
    /// line load one).
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Self> {
        Model::from_json(text)
            .map(|m| Self { model: Arc::new(m) })
            .map_err(|e| to_py_err(e.into()))
    }

    /// Class names, sorted as strings (the order of every score vector).
    #[getter]
    fn classes(&self) -> Vec<String> {
        self.model.classes().to_vec()
    }

    /// The kind's name: lpboost, miordm, boxsvm, misvm, mi-svm.
    #[getter]
    fn kind(&self) -> &'static str {
        self.model.kind_name()
    }

    /// Values per time step of the series the model takes (1: univariate); 0 for bags.
    #[getter]
    fn channels(&self) -> usize {
        self.model.input().channels()
    }

    /// Whether the model takes bags (else series).
    #[getter]
    fn takes_bags(&self) -> bool {
        !self.model.input().is_series()
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit_options, m)?)?;
    m.add_function(wrap_pyfunction!(check_options, m)?)?;
    m.add_class::<PyModel>()?;
    Ok(())
}
