//! The model kinds beside LPBoost (issue 6): MIORDM, the box-counting kernel SVM, MI-SVM
//! and mi-SVM on MUSK1 through the
//! same `Model` API, artifact and cross-validation the CLI uses.
//! `cargo test --release --test model_kinds -- --nocapture` prints the accuracies.

mod common;

use milstream::mil::model::ModelKind;
use milstream::mil::select::cross_validate;
use milstream::mil::{FitParams, Model, Sample};

fn cv(kind: ModelKind) -> f64 {
    let ds = common::load("musk1.csv");
    let p = FitParams {
        kind,
        ..FitParams::default()
    };
    let r = cross_validate(&ds, &p, 10, 0, &|| {}).unwrap();
    println!(
        "{kind} MUSK1 10-fold accuracy {:.4} +- {:.4}, auc {:?}, fit {:.3} s/fold ({:?})",
        r.accuracy, r.accuracy_std, r.auc, r.fit_seconds_mean, r.fold_accuracies
    );
    assert_eq!(r.fold_accuracies.len(), 10);
    r.accuracy
}

/// The floor is 0.75 (the paper reports 0.759); measured 0.772 with the paper's
/// defaults (lambda 2^8, theta = mu = 0.7, RBF gamma 1/d). Deterministic: seed-0 folds.
#[test]
fn miordm_musk1_ten_fold_accuracy() {
    let acc = cv(ModelKind::Miordm);
    assert!(acc >= 0.75, "MIORDM MUSK1 10-fold accuracy {acc:.4}");
}

/// Andrews et al. report 0.779 (MI-SVM) and 0.874 (mi-SVM) on MUSK1; measured here with C 10
/// and the median-heuristic RBF width: 0.858 and 0.837. The floor is the papers' MI-SVM row.
#[test]
fn mi_svm_baselines_musk1_ten_fold_accuracy() {
    for kind in [ModelKind::Misvm, ModelKind::MiSvm] {
        let acc = cv(kind);
        assert!(acc >= 0.77, "{kind} MUSK1 10-fold accuracy {acc:.4}");
    }
}

/// The box-counting kernel SVM (non-transductive, s = 20, C = 100, eps 0.1, delta 0.01):
/// the floor is 0.80; the paper reports 0.880 without transduction. Measured 0.869.
#[test]
fn boxsvm_musk1_ten_fold_accuracy() {
    let acc = cv(ModelKind::Boxsvm);
    assert!(acc >= 0.80, "boxsvm MUSK1 10-fold accuracy {acc:.4}");
}

/// Every kind writes the versioned artifact and reads it back to the same model, which
/// predicts the same scores; a kind name in the artifact that does not exist is refused.
#[test]
fn every_kind_round_trips_through_the_artifact() {
    let ds = common::load("musk1.csv");
    let small = ds.subset(&(0..ds.len()).step_by(3).collect::<Vec<_>>());
    for kind in [ModelKind::Miordm, ModelKind::Misvm, ModelKind::MiSvm] {
        let m = Model::fit(
            &small,
            &FitParams {
                kind,
                ..FitParams::default()
            },
        )
        .unwrap();
        assert_eq!(m.kind(), kind);
        assert_eq!(m.params().kind, kind);
        let back = Model::from_json(&m.to_json()).unwrap();
        assert_eq!(back, m, "{kind}");
        for s in &ds.samples[..10] {
            assert_eq!(back.predict(s).unwrap(), m.predict(s).unwrap());
        }
        let e = m.explain(&ds.samples[0]).unwrap();
        assert_eq!(e.contributions.len(), 1, "the witness instance");
        let Sample::Bag(b) = &ds.samples[0] else {
            unreachable!()
        };
        assert!(e.contributions[0].offset < b.len());
        assert_eq!(e.contributions[0].contribution, e.prediction.scores[1]);
    }
    // The box SVM explains by reference bag: w_j phi_j(B), summing with the bias to f(B).
    let m = Model::fit(
        &small,
        &FitParams {
            kind: ModelKind::Boxsvm,
            ..FitParams::default()
        },
    )
    .unwrap();
    let back = Model::from_json(&m.to_json()).unwrap();
    assert_eq!(back, m);
    let milstream::mil::Model::BoxSvm(bm) = &m else {
        unreachable!()
    };
    for s in &ds.samples[..5] {
        assert_eq!(back.predict(s).unwrap(), m.predict(s).unwrap());
        let e = m.explain(s).unwrap();
        assert_eq!(e.contributions.len(), small.len());
        let sum: f64 = e.contributions.iter().map(|c| c.contribution).sum::<f64>()
            + bm.model.binary().unwrap().bias;
        assert!((sum - e.prediction.scores[1]).abs() < 1e-9);
    }
    let bad = Model::fit(
        &small,
        &FitParams {
            kind: ModelKind::Miordm,
            ..FitParams::default()
        },
    )
    .unwrap()
    .to_json()
    .replacen("\"kind\": \"miordm\"", "\"kind\": \"nonsense\"", 1);
    assert!(Model::from_json(&bad).is_err());
}

/// Transduction (Tao et al. section 5.3): the unlabeled bags given to the fit join the
/// empirical map's reference bags; without the flag they are ignored.
#[test]
fn transductive_box_kernel_takes_the_unlabeled_bags_as_references() {
    let ds = common::load("musk1.csv");
    let train = ds.subset(&(0..ds.len()).step_by(3).collect::<Vec<_>>());
    let unlabeled: Vec<Sample> = ds.samples[1..11].to_vec();
    for transductive in [false, true] {
        let mut p = FitParams {
            kind: ModelKind::Boxsvm,
            ..FitParams::default()
        };
        p.boxkernel.transductive = transductive;
        let m = Model::fit_with_unlabeled(&train, &p, &unlabeled).unwrap();
        let Model::BoxSvm(bm) = &m else {
            unreachable!()
        };
        let want = train.len() + if transductive { unlabeled.len() } else { 0 };
        let machine = bm.model.binary().unwrap();
        assert_eq!(machine.reference.len(), want);
        assert_eq!(machine.weights.len(), want);
    }
}
