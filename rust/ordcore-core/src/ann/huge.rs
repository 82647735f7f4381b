//! Buffers for the search hot path (codes, adjacency, rerank vectors) backed by transparent
//! huge pages where the kernel allows it.
//!
//! Queries touch nodes at random across tens of MB, so with 4 KB pages nearly every access
//! misses the TLB. With THP in `madvise` mode (a common default) anonymous memory only gets
//! 2 MB pages when asked for: [`with_capacity`] reserves room for one extra huge page and marks
//! the 2 MB-aligned part of the buffer `MADV_HUGEPAGE` before anything is written, so the first
//! writes fault in huge pages. Elsewhere (or if the kernel refuses) this is a plain `Vec`.

/// Huge page size assumed for the advice (x86-64 and most arm64 kernels).
const HUGE: usize = 2 << 20;

/// Below this many bytes the advice is not worth a huge page of slack.
const MIN_BYTES: usize = 4 * HUGE;

/// An empty `Vec` with room for at least `cap` elements, advised to use huge pages when large.
pub fn with_capacity<T>(cap: usize) -> Vec<T> {
    let size = std::mem::size_of::<T>().max(1);
    if cap * size < MIN_BYTES {
        return Vec::with_capacity(cap);
    }
    let v = Vec::with_capacity(cap + HUGE / size);
    advise(v.as_ptr() as usize, v.capacity() * size);
    v
}

/// `len` copies of `value` in a huge-page-advised buffer.
pub fn filled<T: Clone>(len: usize, value: T) -> Vec<T> {
    let mut v = with_capacity(len);
    v.resize(len, value);
    v
}

/// A copy of `s` in a huge-page-advised buffer.
pub fn copied<T: Clone>(s: &[T]) -> Vec<T> {
    let mut v = with_capacity(s.len());
    v.extend_from_slice(s);
    v
}

/// Appends `s` to `v`, moving `v` to a larger huge-page-advised buffer when it must grow.
pub fn extend<T: Clone>(v: &mut Vec<T>, s: &[T]) {
    if v.capacity() - v.len() < s.len() {
        let mut w = with_capacity(v.len() + s.len());
        w.extend_from_slice(v);
        *v = w;
    }
    v.extend_from_slice(s);
}

#[cfg(target_os = "linux")]
fn advise(addr: usize, len: usize) {
    let start = addr.next_multiple_of(HUGE);
    let end = (addr + len) / HUGE * HUGE;
    if end > start {
        // SAFETY: [start, end) lies inside a live allocation this process owns (the Vec's
        // buffer); MADV_HUGEPAGE only changes how the kernel backs those pages, never their
        // contents, and a failure (e.g. THP disabled) is harmless, so the result is ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_addr: usize, _len: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_behave_like_vec() {
        let big = MIN_BYTES / 4 + 3;
        let v: Vec<u32> = filled(big, 7);
        assert_eq!(v.len(), big);
        assert!(v.iter().all(|&x| x == 7));
        let mut w = copied(&v[..10]);
        extend(&mut w, &v);
        assert_eq!(w.len(), big + 10);
        assert!(w.iter().all(|&x| x == 7));
        let small: Vec<u8> = filled(5, 1);
        assert_eq!(small, vec![1; 5]);
        let mut e: Vec<u64> = Vec::new();
        extend(&mut e, &[1, 2, 3]);
        assert_eq!(e, vec![1, 2, 3]);
    }
}
