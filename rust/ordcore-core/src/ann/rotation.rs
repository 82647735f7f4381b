//! The optional pre-coding transform of an index: center by the dataset mean, zero-pad to a
//! size the Hadamard transform supports (`crate::hadamard::next_supported_size`: `K * 2^k`
//! for the base orders `K` of that module), and apply `crate::hadamard::RandomizedHadamard`
//! with [`ROTATION_BLOCKS`] rounds seeded by the index seed.

use crate::Result;

use crate::hadamard::{next_supported_size, RandomizedHadamard};

/// Number of random-sign + Hadamard rounds of the rotation.
pub const ROTATION_BLOCKS: usize = 2;

/// Center, pad and rotate (see the module docs).
pub struct Rotation {
    dim: usize,
    padded: usize,
    seed: u64,
    mean: Vec<f32>,
    had: RandomizedHadamard,
}

impl Rotation {
    /// A rotation of dimension `dim` around `mean` (length `dim`).
    pub fn new(dim: usize, seed: u64, mean: Vec<f32>) -> Result<Self> {
        let padded = next_supported_size(dim);
        let had = RandomizedHadamard::new(padded, seed, ROTATION_BLOCKS, None)?;
        Ok(Rotation {
            dim,
            padded,
            seed,
            mean,
            had,
        })
    }
    /// The dimension of rotated vectors (codes are built at this dimension).
    pub fn padded_dim(&self) -> usize {
        self.padded
    }
    /// The seed of the Hadamard signs.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// The centering mean.
    pub fn mean(&self) -> &[f32] {
        &self.mean
    }
    /// Writes the transformed `x` (length `dim`) into `out` (length `padded_dim`).
    pub fn apply(&self, x: &[f32], out: &mut [f32]) -> Result<()> {
        for i in 0..self.dim {
            out[i] = x[i] - self.mean[i];
        }
        out[self.dim..].iter_mut().for_each(|v| *v = 0.0);
        self.had.forward_inplace_f32(out)
    }
}
