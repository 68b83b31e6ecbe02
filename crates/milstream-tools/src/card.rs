//! The model card of `milstream inspect`: what a saved model is, in words and as JSON.
//!
//! Sparsity is counted as in Suehiro et al. (2019), section 6.2 ("26 out of 34000 (0.6 %)"):
//! non-zero alpha coefficients of the kept hypotheses against all the coefficients they
//! could have had (one per representative of their space at training time).

use std::fmt::Write;

use serde_json::{json, Value};

use crate::mil::boost::ensemble::Ensemble;
use crate::mil::shapelet::ShapeletModel;
use crate::mil::space::kernel::Kernel;
use crate::mil::{InputKind, Model};

/// The card as JSON (stable keys, for scripts).
pub fn card_json(model: &Model) -> Value {
    let mut v = json!({
        "kind": model.kind_name(),
        "classes": model.classes(),
    });
    if let Model::LpboostShapelet(m) = model {
        shapelet_card(m, &mut v);
    } else {
        v["input"] = json!(model.input());
        v["params"] = kind_params(model);
        v["summary"] = json!(model.summary());
    }
    v
}

/// The parameters that matter for a kind other than LPBoost.
fn kind_params(model: &Model) -> Value {
    let p = model.params();
    let series = match model {
        Model::Miordm(m) => m.series,
        Model::MiSvm(m) => m.series,
        Model::BoxSvm(m) => m.series,
        Model::LpboostShapelet(_) => None,
    };
    let mut v = match model {
        // One-vs-rest models list the first machine's width and bias and count over all.
        Model::Miordm(m) => json!({"lambda": p.miordm.lambda, "theta": p.miordm.theta,
            "mu": p.miordm.mu, "gamma": m.model.all()[0].gamma,
            "representatives": m.model.all().iter().map(|x| x.coef.len()).sum::<usize>(),
            "machines": m.model.all().len()}),
        Model::MiSvm(m) => json!({"c": p.svm.c, "gamma": m.model.all()[0].gamma,
            "support_vectors": m.model.all().iter().map(|x| x.coef.len()).sum::<usize>(),
            "bias": m.model.all()[0].bias, "machines": m.model.all().len()}),
        Model::BoxSvm(m) => {
            let first = &m.model.all()[0];
            json!({"s": p.boxkernel.s, "c": p.boxkernel.c,
            "epsilon": p.boxkernel.epsilon, "delta": p.boxkernel.delta,
            "rho": first.kernel.rho(), "transductive": first.transductive,
            "reference_bags": first.reference.len(),
            "support_bags": m.model.all().iter().map(|x| x.n_support).sum::<usize>(),
            "bias": first.bias, "machines": m.model.all().len()})
        }
        Model::LpboostShapelet(_) => json!({}),
    };
    if let Some(sb) = series {
        v["subsequence_length"] = json!(sb.length);
        v["stride"] = json!(sb.stride);
    }
    v
}

/// Non-zero alpha coefficients and all coefficients the kept hypotheses had.
fn alpha_counts(m: &ShapeletModel) -> (usize, usize) {
    let nnz: usize = m
        .ensembles
        .iter()
        .flat_map(|e| &e.hypotheses)
        .map(|h| h.alpha.iter().filter(|(_, a)| *a != 0.0).count())
        .sum();
    // The artifact keeps only the representatives in use; the fit recorded the share of
    // non-zeros over all of them, which gives the total back.
    let total = if m.summary.sparsity > 0.0 {
        (nnz as f64 / m.summary.sparsity).round() as usize
    } else {
        0
    };
    (nnz, total)
}

fn shapelet_card(m: &ShapeletModel, v: &mut Value) {
    let (nnz, total) = alpha_counts(m);
    v["input"] = match m.input {
        InputKind::Series => json!("series"),
        InputKind::Bag { dim } => json!({"bag": {"dim": dim}}),
        InputKind::Multi { channels } => {
            json!({"multi": {"channels": channels, "names": m.channel_names}})
        }
    };
    v["lengths"] = json!(m.spaces.iter().map(|s| s.length).collect::<Vec<_>>());
    v["spaces"] = json!(m
        .spaces
        .iter()
        .map(|s| s.extraction().to_string())
        .collect::<Vec<_>>());
    v["kernels"] = json!(m.spaces.iter().map(|s| s.kernel).collect::<Vec<_>>());
    v["representatives_kept"] = json!(m.spaces.iter().map(|s| s.count).collect::<Vec<_>>());
    v["params"] = json!({
        "nu": m.params.nu,
        "k": m.params.k,
        "weak": m.params.weak,
        "binary": m.params.binary,
        "epsilon": m.params.epsilon,
        "max_rounds": m.params.max_rounds,
        "standardize": m.standardizer.is_some(),
        "mean_hypotheses": m.params.mean_hypotheses,
        "threshold_hypotheses": m.params.threshold_hypotheses,
        "position_thresholds": m.params.position_thresholds,
        "position_min_examples": m.params.position_min_examples,
        "few_examples": m.params.few_examples,
        "cap_examples": m.params.cap_examples,
        "columns_per_round": m.params.columns_per_round,
        "columns_for_size": m.params.columns_for_size,
        "warm_master": m.params.warm_master,
        "partial_pricing": m.params.partial_pricing,
        "threshold_share": m.params.threshold_share,
        "max_weight": m.params.max_weight,
        "pooled_head": m.params.pooled_head,
        "decision_folds": m.params.decision_folds,
        "sub_fits": m.params.sub_fits,
    });
    v["decision_offset"] = json!(m.decision_offset);
    v["class_offsets"] = json!(m.class_offsets);
    // The class scores' last step: the pooled ridge head, or each ensemble's own sum.
    v["head"] = match &m.head {
        Some(h) => json!({
            "kind": "pooled_ridge",
            "alpha": h.alpha,
            "bias": h.bias,
            "nonzero_weights": h.weights.iter().flatten().filter(|w| **w != 0.0).count(),
        }),
        None => json!(null),
    };
    v["ensembles"] = json!(m
        .ensembles
        .iter()
        .map(|e| json!({
            "positive_class": m.classes[e.positive_class],
            "hypotheses": e.hypotheses.len(),
            "thresholds": e.hypotheses.iter().filter(|h| h.threshold.is_some()).count(),
            "position_thresholds": e
                .hypotheses
                .iter()
                .filter(|h| h.threshold.is_some_and(|t| t.position))
                .count(),
            "threshold_weight": e
                .hypotheses
                .iter()
                .filter(|h| h.threshold.is_some())
                .map(|h| h.weight)
                .sum::<f64>(),
            "weights": e.hypotheses.iter().map(|h| h.weight).collect::<Vec<_>>(),
            "rounds": e.rounds,
            "rho": e.rho,
            "gamma": e.gamma,
            "stop_reason": e.stop_reason,
            "master_interior_rounds": e.master_interior_rounds,
            "master_fallbacks": e.master_fallbacks,
        }))
        .collect::<Vec<_>>());
    v["rounds"] = json!(m.summary.rounds);
    v["hypotheses"] = json!(m
        .ensembles
        .iter()
        .map(|e| e.hypotheses.len())
        .sum::<usize>());
    v["margin"] = json!(m.summary.rho);
    v["sparsity"] = json!({
        "nonzero_alpha": nnz,
        "total_alpha": total,
        "share": m.summary.sparsity,
    });
    v["training"] = json!({
        "n_train": m.summary.n_train,
        "train_seconds": m.summary.train_seconds,
        "lp_solves": m.summary.lp_solves,
        "max_generated_rows": m.summary.max_generated_rows,
        "instances_per_space": m.summary.instances_per_space,
        "weak_failures": m.summary.weak_failures,
        "last_weak_failure": m.summary.last_weak_failure,
        "master_interior_rounds": m.ensembles.iter().map(|e| e.master_interior_rounds).sum::<usize>(),
        "master_fallbacks": m.ensembles.iter().map(|e| e.master_fallbacks).sum::<usize>(),
    });
    // How readable its explanations are: the share of the decision margin the top
    // findings carry on the training set (null when not measured, e.g. older artifacts).
    v["explanations"] = json!(m.summary.shown_shares);
}

fn kernel_text(k: &Kernel) -> String {
    match *k {
        Kernel::Gaussian { sigma } => format!("gaussian exp(-{sigma:.4} |x-z|^2)"),
        Kernel::Linear => "linear <x, z>".into(),
        Kernel::Polynomial { degree, coef0 } => format!("polynomial (<x, z> + {coef0})^{degree}"),
    }
}

/// The card in words.
pub fn card_text(model: &Model) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "kind        {}", model.kind_name());
    let _ = writeln!(s, "classes     {}", model.classes().join(", "));
    if let Model::LpboostShapelet(m) = model {
        shapelet_text(m, &mut s);
    } else {
        let input = match model.input() {
            InputKind::Series => "time series, as bags of subsequences".to_string(),
            InputKind::Bag { dim } => format!("bags of {dim}-dimensional instances"),
            InputKind::Multi { channels } => format!("{channels}-channel time series"),
        };
        let _ = writeln!(s, "input       {input}");
        if let Value::Object(params) = kind_params(model) {
            let list: Vec<String> = params.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let _ = writeln!(s, "parameters  {}", list.join(", "));
        }
        let sum = model.summary();
        let _ = writeln!(
            s,
            "training    {} examples in {:.2} s; {} rounds{}",
            sum.n_train,
            sum.train_seconds,
            sum.rounds,
            match sum.converged {
                Some(true) => ", settled",
                Some(false) => ", stopped at the round limit or a repeated set",
                None => "",
            }
        );
    }
    s
}

fn shapelet_text(m: &ShapeletModel, s: &mut String) {
    input_text(m, s);
    spaces_text(m, s);
    boosting_text(m, s);
    classes_text(m, s);
    training_text(m, s);
}

/// The card's input line: the kind of input and the shapelet lengths.
fn input_text(m: &ShapeletModel, s: &mut String) {
    let mut lengths: Vec<String> = Vec::new();
    for sp in m.spaces.iter().filter(|sp| !sp.extraction().is_level()) {
        let l = sp.length.to_string();
        if !lengths.contains(&l) {
            lengths.push(l);
        }
    }
    let mut lengths = lengths.join(", ");
    if m.spaces.iter().any(|sp| sp.extraction().is_level()) {
        lengths.push_str(if m.input.channels() > 1 {
            ", and a level space per channel"
        } else {
            ", and a level space"
        });
    }
    let _ = match m.input {
        InputKind::Series => writeln!(s, "input       time series; shapelet lengths {lengths}"),
        InputKind::Multi { channels } => writeln!(
            s,
            "input       {channels}-channel time series ({}); shapelet lengths {lengths}",
            if m.channel_names.is_empty() {
                "unnamed".to_string()
            } else {
                m.channel_names.join(", ")
            },
        ),
        InputKind::Bag { dim } => writeln!(
            s,
            "input       bags of {dim}-dimensional instances{}",
            if m.standardizer.is_some() {
                " (z-scored with the training mean and deviation)"
            } else {
                ""
            }
        ),
    };
}

/// The hypothesis spaces searched and, for each one used, its kernel.
fn spaces_text(m: &ShapeletModel, s: &mut String) {
    // Spaces no kept hypothesis uses hold no representatives: counted, not listed.
    let used = m.spaces.iter().filter(|sp| sp.count > 0).count();
    if m.spaces.len() > 1 {
        let _ = writeln!(
            s,
            "spaces      {} searched, {used} used by the kept hypotheses",
            m.spaces.len()
        );
    }
    for sp in m
        .spaces
        .iter()
        .filter(|sp| sp.count > 0 || m.spaces.len() == 1)
    {
        let channel = if m.input.channels() > 1 && sp.block == 0 {
            format!(
                " on channel {}",
                m.channel_names
                    .get(sp.channel)
                    .cloned()
                    .unwrap_or_else(|| sp.channel.to_string())
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "kernel      {} ({}{channel}, {} representatives kept)",
            kernel_text(&sp.kernel),
            sp.extraction(),
            sp.count
        );
    }
}

/// How the problems were boosted and how the class scores become a decision.
fn boosting_text(m: &ShapeletModel, s: &mut String) {
    let _ = writeln!(
        s,
        "boosting    nu {}, weak learner {:?}, k {}, {} problem(s) ({:?})",
        m.params.nu,
        m.params.weak,
        match (m.params.k, m.params.table_budget) {
            (None, None) => "all".to_string(),
            (None, Some(budget)) => format!("all up to {budget} / training bags"),
            (Some(k), _)
                if m.params.k_shared_by_channels && m.spaces.iter().any(|sp| sp.channel > 0) =>
            {
                format!("{k} shared by the channels")
            }
            (Some(k), Some(budget)) => format!("{k} (at most {budget} / training bags)"),
            (Some(k), None) => k.to_string(),
        },
        m.ensembles.len(),
        m.params.binary
    );
    let hyps: usize = m.ensembles.iter().map(|e| e.hypotheses.len()).sum();
    let _ = writeln!(
        s,
        "rounds      {} in total; {hyps} hypotheses with non-zero weight",
        m.summary.rounds
    );
    let _ = writeln!(
        s,
        "margin      rho {:.6} (smallest over problems)",
        m.summary.rho
    );
    if let Some(h) = &m.head {
        let _ = writeln!(
            s,
            "scores      pooled ridge head over all {hyps} hypotheses (alpha {}), not each class's ensemble alone",
            h.alpha
        );
    }
    if m.decision_offset != 0.0 {
        let _ = writeln!(
            s,
            "decision    {} when s_{} - s_{} > {:.4}, not 0: classes of unequal size, placed by the held-out scores of {} inner fits",
            m.classes[0], m.classes[0], m.classes[1], m.decision_offset, m.params.decision_folds
        );
    }
    if !m.class_offsets.is_empty() {
        let offsets: Vec<String> = m
            .classes
            .iter()
            .zip(&m.class_offsets)
            .map(|(c, o)| format!("{c} {o:+.3}"))
            .collect();
        let _ = writeln!(
            s,
            "decision    the largest score plus its class's offset ({}): classes of unequal size, placed by the held-out scores of {} inner fits",
            offsets.join(", "),
            m.params.decision_folds
        );
    }
    if m.params.threshold_hypotheses {
        let _ = writeln!(
            s,
            "thresholds  at most {} of each class's vote; every weight at most {}",
            m.params.threshold_share,
            m.params
                .max_weight
                .map_or("uncapped".to_string(), |c| c.to_string())
        );
    }
}

/// One line per class's ensemble.
fn classes_text(m: &ShapeletModel, s: &mut String) {
    for e in &m.ensembles {
        let thresholds: Vec<f64> = e
            .hypotheses
            .iter()
            .filter(|h| h.threshold.is_some())
            .map(|h| h.weight)
            .collect();
        let positions = e
            .hypotheses
            .iter()
            .filter(|h| h.threshold.is_some_and(|t| t.position))
            .count();
        let _ = writeln!(
            s,
            "  class {}: {} hypotheses ({} thresholds, {positions} on a position, weight {:.3}), {} rounds, rho {:.6}, gamma {:.6}, stopped: {}",
            m.classes[e.positive_class],
            e.hypotheses.len(),
            thresholds.len(),
            thresholds.iter().sum::<f64>(),
            e.rounds,
            e.rho,
            e.gamma,
            e.stop_reason
        );
    }
}

/// What the fit cost and what its explanations carry.
fn training_text(m: &ShapeletModel, s: &mut String) {
    let (nnz, total) = alpha_counts(m);
    let _ = writeln!(
        s,
        "sparsity    {nnz} of {total} alpha coefficients are non-zero ({:.2} %)",
        100.0 * m.summary.sparsity
    );
    let _ = writeln!(
        s,
        "training    {} examples, {:.2} s, {} LP solves, {} weak-learner failures{}",
        m.summary.n_train,
        m.summary.train_seconds,
        m.summary.lp_solves,
        m.summary.weak_failures,
        m.summary
            .last_weak_failure
            .as_ref()
            .map(|f| format!(" (last: {f})"))
            .unwrap_or_default()
    );
    let sum = |f: fn(&Ensemble) -> usize| m.ensembles.iter().map(f).sum::<usize>();
    let _ = writeln!(
        s,
        "master LP   {} of {} rounds by the interior point ({} after a simplex failure), the \
         rest by the warm simplex",
        sum(|e| e.master_interior_rounds),
        sum(|e| e.rounds),
        sum(|e| e.master_fallbacks)
    );
    if let Some(e) = &m.summary.shown_shares {
        let _ = writeln!(
            s,
            "explanations the top {} findings carry {:.0} % of the decision margin beyond the \
             baseline (median over the {} training examples; quartiles {:.0}-{:.0} %)",
            e.top,
            100.0 * e.median,
            e.n,
            100.0 * e.q1,
            100.0 * e.q3
        );
    }
}
