//! What the configuration reads from the environment, and what it must not show.
//!
//! Every string of the file may hold `${VAR}` or `${VAR:-default}` ([`super::expand_env`]),
//! expanded when the daemon loads it ([`super::Config::load`]) so secrets (a SASL password,
//! an object-store key) come from the environment, e.g. a Kubernetes Secret, rather than
//! the file. [`super::Config::parse`] leaves them as written, so a ConfigMap parses the same
//! anywhere. The values of secret settings are redacted in `Debug` and masked in what the
//! probes answer ([`Secrets`]).

use std::collections::BTreeMap;

use super::{KafkaConfig, StoreOptions};

/// Replaces every `${VAR}` in `text` with that environment variable, and `${VAR:-default}`
/// with `default` when VAR is unset or empty. An unset `${VAR}` (no default) is an error
/// naming it: expanding it to "" would, say, give every pod the same `instance_id`. A `${`
/// without its `}` stays as written.
pub fn expand_env(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        let Some(j) = rest[i + 2..].find('}') else {
            break;
        };
        out.push_str(&rest[..i]);
        let inner = &rest[i + 2..i + 2 + j];
        rest = &rest[i + 3 + j..];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (std::env::var(name), default) {
            (Ok(v), Some(d)) if v.is_empty() => out.push_str(d),
            (Ok(v), _) => out.push_str(&v),
            (Err(_), Some(d)) => out.push_str(d),
            (Err(e), None) => {
                return Err(format!(
                    "environment variable {name:?} in {text:?}: {e} (write ${{{name}:-default}} for a default)"
                ))
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Whether a setting named `key` holds a secret: its value is redacted wherever the
/// configuration is shown (librdkafka's `sasl.password`, `sasl.jaas.config`,
/// `ssl.key.password`, `ssl.key.pem`, `sasl.oauthbearer.client.secret`, tokens, ...).
pub fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    ["password", "secret", "sasl.jaas", "token", "key"]
        .iter()
        .any(|w| key.contains(w))
}

/// `[object_store]` serialized as its `Debug` shows it: the keys, never the values.
impl serde::Serialize for StoreOptions {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.keys().map(|k| (k, "<redacted>")))
    }
}

/// Serializes `kafka.properties` as `Debug` shows them: the values of secret keys redacted,
/// so a serialized configuration never carries a secret.
pub(super) fn serialize_properties<S: serde::Serializer>(
    properties: &BTreeMap<String, String>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_map(properties.iter().map(|(k, v)| {
        let v = if is_secret_key(k) { "<redacted>" } else { v };
        (k, v)
    }))
}

/// Expands `${VAR}` and `${VAR:-default}` in every string of `value` (keys stay as written);
/// true when something changed. An unset variable without a default is an error naming the
/// key path (`kafka.properties."sasl.password"`) and the variable.
pub fn expand_tree(value: &mut toml::Value, path: &str) -> Result<bool, (String, String)> {
    match value {
        toml::Value::String(s) if s.contains("${") => {
            let expanded = expand_env(s).map_err(|e| (path.to_string(), e))?;
            let changed = expanded != *s;
            *s = expanded;
            Ok(changed)
        }
        toml::Value::Array(items) => {
            let mut changed = false;
            for (i, v) in items.iter_mut().enumerate() {
                changed |= expand_tree(v, &format!("{path}[{i}]"))?;
            }
            Ok(changed)
        }
        toml::Value::Table(table) => {
            let mut changed = false;
            for (k, v) in table.iter_mut() {
                let key = if k.contains('.') {
                    format!("{k:?}")
                } else {
                    k.clone()
                };
                let at = if path.is_empty() {
                    key
                } else {
                    format!("{path}.{key}")
                };
                changed |= expand_tree(v, &at)?;
            }
            Ok(changed)
        }
        _ => Ok(false),
    }
}

impl std::fmt::Debug for KafkaConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Destructured: a new field does not compile until it is shown (or hidden) here.
        let KafkaConfig {
            bootstrap_servers,
            group_id,
            points_topic,
            bags_topic,
            labels_topic,
            models_topic,
            embedded_partitions,
            instance_id,
            properties,
        } = self;
        let shown = |(k, v): (&String, &String)| {
            let v = if is_secret_key(k) { "<redacted>" } else { v };
            (k.clone(), v.to_string())
        };
        let properties: BTreeMap<String, String> = properties.iter().map(shown).collect();
        f.debug_struct("KafkaConfig")
            .field("bootstrap_servers", bootstrap_servers)
            .field("group_id", group_id)
            .field("points_topic", points_topic)
            .field("bags_topic", bags_topic)
            .field("labels_topic", labels_topic)
            .field("models_topic", models_topic)
            .field("embedded_partitions", embedded_partitions)
            .field("instance_id", instance_id)
            .field("properties", &properties)
            .finish()
    }
}

/// The secret values of a configuration, to mask in text that may quote them (an error
/// message quoting a setting). Values shorter than [`Secrets::MIN_LEN`] are not masked:
/// masking every "1" of a message would hide more than it protects.
#[derive(Clone, Default)]
pub struct Secrets(Vec<String>);

impl Secrets {
    pub const MIN_LEN: usize = 4;

    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut v: Vec<String> = values
            .into_iter()
            .filter(|s| s.len() >= Self::MIN_LEN)
            .collect();
        // Longest first: a secret containing another is masked whole.
        v.sort_by_key(|s| std::cmp::Reverse(s.len()));
        v.dedup();
        Secrets(v)
    }

    /// `text` with every secret value replaced by `<redacted>`.
    pub fn mask(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.0 {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "<redacted>");
            }
        }
        out
    }
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets(<{} redacted>)", self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_keys_are_recognized() {
        for k in [
            "sasl.password",
            "sasl.jaas.config",
            "ssl.key.password",
            "ssl.key.pem",
            "sasl.oauthbearer.client.secret",
            "aws_secret_access_key",
            "SASL.PASSWORD",
        ] {
            assert!(is_secret_key(k), "{k}");
        }
        for k in ["sasl.username", "security.protocol", "sasl.mechanism"] {
            assert!(!is_secret_key(k), "{k}");
        }
    }

    #[test]
    fn masking_hides_every_secret_value() {
        let s = Secrets::new(["hunter2-long".to_string(), "ab".to_string()]);
        assert_eq!(
            s.mask("auth failed for hunter2-long (ab)"),
            "auth failed for <redacted> (ab)"
        );
        assert!(!format!("{s:?}").contains("hunter2"));
    }
}
