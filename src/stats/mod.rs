//! The Stats engine: pstats' model and reports in Rust.
//!
//! - `model`: the stats dict (ordered, interned), `add`, `strip_dirs`, callees, totals;
//! - `load`: stats-file bytes straight into the model;
//! - `sort`: `sort_stats`' comparison; `select`: restriction patterns for the `regex` crate;
//! - `report`: the printed lines; `dump`: marshal bytes of the model;
//! - `pickle`: the model as a pickle payload and back (`payload`: the frame and column types);
//! - `top`: the heaviest functions as a smaller model (a report that must stay small).

pub mod decode;
pub mod dump;
pub mod load;
pub mod model;
pub mod payload;
pub mod pickle;
pub mod report;
pub mod select;
pub mod sort;
pub mod top;
