//! Macros binding a [`super::graph::GraphRef`] over an index with the distance kernel of its
//! code family and width.

/// Binds `$g` to a [`GraphRef`] over the index's codes and lists with the distance `$dist`.
macro_rules! graph_with {
    ($self:expr, $dist:expr, $g:ident => $body:expr) => {{
        let $g = $crate::ann::graph::GraphRef {
            dist: $dist,
            codes: &$self.codes,
            adj: &$self.adj,
            deg: &$self.deg,
            r: $self.stride,
            limit: usize::MAX,
        };
        $body
    }};
}

macro_rules! with_graph {
    ($self:expr, $g:ident => $body:expr) => {{
        let words = $crate::ann::codes::words_for($self.code_dim);
        if $self.params.bits > 2 {
            graph_with!($self, $self.sq_dist(), $g => $body)
        } else if $self.params.bits == 1 {
            graph_with!($self, $crate::ann::codes::Hamming { words }, $g => $body)
        } else {
            let dim = $self.code_dim as u32;
            graph_with!($self, $crate::ann::codes::SignMag { words, dim }, $g => $body)
        }
    }};
}

/// Like `with_graph!`, with the word count fixed at compile time for common dimensions and
/// the AVX-512 kernels when they are in use (used on the hot paths: construction searches
/// and prunes, and queries).
macro_rules! with_graph_fast {
    ($self:expr, $g:ident => $body:expr) => {{
        let words = $crate::ann::codes::words_for($self.code_dim);
        let dim = $self.code_dim as u32;
        // The vector kernel for `$w` words when it is in use, else `$scalar`.
        macro_rules! fixed {
            ($vector:expr, $scalar:expr) => {{
                match $vector {
                    Some(dist) => graph_with!($self, dist, $g => $body),
                    None => graph_with!($self, $scalar, $g => $body),
                }
            }};
        }
        macro_rules! fixed1 {
            ($w:literal) => {
                fixed!($crate::ann::codes::hamming_vector::<$w>(), $crate::ann::codes::Hamming { words })
            };
        }
        macro_rules! fixed2 {
            ($w:literal) => {
                fixed!($crate::ann::codes::signmag_vector::<$w>(dim), $crate::ann::codes::SignMagN::<$w> { dim })
            };
        }
        match ($self.params.bits, words) {
            (1, 2) => fixed1!(2),
            (1, 4) => fixed1!(4),
            (1, 6) => fixed1!(6),
            (1, 8) => fixed1!(8),
            (1, 12) => fixed1!(12),
            (1, 16) => fixed1!(16),
            (2, 2) => fixed2!(2),
            (2, 4) => fixed2!(4),
            (2, 6) => fixed2!(6),
            (2, 8) => fixed2!(8),
            (2, 12) => fixed2!(12),
            (2, 16) => fixed2!(16),
            _ => with_graph!($self, $g => $body),
        }
    }};
}
