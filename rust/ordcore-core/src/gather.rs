//! Copying ranges of a flat buffer into one contiguous output: the gather that lays out a
//! ragged column (Arrow list values) in packing-plan order, one `memcpy` per range.

use rayon::prelude::*;

use crate::{ensure, interrupt, memory, Error, Result, PARALLEL_THRESHOLD};

/// Ranges copied per interrupt check and per rayon task.
const CHUNK: usize = 4096;

/// Concatenates `src[starts[i] .. starts[i] + lens[i]]` for every `i`, in order.
///
/// Ranges may overlap or repeat. Errors (nothing is allocated before the checks pass):
/// `starts` and `lens` of different lengths, a negative start or length, a range past the
/// end of `src`, an output too large for memory, or an interrupt.
pub fn gather_ranges<T: Copy + Send + Sync>(
    src: &[T],
    starts: &[i64],
    lens: &[i64],
) -> Result<Vec<T>> {
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
            end <= src.len() as u128,
            "starts",
            "range {i} ({s}..{end}) is past the end of the {} values",
            src.len()
        );
        total += l as u128;
    }
    memory::ensure_array::<T>("lens", total)?;
    let total = usize::try_from(total).map_err(|_| Error::invalid("lens", "output too large"))?;
    let mut out: Vec<T> = Vec::with_capacity(total);
    // Pair every output slice with its source range, then copy (in parallel when large).
    let spare = &mut out.spare_capacity_mut()[..total];
    let mut pairs: Vec<(&mut [std::mem::MaybeUninit<T>], &[T])> = Vec::with_capacity(lens.len());
    let mut rest = spare;
    for (&s, &l) in starts.iter().zip(lens) {
        let (dst, tail) = rest.split_at_mut(l as usize);
        pairs.push((dst, &src[s as usize..(s + l) as usize]));
        rest = tail;
    }
    let copy = |chunk: &mut [(&mut [std::mem::MaybeUninit<T>], &[T])]| -> Result<()> {
        interrupt::check()?;
        for (dst, s) in chunk.iter_mut() {
            debug_assert_eq!(dst.len(), s.len());
            // SAFETY: `dst` and `s` have the same length (split above), `T: Copy`, and the
            // output buffer never overlaps the input.
            unsafe {
                std::ptr::copy_nonoverlapping(s.as_ptr(), dst.as_mut_ptr().cast::<T>(), s.len())
            };
        }
        Ok(())
    };
    if total >= PARALLEL_THRESHOLD * 64 {
        pairs.par_chunks_mut(CHUNK).try_for_each(copy)?;
    } else {
        pairs.chunks_mut(CHUNK).try_for_each(copy)?;
    }
    drop(pairs);
    // SAFETY: the pairs tile out[..total] exactly (their lengths sum to total) and every
    // element of every pair's destination was written above.
    unsafe { out.set_len(total) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
