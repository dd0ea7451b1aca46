// The bandwidth ceiling: a STREAM-like "scale" kernel (dst = a * src) moving the same bytes as
// the normalization case it stands beside, at the same working-set size and thread count.
#pragma once

#include <cstddef>
#include <cstdint>

namespace normbench::bench {

// dst[i] = a * src[i] for i < n, plus one read of `extra` (n_extra floats: the gamma/beta a
// norm reads once). Split over `threads` threads of the kernels' team (thread_team.hpp) in
// contiguous chunks, src/dst and extra alike (no team call for one thread or tiny sizes, the same
// policy as the threaded kernel). Returns a value derived from `extra` so the read cannot be
// optimized away.
// nontemporal: dst is written with non-temporal (streaming) stores, which skip the read for
// ownership of each destination line that ordinary stores pay: the ceiling of a kernel that
// streams its output (a higher one once dst exceeds the last-level cache).
float stream_scale(const float* src, float* dst, std::size_t n, const float* extra, std::size_t n_extra,
                   int threads, bool nontemporal);

// The row-phased ceiling: the memory traffic a LayerNorm (gamma and beta) or RMSNorm (gamma)
// cannot avoid, in the order it cannot avoid. Per row: one read of the whole row (into a sum,
// standing for the statistics), then a second read of it with gamma [and beta] and the write of
// y, whose scale depends on the sum, so a row's first store waits for its read to finish. Nothing
// else of the statistics' arithmetic: no kernel that reads each row before writing it (as every
// normalization must, short of holding a row in registers) should outrun it by much. Rows go in
// pairs (read and written interleaved, as the kernels take short rows), prefetch the next ones as
// the kernels do, and are split over threads as `threaded` splits them; fewer rows than threads:
// each thread a share of every row.
struct PhasedRows {
  const float* x;             // the copy's bytes, read as floats
  float* y;
  std::size_t total_floats;   // of x (and y): rows * cols * dtype size / 4, rounded down
  std::int64_t rows;
  const float* gamma;         // param_floats floats
  const float* beta;          // nullptr: RMSNorm's traffic
  std::size_t param_floats;   // cols * parameter size / 4
  std::size_t params_per_vector;  // parameter vectors per vector of x: 1 (f32, f64), 2 (bf16, f16)
  bool nontemporal;           // y with non-temporal stores
  // The next row is prefetched into L2 during the second read; with this, during the first read
  // too (the kernels do so for rows of one statistics chunk and at least 8 KiB).
  bool prefetch_in_read = false;
  // Whole rows in pairs, read and written interleaved (both rows' y at the same alignment where
  // the stores are non-temporal; else the rest alone).
  bool pairs = false;
  // LayerNorm's arithmetic as well as its traffic (f32 rows, gamma and beta; whole rows per
  // thread): the first read computes the centred sums c = sum(x - x0) and s = sum((x - x0)^2),
  // x0 the row's first value, and the second writes y = (x - mean) * rstd * gamma + beta, mean and
  // rstd from c and s (eps kLayerNormArithmeticEps). Six vector operations per vector of x, the
  // fewest an accurate LayerNorm does: a subtraction, an addition and an FMA for the statistics in
  // one read (a two-pass one does an addition, then a subtraction and an FMA), a subtraction, a
  // multiplication and an FMA for y ((x - mean) * rstd folded into one FMA with a rounded
  // -mean * rstd costs |mean| * rstd ulps: wrong for data far from zero). No shift sampled, no
  // check of the shift, no masked tails: a row's statistics chain (read, reduce, 1/sqrt) and its
  // arithmetic, nothing more. For one row no kernel overlaps that chain with another row's work,
  // so none that computes a LayerNorm should outrun it by much; several rows can (pipelined).
  bool layernorm_arithmetic = false;
};
inline constexpr float kLayerNormArithmeticEps = 1e-5f;
float row_phased(const PhasedRows& rows, int threads);

}  // namespace normbench::bench
