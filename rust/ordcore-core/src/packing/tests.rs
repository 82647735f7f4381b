use super::*;
use proptest::prelude::*;

fn opts(max_len: i64) -> PlanOptions {
    PlanOptions {
        max_len,
        max_seqs_per_pack: None,
        overlong: Overlong::Error,
        allow_empty: false,
        pad_to_multiple_of: 1,
        seed: 0,
    }
}

#[test]
fn loaded_pack_offsets_past_the_segments_are_an_error_not_a_panic() {
    // found by tests/test_fuzz_api.py: an offset past the segments indexed out of bounds
    let mut p = plan(&[5, 3, 8, 12, 1], Algorithm::Lpfhp, &opts(12)).unwrap();
    assert!(compute_stats(&p).is_ok());
    p.pack_offsets[1] = i64::MAX;
    let err = compute_stats(&p).unwrap_err().to_string();
    assert!(err.contains("past the"), "{err}");
}

#[test]
fn loaded_slots_of_one_sequence_must_not_overlap() {
    // found by a fresh-user pass: 0..2 and 1..3 of a length-4 sequence cover 4 tokens in all,
    // so the counts added up while token 1 was packed twice and token 3 never
    let mut p = plan(&[4, 3], Algorithm::Bfd, &opts(8)).unwrap();
    p.pack_offsets = vec![0, 2, 3];
    p.seq_index = vec![0, 0, 1];
    p.start = vec![0, 1, 0];
    p.stop = vec![2, 3, 3];
    p.fragment = vec![true, true, false];
    let err = compute_stats(&p).unwrap_err().to_string();
    assert!(err.contains("both cover tokens of sequence 0"), "{err}");
    // disjoint pieces (0..2, 2..4) are a valid split
    p.start[1] = 2;
    p.stop[1] = 4;
    let s = compute_stats(&p).unwrap();
    assert_eq!((s.split_sequences, s.dropped_tokens), (1, 0));
    // touching pieces in reverse order are fine too
    p.seq_index = vec![0, 0, 1];
    p.start = vec![2, 0, 0];
    p.stop = vec![4, 2, 3];
    assert!(compute_stats(&p).is_ok());
}

#[test]
fn dropped_tokens_beyond_u64_are_an_error_not_a_wrapped_count() {
    let o = PlanOptions {
        overlong: Overlong::Drop,
        ..opts(8)
    };
    let err = plan(&[i64::MAX, i64::MAX, i64::MAX, 5], Algorithm::Bfd, &o)
        .unwrap_err()
        .to_string();
    assert!(err.contains("more than 2**64 - 1"), "{err}");
    let p = plan(&[i64::MAX, 5], Algorithm::Bfd, &o).unwrap();
    assert_eq!(p.stats.dropped_tokens, i64::MAX as u64);
}

#[test]
fn p1_non_power_of_two_capacities() {
    for l in 2..=64i64 {
        for alg in [
            Algorithm::Bfd,
            Algorithm::Ffd,
            Algorithm::Lpfhp,
            Algorithm::Spfhp,
            Algorithm::Nf,
        ] {
            let p = plan(&[l - 1, 1], alg, &opts(l)).unwrap();
            // SPFHP places a whole length group at once and never pairs a length with
            // itself (Graphcore's reference does the same), so [1, 1] needs two packs.
            let want = if alg == Algorithm::Spfhp && l == 2 {
                2
            } else {
                1
            };
            assert_eq!(p.stats.num_packs, want, "{alg:?} L={l}");
        }
    }
}

#[test]
fn p13_ffd_not_monotone() {
    let lens = [44, 24, 24, 22, 21, 17, 8, 8, 6, 6];
    assert_eq!(
        plan(&lens, Algorithm::Ffd, &opts(60))
            .unwrap()
            .stats
            .num_packs,
        3
    );
    assert_eq!(
        plan(&lens, Algorithm::Ffd, &opts(61))
            .unwrap()
            .stats
            .num_packs,
        4
    );
}

#[test]
fn l2_bound_examples() {
    // Three items of 6 with capacity 10 need 3 bins; L1 says 2.
    let mut h = vec![0u64; 11];
    h[6] = 3;
    assert_eq!(martello_toth_l2(&h, 10), 3);
    assert_eq!(count_strategies(512, 3), 22102);
}

#[test]
fn split_and_errors() {
    let mut o = opts(60);
    o.overlong = Overlong::Split;
    let p = plan(&[121], Algorithm::Lpfhp, &o).unwrap();
    assert_eq!(p.stats.num_segments, 3);
    assert_eq!(p.stats.split_sequences, 1);
    assert!(plan(&[10, 3, 2], Algorithm::Bfd, &opts(5)).is_err());
    assert!(plan(&[-1], Algorithm::Bfd, &opts(5)).is_err());
    assert!(plan(&[0], Algorithm::Bfd, &opts(5)).is_err());
    assert!(Algorithm::parse("xx").is_err());
}

#[test]
fn materialize_positions_labels_and_padding() {
    let mut o = opts(8);
    o.pad_to_multiple_of = 4;
    let p = plan(&[3, 2], Algorithm::Nf, &o).unwrap();
    let values = [5, 6, 7, 8, 9];
    let offsets = [0, 3, 5];
    let m = MaterializeOptions {
        layout: Layout::Rows,
        pad_id: 1,
        position_ids_start: 2,
        continue_fragment_positions: false,
        pad_to_multiple_of: 4,
        label_ignore_index: -100,
        token_min: i64::MIN,
        token_max: i64::MAX,
    };
    let b = materialize(&p, &values, &offsets, &[0], &m).unwrap();
    assert_eq!(b.input_ids, [5, 6, 7, 1, 8, 9, 1, 1]);
    assert_eq!(b.position_ids, [2, 3, 4, 5, 2, 3, 4, 5]);
    assert_eq!(b.segment_ids, [1, 1, 1, 0, 2, 2, 0, 0]);
    assert_eq!(b.labels, [-100, 6, 7, -100, -100, 9, -100, -100]);
    assert_eq!(b.cu_seqlens, [0, 3, 5]);
    assert_eq!(b.cu_seqlens_padded, [0, 4, 8]);
    // Lengths that disagree with the plan are rejected.
    assert!(materialize(&p, &values[..4], &[0, 3, 4], &[0], &m).is_err());
}

proptest! {
    #[test]
    fn every_plan_is_valid(lens in proptest::collection::vec(1i64..40, 0..200), l in 1i64..50, k in 1usize..6) {
        for alg in [Algorithm::Bfd, Algorithm::Ffd, Algorithm::Lpfhp, Algorithm::Spfhp, Algorithm::Nf] {
            let mut o = opts(l);
            o.overlong = Overlong::Split;
            o.max_seqs_per_pack = Some(k);
            let p = plan(&lens, alg, &o).unwrap();
            prop_assert_eq!(p.stats.dropped_tokens, 0);
            prop_assert!(p.stats.deepest_pack as usize <= k);
            prop_assert!(p.stats.num_packs >= p.stats.lower_bound_l2);
            prop_assert_eq!(p.stats.real_tokens, lens.iter().sum::<i64>() as u64);
        }
    }
}

/// Martello-Toth L2 by its definition, over every alpha in `0..=cap/2` (the implementation
/// visits only the item sizes) and the item list itself (no prefix sums).
fn l2_by_definition(hist: &[u64], cap: u64) -> u64 {
    let items: Vec<u64> = hist
        .iter()
        .take(cap as usize + 1)
        .enumerate()
        .flat_map(|(w, &h)| std::iter::repeat_n(w as u64, h as usize))
        .collect();
    (0..=cap / 2)
        .map(|a| {
            let j1 = items.iter().filter(|&&w| w > cap - a).count() as u64;
            let j2: Vec<u64> = items
                .iter()
                .copied()
                .filter(|&w| w <= cap - a && 2 * w > cap)
                .collect();
            let s3: u64 = items
                .iter()
                .copied()
                .filter(|&w| 2 * w <= cap && w >= a)
                .sum();
            let free2 = j2.len() as u64 * cap - j2.iter().sum::<u64>();
            j1 + j2.len() as u64 + s3.saturating_sub(free2).div_ceil(cap)
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn recipe_counts_beyond_the_segments_stop_early() {
    // A count of u64::MAX used to reserve that many offsets (capacity overflow) and loop.
    let o = opts(6);
    let p = plan_from_recipe(&[3, 3, 2], &[u64::MAX, 5], &[0, 2, 3], &[3, 3, 2], &o).unwrap();
    assert_eq!(p.pack_offsets, [0, 2, 3]);
}

#[test]
fn bfd_beyond_the_old_capacity_limit() {
    // bfd used to refuse max_len > 2**22 (its tree was indexed by free capacity).
    let p = plan(&[5, 3, 1 << 29], Algorithm::Bfd, &opts(1 << 30)).unwrap();
    assert_eq!(p.stats.num_packs, 1);
    assert_eq!(p.stats.lower_bound_l2, 1);
}

proptest! {
    #[test]
    fn l2_equals_its_definition(hist in proptest::collection::vec(0u64..5, 1..80), cap in 1u64..90) {
        prop_assert_eq!(martello_toth_l2(&hist, cap), l2_by_definition(&hist, cap));
    }

    /// Packing is scale-invariant: sizes and capacity times 2**20 (sparse tables, ordered
    /// free-capacity map) give the same packs and bounds as the dense tables at scale 1.
    #[test]
    fn large_max_len_plans_equal_scaled_ones(lens in proptest::collection::vec(1i64..40, 0..120), l in 40i64..60, k in 1usize..6) {
        const S: i64 = 1 << 20;
        for alg in [Algorithm::Bfd, Algorithm::Ffd, Algorithm::Nf] {
            let mut o = opts(l);
            o.max_seqs_per_pack = Some(k);
            let small = plan(&lens, alg, &o).unwrap();
            let big_lens: Vec<i64> = lens.iter().map(|&x| x * S).collect();
            o.max_len = l * S;
            let big = plan(&big_lens, alg, &o).unwrap();
            prop_assert_eq!(&big.pack_offsets, &small.pack_offsets);
            prop_assert_eq!(&big.seq_index, &small.seq_index);
            prop_assert_eq!(big.stats.lower_bound_l2, small.stats.lower_bound_l2);
            prop_assert_eq!(big.stats.lower_bound_sum, small.stats.lower_bound_sum);
            prop_assert_eq!(compute_stats(&big).unwrap(), big.stats.clone());
        }
    }
}
