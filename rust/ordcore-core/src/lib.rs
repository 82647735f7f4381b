//! ordcore-core: the algorithms behind the `ordcore` Python package, in plain Rust.
//!
//! One module per area, mirrored everywhere else in the tree (binding file, Python module,
//! test file, bench script): [`sfc`] (space-filling curves and scan orders), [`hadamard`]
//! (Walsh-Hadamard transforms and randomized rotations), [`packing`] (sequence packing),
//! [`ann`] (binary-quantized graph search). [`rng`] is the counter-based generator every
//! randomized routine draws from, so CPU and GPU paths agree bit for bit.
//!
//! Nothing here knows about Python. Functions validate their inputs and return
//! [`Error`] instead of panicking; parallel loops use rayon inside whatever pool the caller
//! installed.

pub mod ann;
pub mod error;
pub mod gather;
pub mod hadamard;
pub mod interrupt;
pub mod memory;
pub mod packing;
pub mod rng;
pub mod sfc;

pub use error::{human_bytes, Error, Result};

/// Inputs with at least this many work items run on the rayon pool; smaller ones run
/// serially on the calling thread (the pool's wake-up costs more than it saves).
pub const PARALLEL_THRESHOLD: usize = 1 << 14;
