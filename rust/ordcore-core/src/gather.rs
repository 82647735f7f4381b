//! Copying ranges of a flat buffer into one contiguous output: the gather that lays out a
//! ragged column (Arrow list values) in packing-plan order, one `memcpy` per range.

use rayon::prelude::*;

use crate::{ensure, interrupt, memory, Result, PARALLEL_THRESHOLD};

/// Ranges copied per interrupt check and per rayon task.
const CHUNK: usize = 4096;

/// Checks the ranges against `src_len` and returns the number of elements they hold.
fn checked_total(src_len: usize, starts: &[i64], lens: &[i64]) -> Result<u128> {
    ensure!(
        starts.len() == lens.len(),
        "lens",
        "has {} entries for {} starts",
        lens.len(),
        starts.len()
    );
    let mut total: u128 = 0;
    for (i, (&s, &l)) in starts.iter().zip(lens).enumerate() {
        ensure!(
            s >= 0 && l >= 0,
            "starts",
            "range {i} has start {s} and length {l}"
        );
        let end = s as u128 + l as u128;
        ensure!(
            end <= src_len as u128,
            "starts",
            "range {i} ({s}..{end}) is past the end of the {src_len} values"
        );
        total += l as u128;
    }
    Ok(total)
}

/// Writes `src[starts[i] .. starts[i] + lens[i]]` for every `i`, in order, into `out`, whose
/// length must be the sum of `lens` (the caller allocates it: NumPy asks the kernel for huge
/// pages on large arrays, which saves most of the page faults of a fresh buffer).
///
/// Ranges may overlap or repeat. Errors, before anything is written: `starts` and `lens` of
/// different lengths, a negative start or length, a range past the end of `src`, `out` of
/// another length; an interrupt (then `out` is partly written).
pub fn gather_ranges_into<T: Copy + Send + Sync>(
    src: &[T],
    starts: &[i64],
    lens: &[i64],
    out: &mut [T],
) -> Result<()> {
    let total = checked_total(src.len(), starts, lens)?;
    ensure!(
        total == out.len() as u128,
        "out",
        "has {} elements, the ranges hold {total}",
        out.len()
    );
    let mut pairs: Vec<(&mut [T], &[T])> = Vec::with_capacity(lens.len());
    let mut rest = out;
    for (&s, &l) in starts.iter().zip(lens) {
        let (dst, tail) = rest.split_at_mut(l as usize);
        pairs.push((dst, &src[s as usize..(s + l) as usize]));
        rest = tail;
    }
    let copy = |chunk: &mut [(&mut [T], &[T])]| -> Result<()> {
        interrupt::check()?;
        for (dst, s) in chunk.iter_mut() {
            dst.copy_from_slice(s);
        }
        Ok(())
    };
    if total >= (PARALLEL_THRESHOLD * 64) as u128 {
        pairs.par_chunks_mut(CHUNK).try_for_each(copy)
    } else {
        pairs.chunks_mut(CHUNK).try_for_each(copy)
    }
}

/// [`gather_ranges_into`] into a new vector.
pub fn gather_ranges<T: Copy + Default + Send + Sync>(
    src: &[T],
    starts: &[i64],
    lens: &[i64],
) -> Result<Vec<T>> {
    let total = checked_total(src.len(), starts, lens)?;
    memory::ensure_array::<T>("lens", total)?;
    let mut out = vec![T::default(); total as usize];
    gather_ranges_into(src, starts, lens, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    #[test]
    fn gathers_in_order_with_repeats_and_empty_ranges() {
        let src: Vec<u16> = (0..20).collect();
        let out = gather_ranges(&src, &[5, 0, 18, 3, 5], &[3, 2, 2, 0, 1]).unwrap();
        assert_eq!(out, vec![5, 6, 7, 0, 1, 18, 19, 5]);
        assert!(gather_ranges::<u16>(&src, &[], &[]).unwrap().is_empty());
    }

    #[test]
    fn large_input_matches_a_plain_loop() {
        let src: Vec<u32> = (0..3_000_000).collect();
        let mut starts = Vec::new();
        let mut lens = Vec::new();
        let mut want = Vec::new();
        let mut x: u64 = 1;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let s = (x >> 33) as usize % 2_900_000;
            let l = (x >> 13) as usize % 700;
            starts.push(s as i64);
            lens.push(l as i64);
            want.extend_from_slice(&src[s..s + l]);
        }
        assert_eq!(gather_ranges(&src, &starts, &lens).unwrap(), want);
    }

    #[test]
    fn bad_ranges_are_errors() {
        let src = [1u8, 2, 3];
        for (starts, lens) in [
            (vec![0i64], vec![4i64]),
            (vec![-1], vec![1]),
            (vec![1], vec![-1]),
            (vec![0, 1], vec![1]),
            (vec![i64::MAX], vec![i64::MAX]),
        ] {
            assert!(matches!(
                gather_ranges(&src, &starts, &lens),
                Err(Error::InvalidArgument { .. })
            ));
        }
        let mut out = [0u8; 2];
        assert!(matches!(
            gather_ranges_into(&src, &[0], &[3], &mut out),
            Err(Error::InvalidArgument { arg: "out", .. })
        ));
    }
}
