//! Hilbert indices in any dimension `D` with `D * nbits <= 64`, bit for bit the curve of the
//! `hilbertcurve` package (`HilbertCurve(p=nbits, n=D).distances_from_points`), i.e. John
//! Skilling's transpose algorithm ("Programming the Hilbert curve", AIP Conf. Proc. 707,
//! 381, 2004) with coordinate 0 supplying the most significant bit of each `D`-bit group of
//! the index.
//!
//! # The state machine behind the 2-D and 3-D fast paths
//!
//! Skilling's encoder walks the bit levels from the top. At level `q` it looks at bit `q` of
//! every coordinate and, for `i = 0..D`, either inverts the lower bits of coordinate 0 (bit
//! set) or exchanges the lower bits of coordinates 0 and `i` (bit clear). Those operations
//! touch only bits below `q`, so the bits a level sees are the original bits passed through
//! the composition of all operations of the levels above: a *signed permutation* of the `D`
//! axes. The final Gray-code step XORs each level with the parity of all (transformed) bits
//! above it. So the whole encoder is a finite-state machine whose state is
//! `(signed permutation, 1-bit parity)` (at most `D! 2^D * 2` states; only 8 are reachable
//! in 2-D and 48 in 3-D), reading `D` coordinate bits and emitting `D` index bits per level.
//! [`Table`] enumerates the reachable states by running exactly that per-level logic and
//! tabulates `L` levels per lookup (`L = 4` in 2-D: 4 KiB of `u16`; `L = 3` in 3-D: 48 KiB),
//! for encoding and decoding; `serialize` uses them, and the portable kernel of
//! [`super::fast`] builds its tiles (2-D: 7 levels a lookup; 3-D: 3) from the minimal
//! machine, [`Table::machine`] (the SIMD kernels run table-free forms of the same machine).
//! Other `D` run the branch-free generic loop ([`encode_point`], [`decode_point`]); tests
//! check the two paths agree and that both match `hilbertcurve`.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::morton::{gather, Spreader};
use super::{check_width, decode_rows, encode_rows, fast, Coord};
use crate::Result;

/// Skilling's `AxesToTranspose` followed by the bit interleave, for one point.
/// `x` holds the `D` coordinates (`< 2^nbits`) and is used as scratch.
#[inline]
pub fn encode_point(x: &mut [u64], nbits: u32, spread: &Spreader) -> u64 {
    let n = x.len();
    // Inverse undo excess work, top level first (branch-free).
    let mut level = nbits - 1;
    while level > 0 {
        let q = 1u64 << level;
        let p = q - 1;
        let m0 = 0u64.wrapping_sub((x[0] >> level) & 1);
        x[0] ^= p & m0;
        for i in 1..n {
            let mi = 0u64.wrapping_sub((x[i] >> level) & 1);
            x[0] ^= p & mi;
            let t = (x[0] ^ x[i]) & p & !mi;
            x[0] ^= t;
            x[i] ^= t;
        }
        level -= 1;
    }
    // Gray encode.
    for i in 1..n {
        x[i] ^= x[i - 1];
    }
    // t = XOR of (q - 1) over the set bits q > 1 of x[n-1]: bit j of t is the parity of the
    // bits of x[n-1] above j.
    let mut y = x[n - 1];
    y ^= y >> 1;
    y ^= y >> 2;
    y ^= y >> 4;
    y ^= y >> 8;
    y ^= y >> 16;
    y ^= y >> 32;
    let t = y >> 1;
    let mut h = 0u64;
    for (i, xi) in x.iter().enumerate() {
        h |= spread.spread(*xi ^ t, nbits) << (n - 1 - i);
    }
    h
}

/// Inverse of [`encode_point`] (Skilling's `TransposeToAxes`): writes the `D` coordinates of
/// index `h` to `x`.
#[inline]
pub fn decode_point(h: u64, x: &mut [u64], nbits: u32) {
    let n = x.len();
    for (i, xi) in x.iter_mut().enumerate() {
        *xi = gather(h >> (n - 1 - i), n, nbits);
    }
    // Gray decode by H ^ (H / 2).
    let t = x[n - 1] >> 1;
    for i in (1..n).rev() {
        x[i] ^= x[i - 1];
    }
    x[0] ^= t;
    // Undo excess work, bottom level first.
    for level in 1..nbits {
        let q = 1u64 << level;
        let p = q - 1;
        for i in (1..n).rev() {
            let mi = 0u64.wrapping_sub((x[i] >> level) & 1);
            x[0] ^= p & mi;
            let t = (x[0] ^ x[i]) & p & !mi;
            x[0] ^= t;
            x[i] ^= t;
        }
        let m0 = 0u64.wrapping_sub((x[0] >> level) & 1);
        x[0] ^= p & m0;
    }
}

/// One state of the Skilling state machine: the signed permutation that maps the original
/// bits of a level to the bits Skilling's loop sees (`seen[i] = bit[perm[i]] ^ flip[i]`) and
/// the parity of all seen bits above the level.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct State {
    perm: [u8; 3],
    flip: u8,
    parity: u8,
}

impl State {
    fn initial(d: usize) -> Self {
        let mut perm = [0u8; 3];
        for (i, p) in perm.iter_mut().enumerate().take(d) {
            *p = i as u8;
        }
        State {
            perm,
            flip: 0,
            parity: 0,
        }
    }

    /// Skilling's operations for one level whose seen bits are `w` (bit `i` = axis `i`).
    fn advance(mut self, d: usize, w: u8) -> Self {
        for i in 0..d {
            if w >> i & 1 == 1 {
                self.flip ^= 1;
            } else if i != 0 {
                self.perm.swap(0, i);
                let f0 = self.flip & 1;
                let fi = (self.flip >> i) & 1;
                self.flip = (self.flip & !1 & !(1 << i)) | fi | (f0 << i);
            }
        }
        self
    }

    /// Encodes one level: `v` has bit `i` = bit of coordinate `i`. Returns the `D` index
    /// bits (coordinate 0's bit most significant) and the next state.
    fn encode_level(self, d: usize, v: u8) -> (u8, Self) {
        let mut w = 0u8;
        for i in 0..d {
            let bit = (v >> self.perm[i]) & 1 ^ ((self.flip >> i) & 1);
            w |= bit << i;
        }
        let (out, g_last) = gray_out(d, w, self.parity);
        let mut next = self.advance(d, w);
        next.parity = self.parity ^ g_last;
        (out, next)
    }

    /// Decodes one level: `out` as produced by [`State::encode_level`].
    fn decode_level(self, d: usize, out: u8) -> (u8, Self) {
        // g[i] = out bit for axis i (axis 0 is the MSB) ^ parity; w[i] = g[i] ^ g[i-1].
        let mut w = 0u8;
        let mut prev = 0u8;
        for i in 0..d {
            let g = ((out >> (d - 1 - i)) & 1) ^ self.parity;
            w |= (g ^ prev) << i;
            prev = g;
        }
        let mut v = 0u8;
        for i in 0..d {
            let bit = ((w >> i) & 1) ^ ((self.flip >> i) & 1);
            v |= bit << self.perm[i];
        }
        let mut next = self.advance(d, w);
        next.parity = self.parity ^ prev;
        (v, next)
    }
}

/// Gray step of one level: `g[i] = w[0] ^ ... ^ w[i]`, each XORed with the parity; returns
/// the `D` output bits (axis 0 most significant) and `g[D-1]`.
fn gray_out(d: usize, w: u8, parity: u8) -> (u8, u8) {
    let mut out = 0u8;
    let mut g = 0u8;
    for i in 0..d {
        g ^= (w >> i) & 1;
        out |= (g ^ parity) << (d - 1 - i);
    }
    (out, g)
}

/// Lookup tables processing `k = 1..=L` levels per step for dimension `D <= 3`.
///
/// Entry layout: `(payload << STATE_BITS) | next_state`. Encoding index:
/// `(state << (D k)) | (c0 << (D-1) k) | ... | c_{D-1}` where `c_i` are `k` bits of
/// coordinate `i` (higher level = more significant); payload: the `D k` index bits. Decoding
/// index: `(state << (D k)) | index_bits`; payload: the coordinate chunks, laid out as the
/// encoding index.
pub struct Table {
    d: usize,
    levels: u32,
    enc: Vec<Vec<u16>>,
    dec: Vec<Vec<u16>>,
}

const STATE_BITS: u32 = 7;
const STATE_MASK: u16 = (1 << STATE_BITS) - 1;

impl Table {
    fn build(d: usize, levels: u32) -> Self {
        // Enumerate reachable states.
        let mut ids: HashMap<State, usize> = HashMap::new();
        let mut states = vec![State::initial(d)];
        ids.insert(states[0], 0);
        let mut k = 0;
        while k < states.len() {
            let s = states[k];
            for v in 0..(1u8 << d) {
                let (_, nx) = s.encode_level(d, v);
                if let std::collections::hash_map::Entry::Vacant(e) = ids.entry(nx) {
                    e.insert(states.len());
                    states.push(nx);
                }
            }
            k += 1;
        }
        assert!(states.len() <= 1 << STATE_BITS);
        let mut enc = Vec::new();
        let mut dec = Vec::new();
        for k in 1..=levels {
            let bits = d as u32 * k;
            assert!(bits + STATE_BITS <= 16);
            let mut e = vec![0u16; states.len() << bits];
            let mut dt = vec![0u16; states.len() << bits];
            for (sid, &s0) in states.iter().enumerate() {
                for input in 0..(1usize << bits) {
                    // Encoding: input is the coordinate chunks.
                    let mut s = s0;
                    let mut out = 0usize;
                    for lv in (0..k).rev() {
                        let mut v = 0u8;
                        for i in 0..d {
                            let chunk = input >> ((d - 1 - i) as u32 * k);
                            v |= (((chunk >> lv) & 1) as u8) << i;
                        }
                        let (o, nx) = s.encode_level(d, v);
                        out = (out << d) | o as usize;
                        s = nx;
                    }
                    e[(sid << bits) | input] = ((out as u16) << STATE_BITS) | ids[&s] as u16;
                    // Decoding: input is the index bits.
                    let mut s = s0;
                    let mut coords = 0usize;
                    for lv in (0..k).rev() {
                        let o = ((input >> (lv * d as u32)) & ((1 << d) - 1)) as u8;
                        let (v, nx) = s.decode_level(d, o);
                        for i in 0..d {
                            coords |= (((v >> i) & 1) as usize) << ((d - 1 - i) as u32 * k + lv);
                        }
                        s = nx;
                    }
                    dt[(sid << bits) | input] = ((coords as u16) << STATE_BITS) | ids[&s] as u16;
                }
            }
            enc.push(e);
            dec.push(dt);
        }
        Table {
            d,
            levels,
            enc,
            dec,
        }
    }

    /// The shared table for `D = 2` (4 levels per lookup) or `D = 3` (3 levels).
    pub fn get(d: usize) -> &'static Table {
        static T2: OnceLock<Table> = OnceLock::new();
        static T3: OnceLock<Table> = OnceLock::new();
        match d {
            2 => T2.get_or_init(|| Table::build(2, 4)),
            3 => T3.get_or_init(|| Table::build(3, 3)),
            _ => panic!("no Hilbert table for D = {d}"),
        }
    }

    /// One level of the curve's machine with its states merged where they act alike (the
    /// minimal machine; 4 states in 2-D): for each state (0 is the initial one) and each
    /// `v` (the level's coordinate bits, axis 0 most significant), the level's `D` index
    /// bits and the next state.
    pub(crate) fn machine(&self) -> Vec<Vec<(u8, u8)>> {
        let per = 1usize << self.d;
        let f = |e: u16| ((e >> STATE_BITS) as u8, (e & STATE_MASK) as u8);
        let lv: Vec<Vec<(u8, u8)>> = self.enc[0]
            .chunks(per)
            .map(|row| row.iter().map(|&e| f(e)).collect())
            .collect();
        // Classes by output row, refined by the classes of the next states until stable
        // (numbered by first appearance: the initial state stays 0).
        let number = |sig: Vec<Vec<u8>>| -> Vec<u8> {
            let mut seen: Vec<Vec<u8>> = Vec::new();
            sig.into_iter()
                .map(|g| match seen.iter().position(|x| *x == g) {
                    Some(i) => i as u8,
                    None => {
                        seen.push(g);
                        (seen.len() - 1) as u8
                    }
                })
                .collect()
        };
        let mut class = number(lv.iter().map(|r| r.iter().map(|e| e.0).collect()).collect());
        loop {
            let sig = (0..lv.len())
                .map(|s| {
                    let nx = lv[s].iter().map(|e| class[e.1 as usize]);
                    std::iter::once(class[s]).chain(nx).collect()
                })
                .collect();
            let next = number(sig);
            let done = next.iter().max() == class.iter().max();
            class = next;
            if done {
                break;
            }
        }
        let mut m = vec![vec![(0u8, 0u8); per]; *class.iter().max().unwrap() as usize + 1];
        for (s, row) in lv.iter().enumerate() {
            for (v, &(o, nx)) in row.iter().enumerate() {
                m[class[s] as usize][v] = (o, class[nx as usize]);
            }
        }
        m
    }

    /// The decoding form of [`Table::machine`] `m`: for each state and each level's `D`
    /// index bits, the level's coordinate bits and the next state.
    pub(crate) fn inverse(m: &[Vec<(u8, u8)>]) -> Vec<Vec<(u8, u8)>> {
        m.iter()
            .map(|row| {
                let mut d = vec![(0u8, 0u8); row.len()];
                for (v, &(o, nx)) in row.iter().enumerate() {
                    d[o as usize] = (v as u8, nx);
                }
                d
            })
            .collect()
    }

    /// For [`Table::machine`]: the state from which `pad` levels of zero coordinates give
    /// index bits 0 and lead to the initial state, so that a width short of a multiple of
    /// a table's levels can start above the point; `None` if there is none.
    pub(crate) fn padded_start(m: &[Vec<(u8, u8)>], pad: u32) -> Option<u32> {
        (0..m.len() as u32).find(|&s0| {
            let (mut s, mut h) = (s0 as usize, 0u8);
            for _ in 0..pad {
                let (o, nx) = m[s][0];
                h |= o;
                s = nx as usize;
            }
            s == 0 && h == 0
        })
    }

    /// Hilbert index of one point (`coords.len() == D`), by table lookups.
    #[inline(always)]
    pub fn encode(&self, coords: &[u64], nbits: u32) -> u64 {
        let d = self.d as u32;
        let big = self.levels;
        let mut shift = nbits;
        let mut state = 0u16;
        let mut h = 0u64;
        let step = |k: u32, shift: u32, state: &mut u16, h: &mut u64| {
            let m = (1u64 << k) - 1;
            let mut idx = (*state as usize) << (d * k);
            for (i, &c) in coords.iter().enumerate() {
                idx |= (((c >> shift) & m) as usize) << ((d - 1 - i as u32) * k);
            }
            let e = self.enc[k as usize - 1][idx];
            *h = (*h << (d * k)) | (e >> STATE_BITS) as u64;
            *state = e & STATE_MASK;
        };
        let r = nbits % big;
        if r != 0 {
            shift -= r;
            step(r, shift, &mut state, &mut h);
        }
        while shift > 0 {
            shift -= big;
            step(big, shift, &mut state, &mut h);
        }
        h
    }

    /// Coordinates of one index, by table lookups.
    #[inline(always)]
    pub fn decode(&self, h: u64, out: &mut [u64], nbits: u32) {
        let d = self.d as u32;
        let big = self.levels;
        let mut shift = nbits;
        let mut state = 0u16;
        for o in out.iter_mut() {
            *o = 0;
        }
        let step = |k: u32, shift: u32, state: &mut u16, out: &mut [u64]| {
            let idx = ((*state as usize) << (d * k))
                | ((h >> (shift * d)) & ((1 << (d * k)) - 1)) as usize;
            let e = self.dec[k as usize - 1][idx];
            let c = (e >> STATE_BITS) as u64;
            let m = (1u64 << k) - 1;
            for (i, o) in out.iter_mut().enumerate() {
                *o = (*o << k) | ((c >> ((d - 1 - i as u32) * k)) & m);
            }
            *state = e & STATE_MASK;
        };
        let r = nbits % big;
        if r != 0 {
            shift -= r;
            step(r, shift, &mut state, out);
        }
        while shift > 0 {
            shift -= big;
            step(big, shift, &mut state, out);
        }
    }
}

/// Hilbert indices of the rows of a row-major `(n, ndim)` array. Fails when
/// `ndim * nbits > 64`, `nbits < 1`, or a value is outside `[0, 2^nbits)` (naming the first
/// offending row).
pub fn encode<T: Coord>(coords: &[T], ndim: usize, nbits: i64) -> Result<Vec<u64>> {
    match ndim {
        2 | 3 => fast::encode::<T, u64>(
            fast::Coords::Rows(coords),
            ndim,
            nbits,
            fast::Curve::Hilbert,
        ),
        _ => encode_generic(coords, ndim, check_width(ndim, nbits)?),
    }
}

/// [`encode`] by the generic loop for every `D` (the reference for the table paths).
pub fn encode_generic<T: Coord>(coords: &[T], ndim: usize, nbits: u32) -> Result<Vec<u64>> {
    let sp = Spreader::new(ndim);
    let limit = super::low_mask(nbits);
    encode_rows(coords, ndim, nbits, move |r| {
        let mut buf = [0u64; 64];
        let x = &mut buf[..ndim];
        for (xi, v) in x.iter_mut().zip(r) {
            // Masking keeps invalid rows (reported afterwards) from reaching bits the
            // spreader cannot place.
            *xi = v.to_u64() & limit;
        }
        encode_point(x, nbits, &sp)
    })
}

/// Inverse of [`encode`]: a row-major `(n, ndim)` array. Fails when an index is
/// `>= 2^(ndim * nbits)` (naming the first offending row).
pub fn decode<T: Coord>(index: &[T], nbits: i64, ndim: usize) -> Result<Vec<u64>> {
    match ndim {
        2 | 3 => fast::decode::<T, u64>(index, ndim, nbits, fast::Curve::Hilbert, false, "index"),
        _ => decode_generic(index, check_width(ndim, nbits)?, ndim),
    }
}

/// [`decode`] by the generic loop for every `D`.
pub fn decode_generic<T: Coord>(index: &[T], nbits: u32, ndim: usize) -> Result<Vec<u64>> {
    let total = nbits * ndim as u32;
    decode_rows(index, ndim, total, "index", move |h, o| {
        decode_point(h, o, nbits)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rows(seed: u64, n: usize, ndim: usize, nbits: u32) -> Vec<u64> {
        (0..(n * ndim) as u64)
            .map(|i| crate::rng::counter_u64(seed, nbits as u64, i) & super::super::low_mask(nbits))
            .collect()
    }

    #[test]
    fn hilbertcurve_reference_values() {
        // S7: HilbertCurve(p=12, n=3).
        let h = encode(&[999u32, 999, 999, 479, 724, 495], 3, 12).unwrap();
        assert_eq!(h, vec![766_935_405, 975_605_184]);
        // 2-D order 1: (0,0) (0,1) (1,1) (1,0).
        let h = encode(&[0u8, 0, 0, 1, 1, 1, 1, 0], 2, 1).unwrap();
        assert_eq!(h, vec![0, 1, 2, 3]);
        // S6
        let h = encode(&[u32::MAX as u64, 0], 2, 32).unwrap();
        assert_eq!(h, vec![u64::MAX]);
    }

    #[test]
    fn state_counts() {
        // At most 8 signed permutations x 2 parities in 2-D and 48 x 2 in 3-D; the
        // reachable sets are smaller (the parity is a function of the permutation in 2-D).
        assert_eq!(Table::get(2).enc[0].len() >> 2, 8);
        assert_eq!(Table::get(3).enc[0].len() >> 3, 48);
    }

    #[test]
    fn tables_agree_with_generic_exhaustively_small() {
        for d in [2usize, 3] {
            for nbits in 1..=(if d == 2 { 5 } else { 3 }) {
                let side = 1u64 << nbits;
                let total = side.pow(d as u32);
                let pts: Vec<u64> = (0..total)
                    .flat_map(|mut c| {
                        (0..d).map(move |_| {
                            let v = c % side;
                            c /= side;
                            v
                        })
                    })
                    .collect();
                let fast = encode(&pts, d, nbits as i64).unwrap();
                let slow = encode_generic(&pts, d, nbits).unwrap();
                assert_eq!(fast, slow, "d={d} nbits={nbits}");
                let mut sorted = fast.clone();
                sorted.sort_unstable();
                assert!(sorted.iter().copied().eq(0..total));
                assert_eq!(decode(&fast, nbits as i64, d).unwrap(), pts);
            }
        }
    }

    proptest! {
        #[test]
        fn table_and_generic_paths_agree(d in 2usize..4, seed in any::<u64>()) {
            for nbits in 1..=(64 / d) as u32 {
                let pts = rows(seed, 16, d, nbits);
                let fast = encode(&pts, d, nbits as i64).unwrap();
                let slow = encode_generic(&pts, d, nbits).unwrap();
                prop_assert_eq!(&fast, &slow);
                prop_assert_eq!(decode(&fast, nbits as i64, d).unwrap(), pts.clone());
                prop_assert_eq!(decode_generic(&fast, nbits, d).unwrap(), pts);
            }
        }

        #[test]
        fn generic_round_trips(d in 1usize..12, seed in any::<u64>()) {
            for nbits in 1..=(64 / d) as u32 {
                let pts = rows(seed, 8, d, nbits);
                let h = encode(&pts, d, nbits as i64).unwrap();
                prop_assert_eq!(decode(&h, nbits as i64, d).unwrap(), pts);
            }
        }

        #[test]
        fn consecutive_indices_are_neighbours(d in 1usize..6, seed in any::<u64>()) {
            let nbits = (12 / d).max(1) as u32;
            let total = super::super::low_mask(nbits * d as u32);
            let h0 = crate::rng::counter_u64(seed, 0, 0) % total;
            let pts = decode(&[h0, h0 + 1], nbits as i64, d).unwrap();
            let dist: u64 = (0..d).map(|i| pts[i].abs_diff(pts[d + i])).sum();
            prop_assert_eq!(dist, 1);
        }
    }
}
