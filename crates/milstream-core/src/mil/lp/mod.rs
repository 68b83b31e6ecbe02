//! The linear programs: LPBoost's master kept in a bounded-variable revised simplex between
//! rounds (`simplex`, its basis inverse and dense rows, `warm_master`), which spaces a round
//! prices (`pricing`), and a builder over Clarabel for the LPs and SOCPs solved from scratch
//! (`solver`).

pub(crate) mod basis_inverse;
pub(crate) mod dense_rows;
pub mod pricing;
pub mod simplex;
pub mod solver;
pub(crate) mod warm_master;
