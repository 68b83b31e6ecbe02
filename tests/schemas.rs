//! The JSON Schemas in `schemas/` against an independent validator (the `jsonschema` crate,
//! draft 2020-12), and the daemon's decoder against the same records: every good record is
//! valid under its schema and decodes; every bad one is invalid and is rejected. The output
//! records the daemon writes validate against their schemas.

use milstream::stream::ingest::record::{decode, DecodeLimits, RecordKind};
use serde_json::{json, Value};

const LIMITS: DecodeLimits = DecodeLimits {
    max_message_bytes: 1 << 20,
    max_bag_instances: 10_000,
    max_id_bytes: 256,
};

fn validator(name: &str) -> jsonschema::Validator {
    let path = format!("{}/schemas/{name}.schema.json", env!("CARGO_MANIFEST_DIR"));
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Good records are schema-valid and decode; bad ones are schema-invalid and rejected.
fn agree(name: &str, kind: RecordKind, good: &[Value], bad: &[Value]) {
    let v = validator(name);
    for g in good {
        let errors: Vec<String> = v.iter_errors(g).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{name}: {g} should be valid: {errors:?}");
        let out = decode(kind, g.to_string().as_bytes(), &LIMITS);
        assert!(
            matches!(out.as_slice(), [Ok(_)]),
            "{name}: {g} is valid but the decoder gave {out:?}"
        );
    }
    for b in bad {
        assert!(!v.is_valid(b), "{name}: {b} should be invalid");
        let out = decode(kind, b.to_string().as_bytes(), &LIMITS);
        assert!(
            matches!(out.as_slice(), [Err(_)]),
            "{name}: {b} is invalid but the decoder gave {out:?}"
        );
    }
}

#[test]
fn points() {
    agree(
        "point",
        RecordKind::Point,
        &[
            json!({"series_id": "pump-7", "ts": 1732550400123i64, "value": 0.53}),
            json!({"series_id": "p", "ts": "2024-11-25T16:00:00Z", "value": -1}),
            json!({"series_id": "p", "ts": 0, "values": [2.5]}),
            // One number per channel; the count is checked against the model downstream.
            json!({"series_id": "p", "ts": 1, "values": [1.0, 2.0]}),
            json!({"series_id": "p", "ts": 5, "value": 1.0, "site": "north"}),
            // A model named by the record; null names none.
            json!({"series_id": "p", "ts": 5, "value": 1.0, "model": "fans"}),
            json!({"series_id": "p", "ts": 5, "value": 1.0, "model": null}),
        ],
        &[
            json!({"ts": 1, "value": 0.5}),
            json!({"series_id": "", "ts": 1, "value": 0.5}),
            json!({"series_id": 7, "ts": 1, "value": 0.5}),
            json!({"series_id": "p", "value": 0.5}),
            json!({"series_id": "p", "ts": 1.5, "value": 0.5}),
            json!({"series_id": "p", "ts": 1, "value": "0.5"}),
            json!({"series_id": "p", "ts": 1}),
            json!({"series_id": "p", "ts": 1, "value": 0.5, "values": [0.5]}),
            json!({"series_id": "p", "ts": 1, "values": []}),
            json!({"series_id": "p", "ts": 1, "value": 0.5, "model": ""}),
            json!({"series_id": "p", "ts": 1, "value": 0.5, "model": 7}),
            json!(7),
        ],
    );
}

#[test]
fn bags() {
    agree(
        "bag",
        RecordKind::Bag,
        &[
            json!({"bag_id": "mol-12", "instances": [[0.1, 0.4], [0.3, 0.0]], "label": "active"}),
            json!({"bag_id": "b", "instances": [[1]]}),
            json!({"bag_id": "b", "instances": [[1]], "model": "molecules"}),
        ],
        &[
            json!({"instances": [[1.0]]}),
            json!({"bag_id": "", "instances": [[1.0]]}),
            json!({"bag_id": "b"}),
            json!({"bag_id": "b", "instances": []}),
            json!({"bag_id": "b", "instances": [[]]}),
            json!({"bag_id": "b", "instances": [["x"]]}),
            json!({"bag_id": "b", "instances": [1.0, 2.0]}),
            json!({"bag_id": "b", "instances": [[1.0]], "label": 3}),
            json!({"bag_id": "b", "instances": [[1.0]], "model": ""}),
            json!({"bag_id": "b", "instances": [[1.0]], "model": ["m"]}),
        ],
    );
}

#[test]
fn labels() {
    agree(
        "label",
        RecordKind::Label,
        &[
            json!({"series_id": "pump-7", "start": 1, "end": 2, "label": "walking"}),
            json!({"series_id": "p", "start": "2024-11-25T16:00:00Z", "end": "2024-11-25T16:01:00Z", "label": "x"}),
            json!({"bag_id": "mol-12", "label": "active"}),
            json!({"series_id": "p", "start": 1, "end": 2, "label": "x", "model": "fans"}),
            json!({"bag_id": "mol-12", "label": "active", "model": "molecules"}),
        ],
        &[
            json!({"series_id": "p", "start": 1, "end": 2}),
            json!({"series_id": "p", "start": 1, "label": "x"}),
            json!({"bag_id": "b", "series_id": "p", "start": 1, "end": 2, "label": "x"}),
            json!({"label": "x"}),
            json!({"bag_id": "b", "label": ""}),
            json!({"bag_id": "b", "label": 1}),
            json!({"bag_id": "b", "label": "x", "model": ""}),
            json!({"bag_id": "b", "label": "x", "model": 1}),
        ],
    );
}

/// What the daemon writes validates, and the schemas reject a row missing a required field.
#[test]
fn output_records() {
    use milstream::stream::ingest::record::{
        DeadLetterRecord, DeadReason, FindingSummary, PredictionRecord, Rejected,
    };
    let prediction = PredictionRecord {
        key: "pump-7".into(),
        kind: "window".into(),
        window_start_ms: Some(1),
        window_end_ms: Some(2),
        label: "1".into(),
        classes: vec!["1".into(), "2".into()],
        scores: vec![0.2, -0.1],
        model_kind: "lpboost".into(),
        model_name: "series".into(),
        model_version: "v000001-abc".into(),
        top: vec![],
        findings: Some(vec![FindingSummary {
            text: "matches a pattern at 3-12 (raw d1)".into(),
            asserts: "match".into(),
            verdict: None,
            value: 0.4,
            start: 3,
            end: 12,
            hypotheses: 1,
            channel: None,
        }]),
        shown_share: Some(1.0),
        probabilities: vec![0.9, 0.1],
        source_topic: "milstream.points".into(),
        source_partition: 0,
        source_offset: 9,
        first_offset: 1,
        emitted_at_ms: 3,
    };
    let dead = DeadLetterRecord::new(
        "milstream.points",
        0,
        4,
        &Rejected {
            reason: DeadReason::Unjoined,
            detail: "x".into(),
        },
        b"{}",
        5,
    );
    for (name, value) in [
        ("prediction", serde_json::to_value(&prediction).unwrap()),
        ("dead_letter", serde_json::to_value(&dead).unwrap()),
    ] {
        let v = validator(name);
        let errors: Vec<String> = v.iter_errors(&value).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{name}: {value}: {errors:?}");
        let mut broken = value.clone();
        let first_required = serde_json::from_str::<Value>(
            &std::fs::read_to_string(format!(
                "{}/schemas/{name}.schema.json",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap(),
        )
        .unwrap()["required"][0]
            .as_str()
            .unwrap()
            .to_string();
        broken.as_object_mut().unwrap().remove(&first_required);
        assert!(!v.is_valid(&broken), "{name} without {first_required}");
    }
}
