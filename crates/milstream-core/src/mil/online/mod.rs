//! Online scoring: a series model's windows scored as points arrive, exactly as the offline
//! scorer would (`incremental`), with the sliding maxima and sums it keeps (`blockmax`,
//! `rowsum`), its lanes of new subsequences (`lanes`) and the plan derived once per model
//! (`derived`).

pub(crate) mod blockmax;
pub mod derived;
pub mod incremental;
pub(crate) mod lanes;
pub(crate) mod rowsum;
