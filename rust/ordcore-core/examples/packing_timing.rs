use ordcore_core::packing::*;
use std::time::Instant;
fn main() {
    let n = 4_000_000usize;
    let lengths: Vec<i64> = (0..n)
        .map(|i| (ordcore_core::rng::counter_u64(1, 2, i as u64) % 512 + 1) as i64)
        .collect();
    let o = PlanOptions {
        max_len: 512,
        max_seqs_per_pack: None,
        overlong: Overlong::Error,
        allow_empty: false,
        pad_to_multiple_of: 1,
        seed: 0,
    };
    for alg in [Algorithm::Nf, Algorithm::Bfd, Algorithm::Lpfhp] {
        let t = Instant::now();
        let p = plan(&lengths, alg, &o).unwrap();
        let total = t.elapsed();
        let t = Instant::now();
        let _ = compute_stats(&p).unwrap();
        println!("{alg:?} total {:?} stats {:?}", total, t.elapsed());
    }
}
