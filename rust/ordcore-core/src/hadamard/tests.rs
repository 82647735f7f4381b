use super::*;
use kernel::{level, Level, Real};
use proptest::prelude::*;

/// `x @ H_n` by the dense matrix, in f64.
fn dense(x: &[f64], n: usize, transpose: bool) -> Vec<f64> {
    let h = hadamard_matrix(n).unwrap();
    let rows = x.len() / n;
    let mut out = vec![0.0; x.len()];
    for r in 0..rows {
        for j in 0..n {
            out[r * n + j] = (0..n)
                .map(|i| {
                    let e = if transpose {
                        h[j * n + i]
                    } else {
                        h[i * n + j]
                    };
                    x[r * n + i] * f64::from(e)
                })
                .sum();
        }
    }
    out
}

fn close(a: &[f64], b: &[f64], tol: f64) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= tol * (1.0 + y.abs()))
}

fn test_vec(len: usize, salt: u64) -> Vec<f64> {
    (0..len as u64)
        .map(|i| crate::rng::counter_f64(salt, 9, i) * 2.0 - 1.0)
        .collect()
}

#[test]
fn sizes() {
    for n in [1, 2, 4, 12, 24, 40, 80, 96, 160, 11008, 14336, 172 * 2, 156] {
        assert!(is_supported_size(n), "{n}");
    }
    for n in [0, 3, 5, 6, 10, 137, 44, 88] {
        assert!(!is_supported_size(n), "{n}");
    }
    assert_eq!(decompose(40), Some((20, 2)));
    assert_eq!(decompose(11008), Some((172, 64)));
    assert_eq!(next_supported_size(137), 140);
    assert_eq!(prev_supported_size(137), Some(128));
    assert_eq!(next_supported_size(0), 1);
    assert_eq!(next_supported_size(4097), 4480); // 140 * 32
    let s = supported_sizes(64);
    assert_eq!(
        s,
        vec![1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 48, 52, 56, 60, 64]
    );
    for n in 1..3000 {
        let nx = next_supported_size(n);
        assert!(nx >= n && is_supported_size(nx));
        assert!((n..nx).all(|m| !is_supported_size(m)));
    }
    let msg = unsupported_size_error("n", 137).to_string();
    assert!(msg.contains("128") && msg.contains("140"), "{msg}");
}

#[test]
fn fixed_vectors() {
    let mut x: Vec<f64> = (0..8).map(f64::from).collect();
    fwht_inplace(&mut x, 8, false, false).unwrap();
    assert_eq!(x, [28.0, -4.0, -8.0, 0.0, -16.0, 0.0, 0.0, 0.0]);
    let mut y = [4.0f32, 2.0, 2.0, 0.0, 0.0, 2.0, -2.0, 0.0];
    fwht_inplace(&mut y, 8, false, false).unwrap();
    assert_eq!(y, [8.0, 0.0, 8.0, 0.0, 8.0, 8.0, 0.0, 0.0]);
}

#[test]
fn matches_dense_every_k() {
    for &k in &SUPPORTED_K {
        for p in [1usize, 2, 8, 16] {
            let n = k * p;
            let x = test_vec(3 * n, n as u64);
            for inverse in [false, true] {
                let mut y = x.clone();
                fwht_inplace(&mut y, n, false, inverse).unwrap();
                let mut want = dense(&x, n, inverse);
                if inverse {
                    want.iter_mut().for_each(|v| *v /= n as f64);
                }
                assert!(close(&y, &want, 1e-9), "n={n} inverse={inverse}");
                let mut yf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                let src = yf.clone();
                fwht_into(&src, &mut yf, n, false, inverse).unwrap();
                let yf: Vec<f64> = yf.iter().map(|&v| f64::from(v)).collect();
                assert!(close(&yf, &want, 1e-4), "f32 n={n}");
            }
        }
    }
}

#[test]
fn large_pow2_matches_recursive_definition() {
    // H_{2n} = [[H_n, H_n], [H_n, -H_n]]: the transform of (u, v) is (Hu + Hv, Hu - Hv).
    for n in [8192usize, 16384, 32768] {
        let x = test_vec(n, 5);
        let mut y = x.clone();
        fwht_inplace(&mut y, n, false, false).unwrap();
        let (mut u, mut v) = (x[..n / 2].to_vec(), x[n / 2..].to_vec());
        fwht_inplace(&mut u, n / 2, false, false).unwrap();
        fwht_inplace(&mut v, n / 2, false, false).unwrap();
        let want: Vec<f64> = u
            .iter()
            .zip(&v)
            .map(|(a, b)| a + b)
            .chain(u.iter().zip(&v).map(|(a, b)| a - b))
            .collect();
        assert!(close(&y, &want, 1e-12), "n={n}");
    }
}

#[test]
fn parallel_equals_serial() {
    let n = 64;
    let x = test_vec(n * 2000, 1);
    let mut par = x.clone();
    fwht_inplace(&mut par, n, true, false).unwrap();
    let mut ser = x.clone();
    for row in ser.chunks_exact_mut(n) {
        fwht_inplace(row, n, true, false).unwrap();
    }
    assert_eq!(par, ser);
}

#[test]
fn errors_do_not_panic() {
    let mut x = vec![0.0f32; 10];
    assert!(fwht_inplace(&mut x, 10, true, false).is_err());
    assert!(fwht_inplace(&mut x, 4, true, false).is_err());
    assert!(fwht_inplace(&mut x, 0, true, false).is_err());
    assert!(RandomizedHadamard::new(0, 1, 1, None).is_err());
    assert!(RandomizedHadamard::new(16, 1, 0, None).is_err());
    assert!(RandomizedHadamard::new(16, 1, 65, None).is_err());
    assert!(RandomizedHadamard::new(48, 1, 1, Some(32)).is_err());
    assert!(RandomizedHadamard::new(30, 1, 1, Some(10)).is_err());
    assert!(RandomizedHadamard::new(30, 1, 1, None).is_err());
    assert!(RandomizedHadamard::new(96, 1, 1, Some(0)).is_err());
    let rh = RandomizedHadamard::new(96, 1, 1, Some(32)).unwrap();
    assert!(rh.forward_inplace_f32(&mut x).is_err());
    assert!(srht_indices(8, 9, 0).is_err());
    assert!(srht_indices(8, 0, 0).is_err());
    assert!(hadamard_matrix(1 << 15).is_err());
}

#[test]
fn randomized_signs_follow_the_counter_generator() {
    let rh = RandomizedHadamard::new(96, 42, 3, Some(32)).unwrap();
    for b in 0..3 {
        for (i, &s) in rh.signs(b).iter().enumerate() {
            let neg = counter_sign_negative(42, b as u64, i as u64);
            assert_eq!(s, if neg { -1.0 } else { 1.0 });
        }
    }
    // Ungrouped rotations of the same seed share the sign vectors.
    let u = RandomizedHadamard::new(96, 42, 3, None).unwrap();
    assert_eq!(u.signs(2), rh.signs(2));
}

#[test]
fn randomized_definition_one_block() {
    // forward(x) = (x * s_0) @ H / sqrt(n).
    let n = 160;
    let rh = RandomizedHadamard::new(n, 7, 1, None).unwrap();
    let x = test_vec(n, 3);
    let mut y = x.clone();
    rh.forward_inplace_f64(&mut y).unwrap();
    let sx: Vec<f64> = x.iter().zip(rh.signs(0)).map(|(a, b)| a * b).collect();
    let want: Vec<f64> = dense(&sx, n, false)
        .iter()
        .map(|v| v / (n as f64).sqrt())
        .collect();
    assert!(close(&y, &want, 1e-12));
}

#[test]
fn srht_preserves_norm_in_expectation_over_seeds() {
    let (n, m) = (256, 64);
    let x = test_vec(n, 11);
    let nx: f64 = x.iter().map(|v| v * v).sum();
    let mut acc = 0.0;
    let trials = 400;
    for seed in 0..trials {
        let mut y = vec![0.0; m];
        srht(&x, n, m, seed, &mut y).unwrap();
        acc += y.iter().map(|v| v * v).sum::<f64>();
    }
    let mean = acc / trials as f64;
    assert!((mean / nx - 1.0).abs() < 0.05, "{mean} vs {nx}");
    let idx = srht_indices(n, m, 3).unwrap();
    assert_eq!(idx.len(), m);
    assert!(idx.windows(2).all(|w| w[0] < w[1]) && idx[m - 1] < n);
    // m = n keeps every coordinate: the normalized 1-block rotation.
    let mut full = vec![0.0; n];
    srht(&x, n, n, 3, &mut full).unwrap();
    let mut rot = x.clone();
    RandomizedHadamard::new(n, 3, 1, None)
        .unwrap()
        .forward_inplace_f64(&mut rot)
        .unwrap();
    assert!(close(&full, &rot, 1e-12));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn randomized_round_trip(
        ki in 0usize..SUPPORTED_K.len(),
        logp in 0u32..6,
        blocks in 1usize..4,
        groups in 1usize..4,
        grouped in any::<bool>(),
        seed in any::<u64>(),
        rows in 1usize..4,
    ) {
        let g = SUPPORTED_K[ki] << logp;
        let n = if grouped { g * groups } else { g };
        let rh = RandomizedHadamard::new(n, seed, blocks, grouped.then_some(g)).unwrap();
        let x = test_vec(n * rows, seed);
        let mut y = x.clone();
        rh.forward_inplace_f64(&mut y).unwrap();
        // Orthogonal: norms are preserved per row.
        for (a, b) in x.chunks(n).zip(y.chunks(n)) {
            let (na, nb): (f64, f64) = (a.iter().map(|v| v * v).sum(), b.iter().map(|v| v * v).sum());
            prop_assert!((na - nb).abs() <= 1e-9 * (1.0 + na));
        }
        rh.inverse_inplace_f64(&mut y).unwrap();
        prop_assert!(close(&y, &x, 1e-10));
        let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let mut yf = vec![0.0f32; xf.len()];
        rh.forward_into_f32(&xf, &mut yf).unwrap();
        rh.inverse_inplace_f32(&mut yf).unwrap();
        prop_assert!(xf.iter().zip(&yf).all(|(a, b)| (a - b).abs() < 1e-4));
    }

    #[test]
    fn normalized_is_orthogonal(ki in 0usize..SUPPORTED_K.len(), logp in 0u32..7, seed in any::<u64>()) {
        let n = SUPPORTED_K[ki] << logp;
        let x = test_vec(n, seed);
        let mut y = x.clone();
        fwht_inplace(&mut y, n, true, false).unwrap();
        let (na, nb): (f64, f64) = (x.iter().map(|v| v * v).sum(), y.iter().map(|v| v * v).sum());
        prop_assert!((na - nb).abs() <= 1e-9 * na.max(1.0));
        fwht_inplace(&mut y, n, true, true).unwrap();
        prop_assert!(close(&y, &x, 1e-10));
    }
}

#[test]
fn srht_indices_equal_a_dense_partial_fisher_yates_and_need_no_length_n_buffer() {
    // the definition, with a dense 0..n vector
    fn dense(n: usize, m: usize, seed: u64) -> Vec<usize> {
        let mut perm: Vec<usize> = (0..n).collect();
        for t in 0..m {
            let u = counter_u64(seed, SRHT_SAMPLE_STREAM, t as u64);
            let j = t + ((u128::from(u) * (n - t) as u128) >> 64) as usize;
            perm.swap(t, j);
        }
        perm.truncate(m);
        perm.sort_unstable();
        perm
    }
    for (n, m) in [(1, 1), (8, 8), (64, 5), (4096, 4096), (1000, 999)] {
        for seed in 0..3 {
            assert_eq!(srht_indices(n, m, seed).unwrap(), dense(n, m, seed));
        }
    }
    // a 2**40-long input: the sample of 16 needs no 8 TiB buffer
    let idx = srht_indices(1 << 40, 16, 7).unwrap();
    assert_eq!(idx.len(), 16);
    assert!(idx.windows(2).all(|w| w[0] < w[1]) && idx[15] < 1 << 40);
}

/// Every SIMD path this CPU runs gives the portable loops' result bit for bit (the same
/// additions in the same order), for every power-of-two group size from 1 to 2^17 (below,
/// inside and above one vector, the register block and every radix of the large-stride
/// passes), in place and out of place, with and without signs of every period layout
/// (tiled, row by row, contiguous) and scale, on batches whose length is not a multiple
/// of the register block.
#[test]
fn every_kernel_path_equals_the_portable_loops_bit_for_bit() {
    let paths: Vec<Level> = [Level::Portable, Level::Avx2, Level::Avx512]
        .into_iter()
        .filter(|&l| l <= level())
        .collect();
    fn check<T: Real + std::fmt::Debug>(paths: &[Level], conv: fn(f64) -> T) {
        for lg in 0..=17u32 {
            let g = 1usize << lg;
            // groups per sign period, periods per batch; the last two give periods long
            // enough (64 KiB of float32 signs) for the AVX2 kernels to read lane masks,
            // with every group size, and one not a multiple of a register block
            let long = (16384 / g).max(1);
            for (per_groups, periods) in [
                (1usize, 1usize),
                (1, 3),
                (3, 2),
                (5, 1),
                (1, 37),
                (long, 2),
                (long + 1, 1),
            ] {
                let p = g * per_groups;
                let len = p * periods;
                if len > 1 << 18 {
                    continue;
                }
                let x: Vec<T> = test_vec(len, (lg * 7 + per_groups as u32) as u64)
                    .into_iter()
                    .map(conv)
                    .collect();
                let signs_of = |seed: u64, block: u64| -> Vec<T> {
                    (0..p)
                        .map(|i| {
                            let neg = counter_sign_negative(seed, block, i as u64);
                            conv(if neg { -1.0 } else { 1.0 })
                        })
                        .collect()
                };
                let sg = signs_of(3, 1);
                let s = conv(0.3);
                // Output signs (the last flip of an inverse rotation): another sequence.
                let osg = signs_of(5, 2);
                let (masks, omasks) = (kernel::lane_masks(&sg), kernel::lane_masks(&osg));
                let m = kernel::Signs {
                    vals: &sg[..],
                    masks: Some(&masks[..]),
                };
                let om = kernel::Signs {
                    vals: &osg[..],
                    masks: Some(&omasks[..]),
                };
                let (v, ov) = (kernel::Signs::vals(&sg), kernel::Signs::vals(&osg));
                for (signs, out_signs) in [
                    (None, None),
                    (Some(v), None),
                    (Some(m), None),
                    (None, Some(ov)),
                    (None, Some(om)),
                    (Some(v), Some(ov)),
                    (Some(m), Some(om)),
                ] {
                    let mut want = x.clone();
                    kernel::pow2_rows_at(Level::Portable, None, &mut want, g, signs, s, out_signs);
                    if out_signs.is_some() {
                        // The portable flip is the plain transform times the signs.
                        let mut plain = x.clone();
                        kernel::pow2_rows_at(Level::Portable, None, &mut plain, g, signs, s, None);
                        for (e, w) in plain.iter_mut().enumerate() {
                            *w *= osg[e % p];
                        }
                        assert!(plain == want, "portable flip g={g} p={p} len={len}");
                    }
                    for &lvl in paths {
                        let mut got = x.clone();
                        kernel::pow2_rows_at(lvl, None, &mut got, g, signs, s, out_signs);
                        assert!(got == want, "{lvl:?} in place g={g} p={p} len={len}");
                        let mut out = vec![conv(7.0); len];
                        kernel::pow2_rows_at(lvl, Some(&x), &mut out, g, signs, s, out_signs);
                        assert!(out == want, "{lvl:?} out g={g} p={p} len={len}");
                    }
                }
            }
        }
    }
    check::<f32>(&paths, |v| v as f32);
    check::<f64>(&paths, |v| v);
}

/// The portable loops equal the dense product for every power-of-two size up to 4096
/// (so every path does, by the bit-for-bit test above), with signs and scale.
#[test]
fn portable_rows_equal_dense_with_signs_and_scale() {
    for lg in 0..=12u32 {
        let n = 1usize << lg;
        let x = test_vec(2 * n, lg as u64);
        let sg: Vec<f64> = (0..n)
            .map(|i| {
                if counter_sign_negative(9, 0, i as u64) {
                    -1.0
                } else {
                    1.0
                }
            })
            .collect();
        let mut got = x.clone();
        kernel::pow2_rows_at(
            Level::Portable,
            None,
            &mut got,
            n,
            Some(kernel::Signs::vals(&sg)),
            0.5,
            None,
        );
        let sx: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(i, v)| v * sg[i % n] * 0.5)
            .collect();
        assert!(close(&got, &dense(&sx, n, false), 1e-12), "n={n}");
    }
}

#[test]
fn serial_gives_the_parallel_result_and_resets() {
    let n = 256;
    let x = test_vec(n * 512, 4);
    let mut par = x.clone();
    fwht_inplace(&mut par, n, true, false).unwrap();
    let mut ser = x.clone();
    let on = serial(|| {
        fwht_inplace(&mut ser, n, true, false).unwrap();
        parallel_allowed()
    });
    assert!(!on && parallel_allowed());
    assert_eq!(par, ser);
    let rh = RandomizedHadamard::new(n, 3, 2, None).unwrap();
    let (mut a, mut b) = (x.clone(), vec![0.0; x.len()]);
    rh.forward_inplace_f64(&mut a).unwrap();
    serial(|| rh.forward_into_f64(&x, &mut b)).unwrap();
    assert_eq!(a, b);
}

/// Out-of-place power-of-two transforms of batches beyond 1 MiB (beyond a typical L2
/// cache, where a faster out-of-place schedule would apply) give the bits of the in-place
/// transform: row counts that tasks do not divide, serial and parallel, float32 and
/// float64, `fwht_into` and rotations (one and two blocks, forward and inverse).
#[test]
fn large_out_of_place_equals_in_place() {
    fn check<T: Real + Rotate + std::fmt::Debug>(conv: fn(f64) -> T) {
        let size = std::mem::size_of::<T>();
        for n in [2usize, 16, 256, 1024, 2048, 4096, 32768] {
            // just over the threshold, a row count that tiles and tasks do not divide
            let rows = ((1 << 20) / size / n + 1) | 1;
            let x: Vec<T> = test_vec(rows * n, n as u64).into_iter().map(conv).collect();
            for par in [false, true] {
                let go = |f: &mut dyn FnMut()| if par { f() } else { serial(f) };
                for (normalized, inverse) in [(false, false), (true, true)] {
                    let mut want = x.clone();
                    fwht_inplace(&mut want, n, normalized, inverse).unwrap();
                    let mut got = vec![conv(7.0); x.len()];
                    go(&mut || fwht_into(&x, &mut got, n, normalized, inverse).unwrap());
                    assert!(got == want, "fwht n={n} par={par}");
                }
                for blocks in [1, 2] {
                    let rh = RandomizedHadamard::new(n, 11, blocks, None).unwrap();
                    for inverse in [false, true] {
                        let mut want = x.clone();
                        let mut got = vec![conv(7.0); x.len()];
                        go(&mut || T::rotate(&rh, None, &mut want, inverse));
                        go(&mut || T::rotate(&rh, Some(&x), &mut got, inverse));
                        assert!(got == want, "rotation n={n} blocks={blocks} par={par}");
                    }
                }
            }
        }
    }
    check::<f32>(|v| v as f32);
    check::<f64>(|v| v);
}

/// The typed rotation entry points, for [`large_out_of_place_equals_in_place`].
trait Rotate: Sized {
    fn rotate(rh: &RandomizedHadamard, src: Option<&[Self]>, dst: &mut [Self], inverse: bool);
}

impl Rotate for f32 {
    fn rotate(rh: &RandomizedHadamard, src: Option<&[f32]>, dst: &mut [f32], inverse: bool) {
        match (src, inverse) {
            (None, false) => rh.forward_inplace_f32(dst),
            (None, true) => rh.inverse_inplace_f32(dst),
            (Some(s), false) => rh.forward_into_f32(s, dst),
            (Some(s), true) => rh.inverse_into_f32(s, dst),
        }
        .unwrap()
    }
}

impl Rotate for f64 {
    fn rotate(rh: &RandomizedHadamard, src: Option<&[f64]>, dst: &mut [f64], inverse: bool) {
        match (src, inverse) {
            (None, false) => rh.forward_inplace_f64(dst),
            (None, true) => rh.inverse_inplace_f64(dst),
            (Some(s), false) => rh.forward_into_f64(s, dst),
            (Some(s), true) => rh.inverse_into_f64(s, dst),
        }
        .unwrap()
    }
}
