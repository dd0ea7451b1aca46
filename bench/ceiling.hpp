// The bandwidth ceiling: a STREAM-like "scale" kernel (dst = a * src) moving the same bytes as
// the normalization case it stands beside, at the same working-set size and thread count.
#pragma once

#include <cstddef>

namespace normbench::bench {

// dst[i] = a * src[i] for i < n, plus one read of `extra` (n_extra floats: the gamma/beta a
// norm reads once). Split over `threads` OpenMP threads in contiguous chunks (no parallel region
// for one thread or tiny sizes, the same policy as the threaded kernel). Returns a value
// derived from `extra` so the read cannot be optimized away.
// nontemporal: dst is written with non-temporal (streaming) stores, which skip the read for
// ownership of each destination line that ordinary stores pay: the ceiling of a kernel that
// streams its output (a higher one once dst exceeds the last-level cache).
float stream_scale(const float* src, float* dst, std::size_t n, const float* extra, std::size_t n_extra,
                   int threads, bool nontemporal);

}  // namespace normbench::bench
