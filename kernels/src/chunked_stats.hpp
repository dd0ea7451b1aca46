// Row statistics of long rows in fixed-size chunks, merged in chunk order with Chan, Golub &
// LeVeque's pairwise update. The chunk size is a constant, not a function of the thread count,
// and the merge is this one function, so `highway` (chunks in sequence) and `threaded` (chunks
// on several threads) produce the same bits for every thread count.
#pragma once

#include <cmath>
#include <cstdint>

#include "normbench/normbench.hpp"

namespace normbench::detail {

// Elements per chunk: 32K f32 = 128 KiB, so a chunk's two statistics passes run from L2.
inline constexpr std::int64_t kStatsChunk = 32 * 1024;

inline std::int64_t chunk_count(std::int64_t cols) { return (cols + kStatsChunk - 1) / kStatsChunk; }

// Running statistics of the chunks merged so far. LayerNorm: mean and M2 = sum (x - mean)^2;
// RMSNorm: sum of squares in `m2`, mean unused.
template <class C>
struct ChunkAccumulator {
  C count = 0, mean = 0, m2 = 0;

  void add_layernorm(C n, C chunk_mean, C chunk_m2) {
    if (count == 0) {
      count = n;
      mean = chunk_mean;
      m2 = chunk_m2;
      return;
    }
    const C total = count + n;
    const C delta = chunk_mean - mean;
    mean += delta * (n / total);
    m2 += chunk_m2 + delta * delta * (count * n / total);
    count = total;
  }
  void add_rmsnorm(C chunk_sumsq) { m2 += chunk_sumsq; }
};

// rstd from a variance (biased, or unbiased for that variant): 1 / sqrt(var + eps), or
// 1 / (sqrt(var) + eps) for the eps-outside variant. A negative variance (rounding) is clamped
// to 0; NaN from an overflowed sum stays NaN. One function for every family and path.
template <class C>
inline C rstd_from_variance(C var, const Problem& p) {
  if (var < 0) var = 0;
  if (p.variant.eps_outside_sqrt) return C(1) / (std::sqrt(var) + static_cast<C>(p.eps));
  return C(1) / std::sqrt(var + static_cast<C>(p.eps));
}

// rstd from M2 = sum (x - mean)^2 (RMSNorm: sum x^2) of a whole unit of n elements (a row, or a
// GroupNorm group): var = M2 / n, or M2 / (n - 1) for the unbiased variant. Shared by highway's
// chunked and short-row paths and by threaded, so they agree bit for bit.
template <class C>
inline C row_rstd(C m2, std::int64_t n, const Problem& p) {
  const C inv_n = C(1) / static_cast<C>(p.variant.unbiased ? n - 1 : n);
  return rstd_from_variance(m2 * inv_n, p);
}

}  // namespace normbench::detail
