//! The optional pre-coding transform of an index: center by the dataset mean, zero-pad to a
//! size the Hadamard transform supports, and apply a seeded randomized Hadamard rotation.

use crate::Result;

use self::shim::{next_supported_size, RandomizedHadamard};

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

/// A private stand-in with exactly the interface of `crate::hadamard` (power-of-two sizes,
/// orthonormal), used until that module's Rust API is merged.
mod shim {
    use crate::rng::counter_sign_negative;
    use crate::Result;

    pub fn next_supported_size(n: usize) -> usize {
        n.max(1).next_power_of_two()
    }

    pub struct RandomizedHadamard {
        n: usize,
        signs: Vec<Vec<f32>>,
    }

    impl RandomizedHadamard {
        pub fn new(n: usize, seed: u64, blocks: usize, _group: Option<usize>) -> Result<Self> {
            crate::ensure!(n.is_power_of_two(), "n", "{n} is not a power of two");
            let signs = (0..blocks)
                .map(|b| {
                    (0..n)
                        .map(|i| {
                            if counter_sign_negative(seed, b as u64, i as u64) {
                                -1.0
                            } else {
                                1.0
                            }
                        })
                        .collect()
                })
                .collect();
            Ok(RandomizedHadamard { n, signs })
        }

        pub fn forward_inplace_f32(&self, rows: &mut [f32]) -> Result<()> {
            let scale = 1.0 / (self.n as f32).sqrt();
            for row in rows.chunks_exact_mut(self.n) {
                for s in &self.signs {
                    for (v, g) in row.iter_mut().zip(s) {
                        *v *= g;
                    }
                    let mut h = 1;
                    while h < self.n {
                        for i in (0..self.n).step_by(2 * h) {
                            for j in i..i + h {
                                let (a, b) = (row[j], row[j + h]);
                                row[j] = a + b;
                                row[j + h] = a - b;
                            }
                        }
                        h *= 2;
                    }
                    row.iter_mut().for_each(|v| *v *= scale);
                }
            }
            Ok(())
        }
    }
}
