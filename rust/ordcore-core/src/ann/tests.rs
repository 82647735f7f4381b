use super::*;
use crate::Error;

fn gauss(n: usize, d: usize, seed: u64) -> Vec<f32> {
    // Box-Muller on the counter generator.
    (0..n * d)
        .map(|i| {
            let u1 = crate::rng::counter_f64(seed, 0, i as u64).max(1e-12);
            let u2 = crate::rng::counter_f64(seed, 1, i as u64);
            ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32
        })
        .collect()
}

fn params(dim: usize, metric: Metric) -> Params {
    Params {
        dim,
        metric,
        bits: 2,
        r: 16,
        l_build: 32,
        alpha: 1.2,
        rotation: false,
        seed: 0,
    }
}

#[test]
fn finds_itself_and_pads() {
    let x = gauss(500, 32, 1);
    let mut idx = BQGraphIndex::new(params(32, Metric::L2)).unwrap();
    idx.add(&x, None, None).unwrap();
    let (ids, ds) = idx.search(&x[..32 * 10], 1, 32, true, None).unwrap();
    assert_eq!(ids, (0..10).collect::<Vec<i64>>());
    assert!(ds.iter().all(|&d| d == 0.0));
    let (ids, ds) = idx.search(&x[..32], 600, 16, true, None).unwrap();
    assert_eq!(ids.iter().filter(|&&i| i >= 0).count(), 500);
    assert!(ids[500..].iter().all(|&i| i == -1));
    assert!(ds[500..].iter().all(|d| d.is_infinite()));
}

#[test]
fn thousands_of_copies_of_one_row_do_not_trap_the_search() {
    // found by a fresh-user pass: with 4000 copies of row 0 (the entry) among 500 rows,
    // back-edges filled the copies' lists with copies, and every search ended among them
    let d = 32;
    let base = gauss(500, d, 11);
    let mut x = base.clone();
    for _ in 0..4000 {
        x.extend_from_slice(&base[..d]);
    }
    let mut idx = BQGraphIndex::new(Params {
        r: 64,
        l_build: 64,
        ..params(d, Metric::L2)
    })
    .unwrap();
    idx.add(&x, None, None).unwrap();
    let (ids, _) = idx.search(&base[d..d * 101], 1, 64, true, None).unwrap();
    let hits = (0..100).filter(|&i| ids[i] == i as i64 + 1).count();
    assert!(hits >= 95, "{hits} of 100 rows found themselves");
    // more copies than the beam's duplicate cap (64 / 8) are still returned: the copies it
    // turned away remain candidates
    let (ids, ds) = idx.search(&base[..d], 20, 64, true, None).unwrap();
    assert!(ds.iter().all(|&v| v == 0.0), "{ds:?}");
    assert!(ids.iter().all(|&i| i == 0 || i >= 500));
    // every node stays reachable from the entry (the copies through capped twin edges)
    let mut seen = vec![false; idx.n_nodes()];
    let mut stack = vec![idx.entry];
    seen[idx.entry as usize] = true;
    while let Some(a) = stack.pop() {
        for &b in idx.neighbors(a as usize) {
            if !std::mem::replace(&mut seen[b as usize], true) {
                stack.push(b);
            }
        }
    }
    assert_eq!(seen.iter().filter(|&&s| s).count(), 4500);
    let copies = |i: usize| i == 0 || i >= 500;
    for i in (0..idx.n_nodes()).filter(|&i| copies(i)) {
        let twins = idx
            .neighbors(i)
            .iter()
            .filter(|&&j| copies(j as usize))
            .count();
        assert!(
            twins <= graph::twin_cap(64),
            "node {i} has {twins} copies as neighbours"
        );
    }
}

#[test]
fn degrees_bounded_and_edges_valid() {
    let x = gauss(800, 16, 2);
    let mut idx = BQGraphIndex::new(params(16, Metric::Cosine)).unwrap();
    idx.add(&x, None, None).unwrap();
    for i in 0..idx.n_nodes() {
        let nb = idx.neighbors(i);
        assert!(nb.len() <= 16);
        assert!(nb.iter().all(|&j| (j as usize) < 800 && j as usize != i));
    }
}

#[test]
fn errors_do_not_change_the_index() {
    let mut x = gauss(50, 8, 3);
    let mut idx = BQGraphIndex::new(params(8, Metric::Cosine)).unwrap();
    x[8 * 7 + 2] = f32::NAN;
    let e = idx.add(&x, None, None).unwrap_err().to_string();
    assert!(e.contains("row 7"), "{e}");
    assert_eq!(idx.len(), 0);
    assert!(idx.search(&[0.0; 8], 1, 8, true, None).is_err());
    assert!(BQGraphIndex::new(Params {
        r: 1,
        ..params(8, Metric::L2)
    })
    .is_err());
    assert!(BQGraphIndex::new(Params {
        alpha: 0.5,
        ..params(8, Metric::L2)
    })
    .is_err());
}

#[test]
fn save_load_roundtrip_and_corruption() {
    let x = gauss(300, 20, 4);
    let mut idx = BQGraphIndex::new(Params {
        rotation: true,
        ..params(20, Metric::L2)
    })
    .unwrap();
    idx.add(&x, None, None).unwrap();
    let dir = std::env::temp_dir().join(format!("ordcore-ann-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("a.ordann");
    format::save(&idx, &p).unwrap();
    let back = format::load(&p, true).unwrap();
    let q = &x[..20 * 5];
    assert_eq!(
        idx.search(q, 3, 16, true, None).unwrap().0,
        back.search(q, 3, 16, true, None).unwrap().0
    );
    let mut raw = std::fs::read(&p).unwrap();
    raw[500] ^= 1;
    std::fs::write(&p, &raw).unwrap();
    assert!(matches!(format::load(&p, false), Err(Error::Format(_))));
    raw.pop();
    std::fs::write(&p, &raw).unwrap();
    assert!(matches!(format::load(&p, false), Err(Error::Format(_))));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn exact_search_orders_ties_by_row() {
    let x = vec![1.0f32, 0.0, 1.0, 0.0, 0.0, 1.0];
    let (ids, _) = exact_search(&x, &[1.0, 0.0], 2, 3, Metric::L2).unwrap();
    assert_eq!(ids, vec![0, 1, 2]);
}

#[test]
fn a_failing_progress_callback_leaves_the_index_unchanged() {
    let x = gauss(3000, 16, 7);
    let mut idx = BQGraphIndex::new(params(16, Metric::L2)).unwrap();
    idx.add(&x[..1000 * 16], None, None).unwrap();
    let q = gauss(20, 16, 8);
    let before = idx.search(&q, 5, 32, true, None).unwrap();
    let (adj0, ids0): (Vec<Vec<u32>>, Vec<i64>) = (
        (0..idx.n_nodes())
            .map(|i| idx.neighbors(i).to_vec())
            .collect(),
        idx.live_ids(),
    );
    let stop = |done: usize, _total: usize| -> crate::Result<()> {
        if done > 100 {
            Err(Error::Interrupted)
        } else {
            Ok(())
        }
    };
    let err = idx.add(&x[1000 * 16..], None, Some(&stop)).unwrap_err();
    assert!(matches!(err, Error::Interrupted));
    assert_eq!(idx.live_ids(), ids0);
    let adj1: Vec<Vec<u32>> = (0..idx.n_nodes())
        .map(|i| idx.neighbors(i).to_vec())
        .collect();
    assert_eq!(adj1, adj0);
    assert_eq!(idx.search(&q, 5, 32, true, None).unwrap(), before);
    // A first build stopped the same way leaves an empty index.
    let mut fresh = BQGraphIndex::new(params(16, Metric::L2)).unwrap();
    assert!(fresh.add(&x, None, Some(&stop)).is_err());
    assert_eq!(fresh.n_nodes(), 0);
    fresh.add(&x, None, None).unwrap();
    assert_eq!(fresh.len(), 3000);
}

#[test]
fn search_with_a_beam_covering_the_index_is_exact() {
    let x = gauss(40, 1, 9);
    let mut idx = BQGraphIndex::new(params(1, Metric::L2)).unwrap();
    idx.add(&x, None, None).unwrap();
    let (ids, ds) = idx.search(&x, 3, 40, true, None).unwrap();
    let (eids, eds) = exact_search(&x, &x, 1, 3, Metric::L2).unwrap();
    assert_eq!(ids, eids);
    assert_eq!(ds, eds);
}

#[test]
fn code_space_recall_splits_ties_evenly() {
    // One query (row 0) whose exact top-2 are rows 1 and 2; in code space rows 1, 3 and 4
    // tie at the 2nd place behind row 2: recall = (1 + 1/3) / 2.
    struct Fixed;
    impl fitness::CodeScorer for Fixed {
        fn n_rows(&self) -> usize {
            5
        }
        fn scores(&self, _i: usize, out: &mut [f32]) {
            out.copy_from_slice(&[0.0, 5.0, 1.0, 5.0, 5.0]);
        }
    }
    let rows = [0.0f32, 1.0, 2.0, 10.0, 11.0];
    let r = fitness::code_space_recall(&rows, 1, Metric::L2, 2, None, &[0], &[&Fixed]).unwrap();
    assert!((r[0][0] - (1.0 + 1.0 / 3.0) / 2.0).abs() < 1e-12, "{r:?}");
}

#[test]
fn scalar_fitness_scores_exactly_as_search_does() {
    // The fitness scorer of the 4- and 8-bit codes gives, bit for bit, the asymmetric
    // distance the index's search computes (query form of the row against each code).
    let (n, dim) = (300, 20);
    let x = gauss(n, dim, 41);
    for (bits, metric, rotation) in [
        (8, Metric::L2, true),
        (4, Metric::Cosine, true),
        (8, Metric::Ip, false),
    ] {
        let mut p = params(dim, metric);
        p.bits = bits;
        p.rotation = rotation;
        p.seed = 5;
        let mut idx = BQGraphIndex::new(p).unwrap();
        idx.add(&x, None, None).unwrap();
        let rows = metric::prepare_rows(&x, dim, metric);
        let rot = rotation
            .then(|| rotation::Rotation::new(dim, 5, encode::column_mean(&rows, dim)).unwrap());
        let scorer = fitness::ScalarCodes::new(&rows, dim, bits, metric, rot).unwrap();
        let dist = idx.sq_dist();
        let cw = idx.cw;
        // Row `j` is the node of insertion rank `j` (the nodes are renumbered in graph order).
        let by_rank = idx.nodes_by_rank();
        for i in [0usize, 17, 299] {
            let mut out = vec![0f32; n];
            fitness::CodeScorer::scores(&scorer, i, &mut out);
            let qf = idx.encode_query(&rows[i * dim..(i + 1) * dim]).unwrap();
            for (j, &o) in out.iter().enumerate() {
                let node = by_rank[j] as usize;
                let want = dist.query_distance(&qf, &idx.codes[node * cw..(node + 1) * cw]);
                assert_eq!(o.to_bits(), want.to_bits(), "bits {bits} row {i} vs {j}");
            }
        }
    }
}

#[test]
fn filtered_search_equals_exact_filtered_search() {
    let (n, dim) = (2000, 16);
    let x = gauss(n, dim, 43);
    let mut idx = BQGraphIndex::new(params(dim, Metric::L2)).unwrap();
    let ids: Vec<i64> = (0..n as i64).map(|i| 5 * i + 1).collect();
    idx.add(&x, Some(&ids), None).unwrap();
    let q = gauss(20, dim, 44);
    // 10 allowed rows: the exact-scan path, equal to exact search over those rows.
    let rows: Vec<usize> = (0..10).map(|i| i * 150 + 3).collect();
    let allow: Vec<i64> = rows.iter().map(|&r| ids[r]).collect();
    let sub: Vec<f32> = rows
        .iter()
        .flat_map(|&r| x[r * dim..(r + 1) * dim].to_vec())
        .collect();
    let (eids, eds) = exact_search(&sub, &q, dim, 5, Metric::L2).unwrap();
    let eids: Vec<i64> = eids.iter().map(|&i| allow[i as usize]).collect();
    for rerank in [true, false] {
        let (fids, fds) = idx
            .search_filtered(&q, 5, 64, rerank, None, Some(Filter::Ids(&allow)), None)
            .unwrap();
        assert_eq!(fids, eids);
        assert_eq!(fds, eds);
    }
    let mut bitmap = vec![false; 5 * n];
    for &a in &allow {
        bitmap[a as usize] = true;
    }
    let (bids, _) = idx
        .search_filtered(&q, 5, 64, true, None, Some(Filter::Bitmap(&bitmap)), None)
        .unwrap();
    assert_eq!(bids, eids);
    // Half the ids (the graph path): only allowed ids come back, k of them.
    let half: Vec<bool> = (0..5 * n).map(|i| i % 10 == 1).collect();
    let (hids, _) = idx
        .search_filtered(&q, 10, 64, true, None, Some(Filter::Bitmap(&half)), None)
        .unwrap();
    assert!(hids.iter().all(|&i| i >= 0 && i % 10 == 1));
    // Unknown ids name the filter.
    let err = idx
        .search_filtered(&q, 5, 64, true, None, Some(Filter::Ids(&[1, 2])), None)
        .unwrap_err();
    assert!(
        matches!(err, Error::UnknownId { arg: "filter", .. }),
        "{err}"
    );
}

#[test]
fn get_returns_stored_rows_and_refuses_unknown_ids() {
    let x = gauss(50, 8, 45);
    let mut idx = BQGraphIndex::new(params(8, Metric::L2)).unwrap();
    idx.add(&x, None, None).unwrap();
    idx.remove(&[3]).unwrap();
    let got = idx.get(&[4, 4, 0]).unwrap();
    assert_eq!(&got[..8], &x[32..40]);
    assert_eq!(&got[8..16], &x[32..40]);
    assert_eq!(&got[16..], &x[..8]);
    let err = idx.get(&[1, 3, 99]).unwrap_err();
    assert!(
        matches!(&err, Error::UnknownId { arg: "ids", reason } if reason.contains("3, 99")),
        "{err}"
    );
}

#[test]
fn metadata_is_saved_as_version_3_and_only_then() {
    let dir = std::env::temp_dir().join(format!("ordcore-meta-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let x = gauss(40, 8, 46);
    let mut idx = BQGraphIndex::new(params(8, Metric::L2)).unwrap();
    idx.add(&x, None, None).unwrap();
    let plain = dir.join("plain");
    format::save(&idx, &plain).unwrap();
    assert_eq!(std::fs::read(&plain).unwrap()[8], 1);
    idx.set_meta("{\"choice\": 1}".into());
    let with = dir.join("with");
    format::save(&idx, &with).unwrap();
    assert_eq!(std::fs::read(&with).unwrap()[8], 3);
    let back = format::load(&with, false).unwrap();
    assert_eq!(back.meta(), "{\"choice\": 1}");
    assert_eq!(back.search(&x[..8], 3, 16, true, None).unwrap().0[0], 0);
    assert_eq!(format::load(&plain, true).unwrap().meta(), "");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn lock_step_searches_match_searches_one_at_a_time() {
    // Queries run in lock-step groups (`graph::run_beams`); each must get exactly what it
    // gets searched alone, for the popcount and the scalar codes, with duplicates (ties).
    let mut x = gauss(1500, 24, 11);
    x.extend_from_within(..24 * 100);
    let q = gauss(37, 24, 12);
    for bits in [2, 8] {
        let mut p = params(24, Metric::L2);
        p.bits = bits;
        let mut idx = BQGraphIndex::new(p).unwrap();
        idx.add(&x, None, None).unwrap();
        for (ef, rerank) in [(10, true), (40, true), (24, false)] {
            let (ids, ds) = idx.search(&q, 10, ef, rerank, None).unwrap();
            for (j, qr) in q.chunks_exact(24).enumerate() {
                let (i1, d1) = idx.search(qr, 10, ef, rerank, None).unwrap();
                assert_eq!(
                    &ids[j * 10..(j + 1) * 10],
                    &i1[..],
                    "bits {bits} ef {ef} query {j}"
                );
                assert_eq!(
                    &ds[j * 10..(j + 1) * 10],
                    &d1[..],
                    "bits {bits} ef {ef} query {j}"
                );
            }
        }
    }
}

#[test]
fn scalar_searches_start_at_the_nearest_sampled_node() {
    // 4- and 8-bit searches start their beam at the nearest (by code distance) of the entry
    // and `START_SAMPLE` evenly spread nodes; 1- and 2-bit searches start at the entry, so
    // their results are those of the graph's beam from the entry.
    let x = gauss(3000, 24, 21);
    let q = gauss(40, 24, 22);
    for bits in [1, 2, 4, 8] {
        let mut p = params(24, Metric::L2);
        p.bits = bits;
        let mut idx = BQGraphIndex::new(p).unwrap();
        idx.add(&x, None, None).unwrap();
        let n = idx.n_nodes();
        let (ef, k) = (16, 10);
        let (ids, _) = idx.search(&q, k, ef, false, None).unwrap();
        let mut moved = 0;
        for (j, qr) in q.chunks_exact(24).enumerate() {
            let qc = idx.encode_query(qr).unwrap();
            let (start, beam) = with_graph!(idx, g => {
                let mut best = (g.d(&qc, idx.entry), idx.entry);
                for t in 0..search::START_SAMPLE {
                    // The node of insertion rank t * n / START_SAMPLE (ties to the earlier rank).
                    let r = (t * n / search::START_SAMPLE) as u32;
                    let i = idx.rank.iter().position(|&x| x == r).unwrap() as u32;
                    let (bd, bi) = best;
                    let d = g.d(&qc, i);
                    if (d, r) < (bd, idx.rank[bi as usize]) {
                        best = (d, i);
                    }
                }
                assert_eq!(search::start_node(&g, &qc, idx.entry, &idx.start_sample, &idx.rank), best.1);
                let start = if bits > 2 { best.1 } else { idx.entry };
                (start, graph::beam_search(&g, &qc, start, ef, graph::dup_cap(ef), None, None))
            });
            moved += (start != idx.entry) as usize;
            let want: Vec<i64> = beam
                .iter()
                .take(k)
                .map(|&(_, i)| idx.ids[i as usize])
                .collect();
            assert_eq!(&ids[j * k..(j + 1) * k], &want[..], "bits {bits} query {j}");
        }
        if bits > 2 {
            assert!(
                moved > 30,
                "bits {bits}: only {moved} of 40 searches moved off the entry"
            );
        }
    }
}

#[test]
fn filter_scan_switch_depends_on_the_dimension() {
    use super::search::filter_scans;
    // 384-d: factor 4, about 5,060 of 100,000 ids at ef 64 (the glosses calibration).
    assert!(filter_scans(5_000, 64, 100_000, 384));
    assert!(!filter_scans(5_200, 64, 100_000, 384));
    // 128-d: factor 9.1, about 7,640 ids; 50-d: factor 18.5, about 10,870 ids.
    assert!(filter_scans(7_500, 64, 100_000, 128));
    assert!(!filter_scans(7_800, 64, 100_000, 128));
    assert!(filter_scans(10_800, 64, 100_000, 50));
    assert!(!filter_scans(11_000, 64, 100_000, 50));
    // Never below factor 1, and the switch grows with `ef` and the graph's size.
    assert!(filter_scans(2_500, 64, 100_000, 1 << 20));
    assert!(!filter_scans(2_600, 64, 100_000, 1 << 20));
    assert!(filter_scans(7_100, 128, 100_000, 384));
    assert!(filter_scans(
        u32::MAX as usize,
        u32::MAX as usize,
        u32::MAX as usize,
        1
    ));
}

/// Checks that every list of `idx` is ordered core first (see `order`): the core part holds
/// exactly the neighbours no earlier core neighbour is at least as near to as the node, each
/// part by increasing `(code distance, node)`; returns the mean core size.
fn assert_lists_core_first(idx: &BQGraphIndex) -> f64 {
    let mut core_total = 0usize;
    with_graph!(idx, g => {
        for p in 0..idx.n_nodes() as u32 {
            let list = g.neighbors(p);
            let d = |j: u32| (g.d_nodes(p, j), j);
            let mut core: Vec<u32> = Vec::new();
            let mut split = list.len();
            for (pos, &j) in list.iter().enumerate() {
                let covered = core.iter().any(|&c| g.d_nodes(c, j) <= d(j).0);
                if covered {
                    split = pos;
                    break;
                }
                core.push(j);
            }
            for &j in &list[split..] {
                assert!(
                    core.iter().any(|&c| g.d_nodes(c, j) <= d(j).0),
                    "node {p}: extra {j} is not covered by the core"
                );
            }
            for part in [&list[..split], &list[split..]] {
                assert!(part.windows(2).all(|w| d(w[0]) < d(w[1])), "node {p}: {part:?} unsorted");
            }
            core_total += split;
        }
    });
    core_total as f64 / idx.n_nodes() as f64
}

#[test]
fn scalar_code_lists_are_ordered_core_first() {
    let x = gauss(2000, 24, 31);
    for bits in [2, 4, 8] {
        let mut p = params(24, Metric::L2);
        p.bits = bits;
        let mut idx = BQGraphIndex::new(p).unwrap();
        assert_eq!(idx.search_degree(), 0);
        idx.add(&x[..1500 * 24], None, None).unwrap();
        if bits <= 2 {
            // 1- and 2-bit lists stay in construction order, without a bound.
            assert_eq!(idx.search_degree(), 0);
            continue;
        }
        let check = |idx: &BQGraphIndex| {
            let mean = assert_lists_core_first(idx);
            let want = ((2.0 * mean).round() as u32).clamp(1, idx.params.r as u32);
            assert_eq!(idx.search_degree(), want, "bits {bits}");
            assert!(
                mean >= 2.0 && mean < idx.params.r as f64,
                "bits {bits}: core {mean}"
            );
        };
        check(&idx);
        // A later add and a compaction reorder the lists they change.
        idx.add(&x[1500 * 24..], None, None).unwrap();
        check(&idx);
        idx.remove(&(0..2000).step_by(3).collect::<Vec<i64>>())
            .unwrap();
        idx.compact().unwrap();
        check(&idx);
        // Removing everything leaves no bound.
        idx.remove(&idx.live_ids()).unwrap();
        idx.compact().unwrap();
        assert_eq!(idx.search_degree(), 0);
    }
}

#[test]
fn a_degree_bound_searches_the_truncated_lists() {
    // A search expanding the first `d` neighbours of each node equals a full search of the
    // same graph with every list cut to its first `d` entries; the automatic bound is
    // `max(D, 3 * beam)`; a bound at R or above expands everything.
    let dir = std::env::temp_dir().join(format!("ordcore-degree-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let x = gauss(2500, 24, 41);
    let q = gauss(30, 24, 42);
    for bits in [4, 8] {
        let mut p = params(24, Metric::L2);
        p.bits = bits;
        p.r = 24;
        let mut idx = BQGraphIndex::new(p).unwrap();
        idx.add(&x, None, None).unwrap();
        let path = dir.join(format!("i{bits}"));
        format::save(&idx, &path).unwrap();
        let base = idx.search_degree() as usize;
        assert!(base > 0 && base < 24, "{base}");
        for d in [1, 3, 7, base] {
            let mut cut = format::load(&path, false).unwrap();
            cut.search_degree = 0;
            for i in 0..cut.deg.len() {
                cut.deg[i] = cut.deg[i].min(d as u32);
            }
            for (ef, rerank) in [(10, true), (32, true), (16, false)] {
                let got = idx
                    .search_filtered(&q, 10, ef, rerank, None, None, Some(d))
                    .unwrap();
                let want = cut.search(&q, 10, ef, rerank, None).unwrap();
                assert_eq!(got, want, "bits {bits} d {d} ef {ef}");
            }
        }
        for ef in [4, 10, 16] {
            let beam = ef.max(10);
            let auto = idx.search(&q, 10, ef, true, None).unwrap();
            let given = idx
                .search_filtered(&q, 10, ef, true, None, None, Some(base.max(3 * beam)))
                .unwrap();
            assert_eq!(auto, given, "bits {bits} ef {ef}");
        }
        let full = idx
            .search_filtered(&q, 10, 10, true, None, None, Some(24))
            .unwrap();
        let mut unbounded = format::load(&path, false).unwrap();
        unbounded.search_degree = 0;
        assert_eq!(full, unbounded.search(&q, 10, 10, true, None).unwrap());
        assert!(idx
            .search_filtered(&q, 10, 10, true, None, None, Some(0))
            .is_err());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn scalar_prunes_score_pairs_with_the_query_form() {
    // RobustPrune of the 4- and 8-bit codes, given the nodes' query forms, follows the
    // DiskANN rule with `d(p*, p')` the query form of `p*` against the code of `p'` (checked
    // against a direct implementation on floats); without them, code against code.
    let (n, dim, r, alpha) = (600, 24, 12, 1.2);
    let x = gauss(n, dim, 31);
    for bits in [4, 8] {
        let mut p = params(dim, Metric::L2);
        p.bits = bits;
        p.rotation = true;
        let mut idx = BQGraphIndex::new(p).unwrap();
        idx.add(&x, None, None).unwrap();
        let sq = idx.sq_dist();
        let forms: Vec<Vec<u64>> = (0..n as u32)
            .map(|i| idx.node_query(i).into_owned())
            .collect();
        let q = |i: u32| std::borrow::Cow::Borrowed(&forms[i as usize][..]);
        let code = |i: u32| &idx.codes[i as usize * idx.cw..(i as usize + 1) * idx.cw];
        let reference = |node: u32, pair: &dyn Fn(u32, u32) -> f32| -> Vec<u32> {
            let mut c: Vec<(f32, u32)> = (0..n as u32)
                .filter(|&j| j != node)
                .map(|j| (sq.query_distance(&forms[node as usize], code(j)), j))
                .collect();
            c.sort_by(|a, b| a.partial_cmp(b).unwrap());
            c.truncate(40);
            let mut out: Vec<u32> = Vec::new();
            let mut pruned = vec![false; c.len()];
            for i in 0..c.len() {
                if out.len() >= r || pruned[i] {
                    continue;
                }
                out.push(c[i].1);
                for j in i + 1..c.len() {
                    if alpha * pair(c[i].1, c[j].1) as f64 <= c[j].0 as f64 {
                        pruned[j] = true;
                    }
                }
            }
            out
        };
        let mut differ = 0;
        with_graph!(idx, g => {
            for node in (0..n as u32).step_by(7) {
                let cands = |_: ()| -> Vec<(u32, u32)> {
                    let mut c: Vec<(u32, u32)> = (0..n as u32)
                        .filter(|&j| j != node)
                        .map(|j| (g.d(&forms[node as usize], j), j))
                        .collect();
                    c.sort_unstable();
                    c.truncate(40);
                    c
                };
                let by_query = graph::robust_prune(&g, node, &mut cands(()), alpha, r, &|_| false, Some(&q));
                let by_codes = graph::robust_prune(&g, node, &mut cands(()), alpha, r, &|_| false, None);
                let want_query = reference(node, &|a, b| sq.query_distance(&forms[a as usize], code(b)));
                let want_codes = reference(node, &|a, b| sq.code_distance(code(a), code(b)));
                assert_eq!(by_query, want_query, "bits {bits} node {node}");
                assert_eq!(by_codes, want_codes, "bits {bits} node {node}");
                differ += (by_query != by_codes) as usize;
            }
        });
        assert!(
            differ > 0,
            "bits {bits}: the pair scores never changed a prune"
        );
    }
}

#[test]
fn widening_a_half_precision_store_keeps_every_result() {
    use super::store::RerankDtype;
    // Rows of float16 / bfloat16 values (integers up to 256), so that the half-precision
    // stores hold them exactly.
    let x: Vec<f32> = gauss(800, 16, 7)
        .iter()
        .map(|v| (v * 40.0).round())
        .collect();
    let q: Vec<f32> = gauss(20, 16, 8).iter().map(|v| v * 40.0).collect();
    let p = Params {
        bits: 8,
        ..params(16, Metric::L2)
    };
    let mut want = BQGraphIndex::new(p.clone()).unwrap();
    want.add(&x, None, None).unwrap();
    let want = want.search(&q, 10, 24, true, None).unwrap();
    for dtype in [RerankDtype::Float16, RerankDtype::Bfloat16] {
        let mut idx = BQGraphIndex::new(p.clone()).unwrap();
        idx.set_rerank_dtype(dtype).unwrap();
        idx.add(&x, None, None).unwrap();
        assert_eq!(idx.memory_usage().2, 800 * 16 * 2);
        idx.widen_rerank_store().unwrap();
        assert_eq!(idx.rerank_dtype(), RerankDtype::Float32);
        assert_eq!(idx.memory_usage().2, 800 * 16 * 4);
        assert_eq!(idx.search(&q, 10, 24, true, None).unwrap(), want);
        // A float32 store is left as it is.
        idx.widen_rerank_store().unwrap();
        assert_eq!(idx.search(&q, 10, 24, true, None).unwrap(), want);
    }
    let mut idx = BQGraphIndex::new(p).unwrap();
    idx.set_rerank_dtype(RerankDtype::Int8).unwrap();
    idx.add(&x, None, None).unwrap();
    let err = idx.widen_rerank_store().unwrap_err();
    assert!(err.to_string().contains("int8"), "{err}");
    assert_eq!(idx.rerank_dtype(), RerankDtype::Int8);
}

#[test]
fn scalar_l2_scores_rank_the_neighbours_of_data_far_from_the_origin() {
    // Rows far from the origin next to their spread (as SIFT's non-negative descriptors):
    // an l2 score that pairs the exact `|x|^2` with the coded `<q, x>` carries an error that
    // grows with `|q|`, where the squared norm of the code itself leaves one that grows
    // with `|q - x|` only. Recall@10 of the top 10 by asymmetric score (no rerank), 100
    // rows as queries: 0.71 / 0.73 (4 / 8 bits); 0.009 / 0.41 with the exact norm.
    let (n, dim) = (2000, 64);
    let x: Vec<f32> = gauss(n, dim, 47).iter().map(|v| 100.0 + v).collect();
    let queries: Vec<usize> = (0..100).collect();
    for (bits, floor) in [(4, 0.6), (8, 0.65)] {
        let scorer = fitness::ScalarCodes::new(&x, dim, bits, Metric::L2, None).unwrap();
        let r = fitness::code_space_recall(&x, dim, Metric::L2, 10, None, &queries, &[&scorer])
            .unwrap();
        let recall = r[0].iter().sum::<f64>() / queries.len() as f64;
        assert!(recall >= floor, "bits {bits}: recall {recall}");
    }
}

/// An independent check that the nodes are numbered in breadth-first order from the entry
/// (neighbours in list order, unreached nodes after, in insertion order): the entry is
/// node 0 and a walk from it meets the nodes as 0, 1, 2, ...
fn assert_bfs_numbered(idx: &BQGraphIndex) {
    let n = idx.n_nodes();
    assert_eq!(idx.entry, 0);
    let mut seen = vec![false; n];
    let mut queue = std::collections::VecDeque::from([0u32]);
    seen[0] = true;
    let mut next = 1u32;
    let mut reached = 1;
    while let Some(p) = queue.pop_front() {
        for &j in idx.neighbors(p as usize) {
            if !seen[j as usize] {
                seen[j as usize] = true;
                assert_eq!(j, next, "node {j} met as the walk's node {next}");
                next += 1;
                reached += 1;
                queue.push_back(j);
            }
        }
    }
    // Nodes the walk does not reach keep their insertion order after the reached ones.
    let rest: Vec<u32> = (0..n).filter(|&i| !seen[i]).map(|i| idx.rank[i]).collect();
    assert!(rest.windows(2).all(|w| w[0] < w[1]));
    assert!(reached + rest.len() == n);
}

/// The nodes in insertion order: the same graph, unrenumbered.
fn unrenumbered(idx: &BQGraphIndex) -> BQGraphIndex {
    static COPIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "ordcore-unrenumbered-{}-{k}.ordann",
        std::process::id()
    ));
    format::save(idx, &path).unwrap();
    let mut u = format::load(&path, false).unwrap();
    std::fs::remove_file(&path).unwrap();
    let order = u.nodes_by_rank();
    u.apply_order(&order).unwrap();
    u.refresh_start_sample();
    u
}

#[test]
fn scalar_code_nodes_are_renumbered_in_graph_order_with_the_same_results() {
    let (dim, n) = (24, 1500);
    let x = gauss(n, dim, 41);
    let q = gauss(60, dim, 42);
    for (bits, dtype) in [
        (8, store::RerankDtype::Float32),
        (4, store::RerankDtype::Float16),
        (8, store::RerankDtype::Int8),
        (2, store::RerankDtype::Float32),
    ] {
        let mut p = params(dim, Metric::L2);
        p.bits = bits;
        let mut idx = BQGraphIndex::new(p).unwrap();
        idx.set_rerank_dtype(dtype).unwrap();
        let ids: Vec<i64> = (0..n as i64).map(|i| 7 * i + 3).collect();
        idx.add(&x[..1000 * dim], Some(&ids[..1000]), None).unwrap();
        let check = |idx: &BQGraphIndex, step: &str| {
            if bits <= 2 {
                assert!(!idx.renumbered(), "{step}");
                return;
            }
            assert!(idx.renumbered(), "{step}: bits {bits}");
            assert_bfs_numbered(idx);
            let u = unrenumbered(idx);
            assert!(!u.renumbered());
            assert_eq!(idx.live_ids(), u.live_ids(), "{step}");
            let live = idx.live_ids();
            assert_eq!(idx.get(&live).unwrap(), u.get(&live).unwrap(), "{step}");
            // The same graph: the same lists, by user id.
            let u_node: std::collections::HashMap<i64, usize> =
                u.ids.iter().enumerate().map(|(i, &id)| (id, i)).collect();
            for i in 0..idx.n_nodes() {
                let a: Vec<i64> = idx
                    .neighbors(i)
                    .iter()
                    .map(|&j| idx.ids[j as usize])
                    .collect();
                let ui = u_node[&idx.ids[i]];
                let b: Vec<i64> = u.neighbors(ui).iter().map(|&j| u.ids[j as usize]).collect();
                assert_eq!(a, b, "{step}: list of id {}", idx.ids[i]);
            }
            for (ef, rerank) in [(10, true), (24, true), (48, true), (16, false)] {
                assert_eq!(
                    idx.search(&q, 10, ef, rerank, None).unwrap(),
                    u.search(&q, 10, ef, rerank, None).unwrap(),
                    "{step}: bits {bits} ef {ef} rerank {rerank}"
                );
            }
            let allow: Vec<i64> = live.iter().copied().step_by(3).collect();
            let f = Some(Filter::Ids(&allow));
            assert_eq!(
                idx.search_filtered(&q, 10, 32, true, None, f, None)
                    .unwrap(),
                u.search_filtered(&q, 10, 32, true, None, f, None).unwrap(),
                "{step}: filtered"
            );
        };
        check(&idx, "first add");
        idx.add(&x[1000 * dim..], Some(&ids[1000..]), None).unwrap();
        check(&idx, "second add");
        let order_before = idx.live_ids();
        let gone: Vec<i64> = ids.iter().copied().step_by(5).collect();
        idx.remove(&gone).unwrap();
        check(&idx, "remove");
        idx.compact().unwrap();
        check(&idx, "compact");
        let kept: Vec<i64> = order_before
            .into_iter()
            .filter(|i| !gone.contains(i))
            .collect();
        assert_eq!(idx.live_ids(), kept);
        // The ranks survive a save (format version 5 when renumbered) and a mapped load.
        let dir =
            std::env::temp_dir().join(format!("ordcore-renumber-{}-{bits}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("i.ordann");
        format::save(&idx, &path).unwrap();
        let raw = std::fs::read(&path).unwrap();
        let version = u32::from_le_bytes(raw[8..12].try_into().unwrap());
        assert_eq!(version, if bits > 2 { 5 } else { 1 });
        for mmap in [false, true] {
            let l = format::load(&path, mmap).unwrap();
            assert_eq!(l.rank, idx.rank);
            assert_eq!(l.live_ids(), idx.live_ids());
            assert_eq!(
                l.search(&q, 10, 24, true, None).unwrap(),
                idx.search(&q, 10, 24, true, None).unwrap()
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
