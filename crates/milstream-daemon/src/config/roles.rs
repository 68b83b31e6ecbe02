//! What the processes of one deployment may and may not share: checked when a
//! configuration loads, so a topology that would lose or half-assign data never starts.

use std::path::Path;

use super::{Config, Role};

impl Config {
    /// Incremental rebalancing (`cooperative-sticky`, KIP-848's `group.protocol = consumer`)
    /// hands over and takes back some partitions at a time; the rebalance callbacks replace
    /// the whole assignment (eager), so under it a partial revoke would drop every
    /// partition. Refused here rather than half-assigned there.
    pub(super) fn check_rebalance_protocol(&self) -> Result<(), (&'static str, String)> {
        let props = &self.kafka.properties;
        if let Some(s) = props.get("partition.assignment.strategy") {
            if s.to_ascii_lowercase().contains("cooperative") {
                return Err((
                    "kafka.properties.partition.assignment.strategy",
                    format!(
                        "{s:?}: incremental (cooperative) rebalancing is not supported; use \
                         `range` or `roundrobin` (eager), or leave it unset"
                    ),
                ));
            }
        }
        if let Some(p) = props.get("group.protocol") {
            if !p.eq_ignore_ascii_case("classic") {
                return Err((
                    "kafka.properties.group.protocol",
                    format!(
                        "{p:?}: the consumer group protocol of KIP-848 rebalances \
                         incrementally, which is not supported; use `classic` or leave it unset"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The training store is swept per partition over its whole tree; inside `output.dir`
    /// (or holding it) that sweep would reach files another role wrote and committed.
    pub(super) fn check_output_trees(&self) -> Result<(), (&'static str, String)> {
        let trains = self.training.enabled && self.pipeline.role != Role::Scorer;
        if !trains {
            return Ok(());
        }
        let (out, train) = (&self.output.dir, &self.training.dir);
        let key = |p: &Path| {
            let s = p.to_string_lossy();
            format!("{}/", s.trim_end_matches('/'))
        };
        let (o, t) = (key(out), key(train));
        if o.starts_with(&t) || t.starts_with(&o) {
            return Err((
                "training.dir",
                format!(
                    "training.dir ({}) and output.dir ({}) overlap: each tree is swept by the \
                     role that writes it, so they must be disjoint folders",
                    train.display(),
                    out.display()
                ),
            ));
        }
        Ok(())
    }
}
