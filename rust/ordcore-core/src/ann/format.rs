//! The `.ordann` file format (versions 1 to 5). All integers and floats are little-endian.
//! Version 2 adds the scalar codes (`bits` 4 and 8, codes laid out as in [`super::sq`]) and
//! the compact rerank stores (byte 27, see [`super::store`]); version 3 adds the index's
//! metadata text (UTF-8; the Python layer stores the automatic code choice there as JSON):
//! its length at bytes 88..96 and its bytes as the last payload section; version 4 adds the
//! search-time degree bound of lists ordered core first (bytes 96..100, see
//! [`super::order`]; 4- and 8-bit indexes with at least one node); version 5 adds the
//! insertion rank of each node (the last payload section, `u32[n]`, a permutation of
//! `0..n`), written for 4- and 8-bit indexes whose nodes are renumbered in graph order (see
//! [`super::renumber`]; files of versions 1 to 4 read with node number = rank). `save` writes the lowest
//! version that holds the index (1 for 1- and 2-bit codes with float32 vectors and no
//! metadata, so older ordcore releases keep reading those files), and `load` reads all five
//! (an index read from versions 1 to 3 has no degree bound: its searches expand every
//! neighbour, as they did).
//!
//! ```text
//! offset  size  field
//! 0       8     magic b"ORDCANN\0"
//! 8       4     u32 format version (1)
//! 12      4     u32 byte-order mark 0x01020304 (reads 0x04030201 on a byte-swapped file)
//! 16      8     u64 dim
//! 24      1     u8 metric (0 cosine, 1 ip, 2 l2)
//! 25      1     u8 bits (1 or 2; version 2: also 4 or 8)
//! 26      1     u8 rotation (0 none, 1 hadamard)
//! 27      1     version 1: reserved (0); version 2: rerank dtype (0 float32, 1 float16,
//!               2 bfloat16, 3 int8)
//! 28      4     u32 R
//! 32      4     u32 L_build
//! 36      4     u32 entry node
//! 40      8     f64 alpha
//! 48      8     u64 seed
//! 56      8     u64 n (nodes, removed ones included)
//! 64      8     u64 code_dim (dim, or the padded dimension under rotation)
//! 72      8     u64 payload length in bytes
//! 80      4     u32 CRC-32 (IEEE) of the payload
//! 84      4     u32 CRC-32 of bytes 0..84 (version 4: of bytes 0..84 and 88..128)
//! 88      8     version 3: u64 metadata length in bytes; versions 1 and 2: reserved (0)
//! 96      4     version 4: u32 search-time degree bound D (1..=R); earlier: reserved (0)
//! 100     28    reserved (0)
//! 128           payload: each section starts at a multiple of 64 bytes (zero padding)
//!               ids i64[n] | removed u8[n] | degree u32[n] | adjacency u32[n*R] |
//!               codes u64[n*code_words] | mean f32[dim] (rotation only) |
//!               vectors: n rows in the rerank dtype (normalized under cosine) |
//!               metadata u8[metadata length] (version 3) |
//!               insertion ranks u32[n] (version 5)
//! ```
//! `save` writes `<path>.tmp-<pid>`, flushes it to disk and renames it over `path`.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use super::encode::code_words;
use super::rotation::Rotation;
use super::store::{RerankDtype, RowBytes};
use super::{validate_rows, BQGraphIndex, Metric, Params, Vectors};
use crate::{Error, Result};

pub const MAGIC: &[u8; 8] = b"ORDCANN\0";
/// The newest version this release reads and writes.
pub const VERSION: u32 = 5;

/// The header checksum stored at bytes 84..88: CRC-32 of bytes 0..84, and from version 4 on
/// also of bytes 88..128 (metadata length, degree bound, reserved), so that every header byte
/// a version reads is covered.
fn header_crc(h: &[u8], version: u32) -> u32 {
    let mut c = crc32fast::Hasher::new();
    c.update(&h[..84]);
    if version >= 4 {
        c.update(&h[88..HEADER]);
    }
    c.finalize()
}

/// The version `save` writes for an index of `bits`, rerank store `dtype`, `meta_len` bytes
/// of metadata and search-time degree bound `degree` (0: none).
fn version_for(bits: usize, dtype: RerankDtype, meta_len: usize, degree: u32, ranked: bool) -> u32 {
    if ranked {
        5
    } else if degree > 0 {
        4
    } else if meta_len > 0 {
        3
    } else if bits <= 2 && dtype == RerankDtype::Float32 {
        1
    } else {
        2
    }
}
const BOM: u32 = 0x0102_0304;
const HEADER: usize = 128;

fn pad64(x: usize) -> usize {
    x.div_ceil(64) * 64
}

struct Layout {
    ids: usize,
    removed: usize,
    deg: usize,
    adj: usize,
    codes: usize,
    mean: usize,
    vectors: usize,
    meta: usize,
    ranks: usize,
    end: usize,
}

#[allow(clippy::too_many_arguments)]
fn layout(
    n: usize,
    r: usize,
    cw: usize,
    dim: usize,
    rotation: bool,
    dtype: RerankDtype,
    meta_len: usize,
    ranked: bool,
) -> Option<Layout> {
    let mut off = 0usize;
    let mut sec = |bytes: usize| -> Option<usize> {
        let s = off;
        off = pad64(off.checked_add(bytes)?);
        Some(s)
    };
    let ids = sec(n.checked_mul(8)?)?;
    let removed = sec(n)?;
    let deg = sec(n.checked_mul(4)?)?;
    let adj = sec(n.checked_mul(r)?.checked_mul(4)?)?;
    let codes = sec(n.checked_mul(cw)?.checked_mul(8)?)?;
    let mean = sec(if rotation { dim.checked_mul(4)? } else { 0 })?;
    let vectors = sec(n.checked_mul(dtype.row_bytes(dim))?)?;
    let meta = sec(meta_len)?;
    let ranks = sec(if ranked { n.checked_mul(4)? } else { 0 })?;
    Some(Layout {
        ids,
        removed,
        deg,
        adj,
        codes,
        mean,
        vectors,
        meta,
        ranks,
        end: off,
    })
}

struct HashingWriter<W: Write> {
    inner: W,
    crc: crc32fast::Hasher,
    written: usize,
}

impl<W: Write> HashingWriter<W> {
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.crc.update(bytes);
        self.written += bytes.len();
        self.inner.write_all(bytes)
    }
    fn pad_to(&mut self, off: usize) -> std::io::Result<()> {
        let zeros = [0u8; 64];
        while self.written < off {
            let k = (off - self.written).min(64);
            self.put(&zeros[..k])?;
        }
        Ok(())
    }
}

macro_rules! put_le {
    ($w:expr, $slice:expr) => {{
        let mut buf = Vec::with_capacity(1 << 16);
        for chunk in $slice.chunks(4096) {
            buf.clear();
            for v in chunk {
                buf.extend_from_slice(&v.to_le_bytes());
            }
            $w.put(&buf)?;
        }
    }};
}

/// Writes `index` to `path` atomically (temporary file + rename).
pub fn save(index: &BQGraphIndex, path: &Path) -> Result<()> {
    let p = &index.params;
    let n = index.n_nodes();
    let dtype = index.rerank_dtype();
    let meta = index.meta.as_bytes();
    let ranked = index.renumbered();
    let lay = layout(
        n,
        p.r,
        index.cw,
        p.dim,
        p.rotation,
        dtype,
        meta.len(),
        ranked,
    )
    .ok_or_else(|| Error::invalid("path", "index too large to save"))?;
    if path.as_os_str().is_empty() || path.is_dir() {
        return Err(Error::Io(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory (give a file name)",
        )));
    }
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp_name);
    let result = (|| -> Result<()> {
        let mut file = File::create(&tmp)?;
        file.write_all(&[0u8; HEADER])?;
        let mut w = HashingWriter {
            inner: BufWriter::with_capacity(1 << 20, &mut file),
            crc: crc32fast::Hasher::new(),
            written: 0,
        };
        put_le!(w, index.ids);
        w.pad_to(lay.removed)?;
        let removed: Vec<u8> = index.deleted.iter().map(|&d| d as u8).collect();
        w.put(&removed)?;
        w.pad_to(lay.deg)?;
        put_le!(w, index.deg);
        w.pad_to(lay.adj)?;
        put_le!(w, index.adj);
        w.pad_to(lay.codes)?;
        put_le!(w, index.codes);
        w.pad_to(lay.mean)?;
        if let Some(rot) = &index.rot {
            put_le!(w, rot.mean());
        }
        w.pad_to(lay.vectors)?;
        match &index.compact {
            Some(c) => w.put(c.as_bytes())?,
            None => put_le!(w, index.vectors.as_slice()),
        }
        w.pad_to(lay.meta)?;
        w.put(meta)?;
        w.pad_to(lay.ranks)?;
        if ranked {
            put_le!(w, index.rank);
        }
        w.pad_to(lay.end)?;
        w.inner.flush()?;
        let payload_crc = w.crc.clone().finalize();
        drop(w);
        let mut h = [0u8; HEADER];
        h[0..8].copy_from_slice(MAGIC);
        let version = version_for(p.bits, dtype, meta.len(), index.search_degree, ranked);
        h[8..12].copy_from_slice(&version.to_le_bytes());
        h[27] = dtype.code();
        h[12..16].copy_from_slice(&BOM.to_le_bytes());
        h[16..24].copy_from_slice(&(p.dim as u64).to_le_bytes());
        h[24] = p.metric.code();
        h[25] = p.bits as u8;
        h[26] = p.rotation as u8;
        h[28..32].copy_from_slice(&(p.r as u32).to_le_bytes());
        h[32..36].copy_from_slice(&(p.l_build as u32).to_le_bytes());
        h[36..40].copy_from_slice(&index.entry.to_le_bytes());
        h[40..48].copy_from_slice(&p.alpha.to_le_bytes());
        h[48..56].copy_from_slice(&p.seed.to_le_bytes());
        h[56..64].copy_from_slice(&(n as u64).to_le_bytes());
        h[64..72].copy_from_slice(&(index.code_dim as u64).to_le_bytes());
        h[72..80].copy_from_slice(&(lay.end as u64).to_le_bytes());
        h[80..84].copy_from_slice(&payload_crc.to_le_bytes());
        h[88..96].copy_from_slice(&(meta.len() as u64).to_le_bytes());
        h[96..100].copy_from_slice(&index.search_degree.to_le_bytes());
        let hc = header_crc(&h, version);
        h[84..88].copy_from_slice(&hc.to_le_bytes());
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&h)?;
        file.sync_all()?;
        Ok(())
    })();
    // On any failure, the rename included, the temporary file goes away.
    match result.and_then(|()| Ok(std::fs::rename(&tmp, path)?)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

fn fmt_err(reason: impl Into<String>) -> Error {
    Error::Format(reason.into())
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap_or([0; 4]))
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]))
}

macro_rules! read_le {
    ($ty:ty, $bytes:expr) => {
        $bytes
            .chunks_exact(std::mem::size_of::<$ty>())
            .map(|c| <$ty>::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect::<Vec<$ty>>()
    };
}

/// Reads an index file; with `mmap`, the float vectors stay mapped from the file.
pub fn load(path: &Path, mmap: bool) -> Result<BQGraphIndex> {
    // Operating-system errors keep their kind (the binding picks FileNotFoundError,
    // PermissionError, IsADirectoryError from it) and name the path.
    let io = |e: std::io::Error| {
        Error::Io(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", path.display()),
        ))
    };
    let file = File::open(path).map_err(io)?;
    if file.metadata().map_err(io)?.is_dir() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory, not an index file",
        )));
    }
    // SAFETY: the mapping is read-only; ordcore's own saves never modify a file in place
    // (they rename a new file over it). A file truncated by another process while mapped
    // is outside what memory maps can defend against (documented).
    let map = unsafe { memmap2::Mmap::map(&file).map_err(io)? };
    let b: &[u8] = &map;
    let name = path.display();
    if b.len() < 8 || &b[0..8] != MAGIC {
        return Err(fmt_err(format!(
            "{name}: not an ordcore ANN index (bad magic bytes)"
        )));
    }
    if b.len() < HEADER {
        return Err(fmt_err(format!(
            "{name}: truncated header ({} of {HEADER} bytes)",
            b.len()
        )));
    }
    let bom = u32_at(b, 12);
    if bom != BOM {
        return Err(fmt_err(format!(
            "{name}: byte-order mark {bom:#010x} (expected {BOM:#010x}): wrong endianness or corrupted header"
        )));
    }
    let version = u32_at(b, 8);
    if header_crc(b, version) != u32_at(b, 84) {
        return Err(fmt_err(format!(
            "{name}: header checksum mismatch (corrupted header)"
        )));
    }
    if version > VERSION {
        return Err(fmt_err(format!(
            "{name}: format version {version} is newer than this ordcore reads ({VERSION}); upgrade ordcore"
        )));
    }
    if version == 0 {
        return Err(fmt_err(format!("{name}: invalid format version 0")));
    }
    let meta_len = if version >= 3 { u64_at(b, 88) } else { 0 };
    let reserved = match version {
        1 | 2 => 88,
        3 => 96,
        _ => 100,
    };
    let degree = if version >= 4 { u32_at(b, 96) } else { 0 };
    if (version == 1 && b[27] != 0) || b[reserved..HEADER].iter().any(|&x| x != 0) {
        return Err(fmt_err(format!(
            "{name}: reserved header bytes are not zero (corrupted header)"
        )));
    }
    let dim = u64_at(b, 16) as usize;
    let metric = Metric::from_code(b[24])
        .ok_or_else(|| fmt_err(format!("{name}: unknown metric code {}", b[24])))?;
    let bits = b[25] as usize;
    let rotation = match b[26] {
        0 => false,
        1 => true,
        x => return Err(fmt_err(format!("{name}: unknown rotation code {x}"))),
    };
    let r = u32_at(b, 28) as usize;
    let l_build = u32_at(b, 32) as usize;
    let entry = u32_at(b, 36);
    let alpha = f64::from_le_bytes(b[40..48].try_into().unwrap_or([0; 8]));
    let seed = u64_at(b, 48);
    let n = u64_at(b, 56) as usize;
    let code_dim = u64_at(b, 64) as usize;
    let payload_len = u64_at(b, 72) as usize;
    let params = Params {
        dim,
        metric,
        bits,
        r,
        l_build,
        alpha,
        rotation,
        seed,
    };
    let dtype = RerankDtype::from_code(b[27])
        .ok_or_else(|| fmt_err(format!("{name}: unknown rerank dtype code {}", b[27])))?;
    if version < version_for(bits, dtype, 0, 0, false) {
        return Err(fmt_err(format!(
            "{name}: bits {bits} needs format version {}, the header says {version}",
            version_for(bits, dtype, 0, 0, false)
        )));
    }
    let ranked = version >= 5;
    // Version 4 is written exactly for 4- and 8-bit indexes with ordered lists.
    if version >= 4 && (bits <= 2 || degree == 0 || degree as usize > r || n == 0) {
        return Err(fmt_err(format!(
            "{name}: search-time degree bound {degree} is invalid for bits {bits}, R = {r}, \
             {n} nodes (expected 1..=R for a non-empty 4- or 8-bit index)"
        )));
    }
    // The metadata is a section of the payload: at most the file's length.
    let meta_len = usize::try_from(meta_len)
        .ok()
        .filter(|&m| m <= b.len())
        .ok_or_else(|| {
            fmt_err(format!(
                "{name}: metadata length {meta_len} exceeds the file"
            ))
        })?;
    let mut index = BQGraphIndex::new(params)
        .map_err(|e| fmt_err(format!("{name}: invalid parameters in header: {e}")))?;
    if index.code_dim != code_dim {
        return Err(fmt_err(format!(
            "{name}: code dimension {code_dim} does not match dim {dim}"
        )));
    }
    if n >= u32::MAX as usize {
        return Err(fmt_err(format!(
            "{name}: {n} nodes (an index holds fewer than 2^32 - 1)"
        )));
    }
    index
        .set_rerank_dtype(dtype)
        .map_err(|e| fmt_err(format!("{name}: {e}")))?;
    let lay = layout(n, r, index.cw, dim, rotation, dtype, meta_len, ranked)
        .ok_or_else(|| fmt_err(format!("{name}: sizes in header overflow")))?;
    if lay.end != payload_len {
        return Err(fmt_err(format!(
            "{name}: payload length {payload_len} does not match the header's sizes ({})",
            lay.end
        )));
    }
    let expected = HEADER + payload_len;
    if b.len() != expected {
        return Err(fmt_err(format!(
            "{name}: truncated or extended file: {} bytes, expected {expected}",
            b.len()
        )));
    }
    let payload = &b[HEADER..];
    if crc32fast::hash(payload) != u32_at(b, 80) {
        return Err(fmt_err(format!(
            "{name}: payload checksum mismatch (corrupted data)"
        )));
    }
    index.meta = String::from_utf8(payload[lay.meta..lay.meta + meta_len].to_vec())
        .map_err(|_| fmt_err(format!("{name}: the metadata is not UTF-8 text")))?;
    let ids = read_le!(i64, &payload[lay.ids..lay.ids + 8 * n]);
    let removed = &payload[lay.removed..lay.removed + n];
    let deg = read_le!(u32, &payload[lay.deg..lay.deg + 4 * n]);
    let adj = read_le!(u32, &payload[lay.adj..lay.adj + 4 * n * r]);
    let codes = read_le!(u64, &payload[lay.codes..lay.codes + 8 * n * index.cw]);
    // Structural checks, so a file with a valid checksum but bad contents cannot crash us.
    if removed.iter().any(|&x| x > 1) {
        return Err(fmt_err(format!("{name}: invalid removed flag")));
    }
    for (i, &d) in deg.iter().enumerate() {
        if d as usize > r {
            return Err(fmt_err(format!(
                "{name}: node {i} has degree {d} > R = {r}"
            )));
        }
        if adj[i * r..i * r + d as usize]
            .iter()
            .any(|&j| j as usize >= n)
        {
            return Err(fmt_err(format!(
                "{name}: node {i} has an edge out of range"
            )));
        }
    }
    if n > 0 && entry as usize >= n {
        return Err(fmt_err(format!("{name}: entry node {entry} out of range")));
    }
    if let Some(i) = ids.iter().position(|&id| id < 0) {
        return Err(fmt_err(format!(
            "{name}: node {i} has the negative id {}",
            ids[i]
        )));
    }
    let rank: Vec<u32> = if ranked {
        read_le!(u32, &payload[lay.ranks..lay.ranks + 4 * n])
    } else {
        (0..n as u32).collect()
    };
    // The ranks are a permutation of 0..n.
    let mut rank_seen = vec![false; n];
    for (i, &k) in rank.iter().enumerate() {
        if k as usize >= n || std::mem::replace(&mut rank_seen[k as usize], true) {
            return Err(fmt_err(format!(
                "{name}: node {i} has an insertion rank {k} out of range or repeated"
            )));
        }
    }
    let deleted: Vec<bool> = removed.iter().map(|&x| x == 1).collect();
    let mut id_map = HashMap::with_capacity(n);
    for (i, &id) in ids.iter().enumerate() {
        if !deleted[i] && id_map.insert(id, i as u32).is_some() {
            return Err(fmt_err(format!("{name}: id {id} appears twice")));
        }
    }
    let bad_code = if bits <= 2 {
        super::codes::first_row_with_bits_past_dim(&codes, code_dim, bits)
    } else {
        super::sq::first_invalid_code(&codes, super::sq::SqLayout::new(code_dim, bits))
    };
    if let Some(row) = bad_code {
        return Err(fmt_err(format!(
            "{name}: the code of node {row} has bits set past the code dimension {code_dim}"
        )));
    }
    if rotation && n > 0 {
        let mean = read_le!(f32, &payload[lay.mean..lay.mean + 4 * dim]);
        if let Some(c) = mean.iter().position(|v| !v.is_finite()) {
            return Err(fmt_err(format!(
                "{name}: the rotation's mean has a non-finite value ({}) at column {c}",
                mean[c]
            )));
        }
        index.rot = Some(Rotation::new(dim, seed, mean)?);
    }
    let vec_off = HEADER + lay.vectors;
    let vec_len = n * dim;
    let vectors = if let Some(c) = &mut index.compact {
        let len = n * dtype.row_bytes(dim);
        c.bytes = if mmap {
            RowBytes::Mapped {
                map,
                offset: vec_off,
                len,
            }
        } else {
            RowBytes::Owned(b[vec_off..vec_off + len].to_vec())
        };
        let mut buf = vec![0f32; dim];
        for i in 0..n {
            c.decode(i, &mut buf);
            validate_rows(&buf, dim, metric, "vectors").map_err(|e| {
                fmt_err(format!(
                    "{name}: invalid stored vector {i}: {}",
                    e.to_string().trim_start_matches("vectors: ")
                ))
            })?;
        }
        Vectors::Owned(Vec::new())
    } else if mmap && cfg!(target_endian = "little") && vec_off.is_multiple_of(4) {
        Vectors::Mapped {
            map,
            offset: vec_off,
            len: vec_len,
        }
    } else {
        Vectors::Owned(super::huge::copied(&read_le!(
            f32,
            &b[vec_off..vec_off + 4 * vec_len]
        )))
    };
    // What `add` validates (finite values, no zero rows under cosine, bounded norms under ip
    // and l2) holds for the stored vectors too, mapped or not: a file with valid checksums
    // cannot make searches return NaN.
    validate_rows(vectors.as_slice(), dim, metric, "vectors").map_err(|e| {
        fmt_err(format!(
            "{name}: invalid stored vector: {}",
            e.to_string().trim_start_matches("vectors: ")
        ))
    })?;
    index.n_deleted = deleted.iter().filter(|&&d| d).count();
    index.codes = super::huge::copied(&codes);
    index.adj = super::huge::copied(&adj);
    index.deg = deg;
    index.ids = ids;
    index.rank = rank;
    index.deleted = deleted;
    index.id_map = id_map;
    index.entry = entry;
    index.vectors = vectors;
    index.search_degree = degree;
    index.refresh_start_sample();
    debug_assert_eq!(index.cw, code_words(index.code_dim, index.params.bits));
    Ok(index)
}
