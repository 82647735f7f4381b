//! Binary-quantized graph index (QuIVer, arXiv 2605.02171) with Vamana construction
//! (DiskANN) in sign-magnitude code space, exact float32 reranking, deletions, and a
//! persistent file format. See `python/ordcore/ann.py` for the public contract.
//!
//! Submodules: [`codes`] (code layout and distance), [`graph`] (beam search, RobustPrune),
//! [`rotation`] (centering + randomized Hadamard), [`format`] (the file format).
//! [`index`] (state and ids), [`build`] (construction, `compact`), [`search`] (search and
//! exact search), [`order`] (neighbour-list order, search-time degree bound), [`renumber`]
//! (graph-order node numbering of 4- and 8-bit indexes), [`metric`]
//! (distance conventions), [`fitness`] (code-space fitness).

#[macro_use]
mod dispatch;

mod build;
pub mod codes;
mod encode;
pub mod fitness;
pub mod format;
pub mod graph;
mod huge;
mod index;
mod metric;
mod order;
mod renumber;
pub mod rotation;
mod search;
pub mod sq;
pub mod store;

pub use encode::encode;
pub use fitness::fitness_recall;
pub use index::{slack_degree, BQGraphIndex, Filter, Params, Progress, Vectors};
pub use metric::{float_distance, validate_rows, Metric, MAX_SQUARED_NORM};
pub use search::{exact_search, SearchResult};

#[cfg(test)]
mod tests;
