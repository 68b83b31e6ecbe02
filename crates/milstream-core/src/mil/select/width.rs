//! The Gaussian width of a shapelet model chosen by inner cross-validation on its training
//! set (issue 26: MUSK1 on 9 features wants the median-heuristic width, on 166 features a
//! kernel 4 x narrower; no single width holds on both). The other way, every width a
//! hypothesis space of one model, is in `shapelet.rs` (the union class of Algorithm 1).

use rayon::prelude::*;

use crate::mil::bag::Dataset;
use crate::mil::cancel::Cancel;
use crate::mil::error::Result;
use crate::mil::params::{FitParams, KernelSpec};
use crate::mil::select::folds::stratified_folds;
use crate::mil::shapelet::ShapeletModel;
use crate::mil::space::prepare::Prepared;

impl ShapeletModel {
    /// The scale of the best accuracy over `folds` stratified folds of `train` (ties to
    /// the earlier scale), and every scale's accuracy. Each inner fit reads the outer
    /// preparation's instances of its training examples and the same representatives: that
    /// part is label-free, so no held-out label reaches a fit, and k-means runs once. With
    /// a class of fewer than two examples there is nothing to hold out: the first scale.
    pub(crate) fn width_by_inner_cv(
        prepared: &Prepared,
        train: &Dataset,
        scales: &[f64],
        folds: usize,
        params: &FitParams,
        cancel: Cancel,
    ) -> Result<(f64, Vec<(f64, f64)>)> {
        let n = train.len();
        let fewest = train
            .classes()
            .iter()
            .map(|c| train.labels.iter().filter(|l| *l == c).count())
            .min()
            .unwrap_or(0);
        // Each class has at least `folds` examples, so every inner training set keeps
        // every class (the folds deal each class round-robin).
        let folds = folds.min(fewest);
        if folds < 2 {
            return Ok((scales[0], Vec::new()));
        }
        let splits: Vec<(Prepared, Vec<String>, Vec<usize>)> =
            stratified_folds(&train.labels, folds, params.seed)?
                .into_iter()
                .map(|test| {
                    let keep: Vec<usize> =
                        (0..n).filter(|i| test.binary_search(i).is_err()).collect();
                    let labels = keep.iter().map(|&i| train.labels[i].clone()).collect();
                    (prepared.subset(&keep), labels, test)
                })
                .collect();
        let jobs: Vec<(usize, usize)> = (0..scales.len())
            .flat_map(|s| (0..folds).map(move |f| (s, f)))
            .collect();
        let hits: Vec<usize> = jobs
            .par_iter()
            .map(|&(s, f)| {
                let p = FitParams {
                    kernel: KernelSpec::Gaussian {
                        sigma: None,
                        scale: scales[s],
                    },
                    widths: None,
                    ..params.clone()
                };
                let (sub, labels, test) = &splits[f];
                let m = Self::fit_labelled(sub, labels, &p, cancel)?;
                let mut hits = 0;
                for &i in test {
                    hits += usize::from(m.predict(&train.samples[i])?.label == train.labels[i]);
                }
                Ok(hits)
            })
            .collect::<Result<_>>()?;
        // Accuracy over every held-out example.
        let accuracies: Vec<(f64, f64)> = scales
            .iter()
            .zip(hits.chunks(folds))
            .map(|(&scale, h)| (scale, h.iter().sum::<usize>() as f64 / n as f64))
            .collect();
        let mut best = 0;
        for (i, a) in accuracies.iter().enumerate() {
            if a.1 > accuracies[best].1 + 1e-12 {
                best = i;
            }
        }
        Ok((scales[best], accuracies))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mil::bag::{Bag, Sample};
    use crate::mil::params::{WidthChoice, Widths};
    use crate::mil::space::prepare::prepare;

    /// Two classes of 3-feature bags: a positive bag holds one instance near (2, 2, 2)
    /// among noise, a negative bag noise only (a fixed linear congruential draw).
    fn bags(n: usize) -> Dataset {
        let mut u = crate::mil::test_draws::uniform(12345);
        let mut next = || u() * 2.0 - 1.0;
        let (mut samples, mut labels) = (Vec::new(), Vec::new());
        for i in 0..n {
            let positive = i % 2 == 0;
            let mut data: Vec<f64> = (0..5 * 3).map(|_| next()).collect();
            if positive {
                for v in &mut data[..3] {
                    *v = 2.0 + 0.3 * *v;
                }
            }
            samples.push(Sample::Bag(Bag::new(3, data).unwrap()));
            labels.push(if positive { "1" } else { "0" }.to_string());
        }
        Dataset {
            ids: (0..n).map(|i| i.to_string()).collect(),
            samples,
            labels,
            channels: Vec::new(),
        }
    }

    fn with_widths(scales: &[f64], choice: WidthChoice) -> FitParams {
        FitParams {
            widths: Some(Widths {
                scales: scales.to_vec(),
                choice,
            }),
            k: Some(12),
            ..FitParams::for_bags()
        }
    }

    fn at_scale(scale: f64) -> FitParams {
        FitParams {
            kernel: KernelSpec::Gaussian { sigma: None, scale },
            k: Some(12),
            widths: None,
            ..FitParams::for_bags()
        }
    }

    /// The inner cross-validation returns one of its scales with every scale's accuracy,
    /// and the model is the fit at that scale, the same as asking for it directly.
    #[test]
    fn inner_cv_fits_at_the_scale_it_chose() {
        let ds = bags(24);
        let p = with_widths(&[4.0, 1.0, 0.25], WidthChoice::InnerCv { folds: 3 });
        let m = ShapeletModel::fit(&ds, &p).unwrap();
        let scales: Vec<f64> = m.summary.width_accuracies.iter().map(|a| a.0).collect();
        assert_eq!(scales, vec![4.0, 1.0, 0.25]);
        let KernelSpec::Gaussian { scale, .. } = m.params.kernel else {
            panic!("a Gaussian stays Gaussian")
        };
        let best = m
            .summary
            .width_accuracies
            .iter()
            .map(|a| a.1)
            .fold(f64::MIN, f64::max);
        let first_best = m
            .summary
            .width_accuracies
            .iter()
            .find(|a| a.1 == best)
            .unwrap();
        assert_eq!(scale, first_best.0, "ties go to the earlier scale");
        let direct = ShapeletModel::fit(&ds, &at_scale(scale)).unwrap();
        assert_eq!(m.ensembles, direct.ensembles);
        assert_eq!(m.spaces, direct.spaces);
    }

    /// With a class of one example nothing can be held out: the first scale, no search.
    #[test]
    fn inner_cv_with_a_single_example_of_a_class_takes_the_first_scale() {
        let mut ds = bags(12);
        let one = ds.labels.iter().position(|l| l == "1").unwrap();
        let keep: Vec<usize> = (0..ds.len())
            .filter(|&i| i == one || ds.labels[i] == "0")
            .collect();
        ds = ds.subset(&keep);
        let p = with_widths(&[2.0, 1.0], WidthChoice::InnerCv { folds: 3 });
        let m = ShapeletModel::fit(&ds, &p).unwrap();
        assert!(m.summary.width_accuracies.is_empty());
        assert_eq!(
            m.params.kernel,
            KernelSpec::Gaussian {
                sigma: None,
                scale: 2.0
            }
        );
    }

    /// Widths as spaces: one space per width over the same representatives, each at its
    /// multiple of the median-heuristic sigma; a single width is the plain fit.
    #[test]
    fn widths_as_spaces_are_spaces_of_one_model() {
        let ds = bags(24);
        let m = ShapeletModel::fit(&ds, &with_widths(&[4.0, 1.0], WidthChoice::Spaces)).unwrap();
        assert_eq!(m.spaces.len(), 2);
        let sigma = |k: &crate::mil::Kernel| match *k {
            crate::mil::Kernel::Gaussian { sigma } => sigma,
            _ => panic!("a Gaussian"),
        };
        let ratio = sigma(&m.spaces[0].kernel) / sigma(&m.spaces[1].kernel);
        assert!((ratio - 4.0).abs() < 1e-9, "{ratio}");
        let prepared = prepare(&ds, &at_scale(1.0)).unwrap();
        assert_eq!(m.summary.instances_per_space, vec![120, 120]);
        assert_eq!(prepared.spaces.len(), 1);
        for (s, sample) in ds.samples.iter().enumerate() {
            assert!(
                ds.classes().contains(&m.predict(sample).unwrap().label),
                "{s}"
            );
        }
        let one = ShapeletModel::fit(&ds, &with_widths(&[1.0], WidthChoice::Spaces)).unwrap();
        let plain = ShapeletModel::fit(&ds, &at_scale(1.0)).unwrap();
        assert_eq!(one.ensembles, plain.ensembles);
        assert_eq!(one.spaces, plain.spaces);
    }

    #[test]
    fn widths_are_checked() {
        let bad = |scales: &[f64], choice| with_widths(scales, choice).validate().is_err();
        assert!(bad(&[], WidthChoice::Spaces));
        assert!(bad(&[1.0, 0.0], WidthChoice::Spaces));
        assert!(bad(&[1.0, f64::NAN], WidthChoice::Spaces));
        assert!(bad(&[1.0], WidthChoice::InnerCv { folds: 1 }));
        assert!(!bad(&[4.0, 1.0], WidthChoice::InnerCv { folds: 2 }));
    }
}
