// BatchNorm pieces shared by every family: the running-statistics update, the inference
// statistics, and the fixed chunking of the channels-innermost layout that makes `highway` and
// `threaded` agree bit for bit.
#pragma once

#include <algorithm>
#include <cstdint>

#include <vector>

#include "chunked_stats.hpp"
#include "families.hpp"
#include "normbench/normbench.hpp"

namespace normbench::detail {

// Training step of channel c with batch statistics mean and M2 = sum (x - mean)^2 over
// n = stat_cols(p) values. As torch (batch_norm_cpu_update_stats_template) does, in double:
//   running_mean = momentum * mean + (1 - momentum) * running_mean
//   running_var  = momentum * M2 / (n - 1) + (1 - momentum) * running_var   (unbiased)
// then rounded once to the parameter dtype. A no-op without running statistics.
template <class P>
inline void update_running_stats_typed(const Problem& p, const Buffers& b, std::int64_t c, double mean, double m2) {
  auto* rm = static_cast<P*>(b.running_mean);
  auto* rv = static_cast<P*>(b.running_var);
  const double m = p.batchnorm.momentum;
  // M2 may round below 0 (clamped); NaN from a NaN input stays NaN, as in torch.
  const double unbiased = (m2 < 0 ? 0.0 : m2) / static_cast<double>(stat_cols(p) - 1);
  rm[c] = static_cast<P>(m * mean + (1 - m) * static_cast<double>(rm[c]));
  rv[c] = static_cast<P>(m * unbiased + (1 - m) * static_cast<double>(rv[c]));
}

inline void update_running_stats(const Problem& p, const Buffers& b, std::int64_t c, double mean, double m2) {
  if (b.running_mean == nullptr) return;
  if (p.dtype == DType::kF64)
    update_running_stats_typed<double>(p, b, c, mean, m2);
  else
    update_running_stats_typed<float>(p, b, c, mean, m2);
}

// Inference: channel c's mean and rstd = 1 / sqrt(running_var + eps) in the compute type C.
template <class C>
inline void running_mean_rstd(const Problem& p, const Buffers& b, std::int64_t c, C& mean, C& rstd) {
  if (p.dtype == DType::kF64) {
    mean = static_cast<C>(static_cast<const double*>(b.running_mean)[c]);
    rstd = rstd_from_variance(static_cast<C>(static_cast<const double*>(b.running_var)[c]), p);
  } else {
    mean = static_cast<C>(static_cast<const float*>(b.running_mean)[c]);
    rstd = rstd_from_variance(static_cast<C>(static_cast<const float*>(b.running_var)[c]), p);
  }
}

// Channels innermost ((N, L, C) or (N, C)): the N*L positions, C contiguous channels each, are cut
// into chunks of about kStatsChunk elements (whole positions), each chunk's statistics computed by
// the corrected two-pass (its second pass from L2) and merged in order with Chan's formula;
// kChunksPerBlock consecutive chunks make a block, the unit of work a thread takes. Blocks are
// merged in block order by one function, so the result does not depend on the thread count.
inline constexpr std::int64_t kChunksPerBlock = 8;

// At least kMinChunkPositions positions per chunk, so that wide rows (BatchNorm1d over thousands
// of features) do not pay the per-chunk merge and array set-up every few positions (interleaved
// A/B, 1 thread, training: 256x4096 f32 28% and 2048x4096 bf16 26% faster than 8 positions).
inline constexpr std::int64_t kMinChunkPositions = 32;
inline std::int64_t bn_chunk_positions(const Problem& p) {
  return std::max<std::int64_t>(kMinChunkPositions, kStatsChunk / channel_count(p));
}
inline std::int64_t bn_block_positions(const Problem& p) { return bn_chunk_positions(p) * kChunksPerBlock; }
inline std::int64_t bn_block_count(const Problem& p) {
  return (stat_cols(p) + bn_block_positions(p) - 1) / bn_block_positions(p);
}

// Channels innermost, after the blocks' statistics: merged per channel in block order (compute
// type C), then the saved statistics, rstd and the running statistics. mean/rstd: C entries out.
// Block means are of z = x - K, K the channel's value at position 0 (see BnBlockStatsImpl).
template <class C>
void bn_merge_blocks(const Problem& p, const Buffers& b, const std::vector<double>& block_mean,
                     const std::vector<double>& block_m2, std::vector<double>& mean, std::vector<double>& rstd) {
  const std::int64_t channels = channel_count(p), blocks = bn_block_count(p), n = stat_cols(p);
  for (std::int64_t c = 0; c < channels; ++c) {
    ChunkAccumulator<C> acc;
    for (std::int64_t k = 0; k < blocks; ++k) {
      const auto count = static_cast<C>(std::min(n - k * bn_block_positions(p), bn_block_positions(p)));
      const auto at = static_cast<std::size_t>(k * channels + c);
      acc.add_layernorm(count, static_cast<C>(block_mean[at]), static_cast<C>(block_m2[at]));
    }
    const C shift = static_cast<C>(load_as_long_double(p.dtype, b.x, static_cast<std::size_t>(c)));
    const C channel_mean = shift + acc.mean;
    mean[c] = channel_mean;
    rstd[c] = row_rstd(acc.m2, n, p);
    update_running_stats(p, b, c, channel_mean, acc.m2);
  }
}

// parallel_for of one thread.
inline constexpr struct SerialFor {
  template <class Fn>
  void operator()(std::int64_t count, const Fn& fn) const { fn(std::int64_t{0}, count); }
} serial_for{};

// The highway BatchNorm, for `highway` (parallel_for runs serially) and `threaded` (OpenMP).
// parallel_for(count, fn) must call fn(begin, end) over ranges covering [0, count) exactly once.
// Results do not depend on how the ranges are cut: channels and blocks are computed whole and
// merged in a fixed order, the apply step is elementwise.
template <class ParallelFor>
void highway_batchnorm(const Problem& p, const Buffers& b, bool stream, bool f64, ParallelFor&& parallel_for) {
  const std::int64_t channels = channel_count(p);
  if (!channels_innermost(p)) {
    parallel_for(channels, [&](std::int64_t begin, std::int64_t end) {
      highway_bn_channels(p, b, begin, end, stream, f64);
    });
    return;
  }
  std::vector<double> mean(static_cast<std::size_t>(channels)), rstd(mean.size());
  const bool f64_compute = f64 || p.dtype == DType::kF64;
  if (p.batchnorm.training) {
    const std::int64_t blocks = bn_block_count(p);
    std::vector<double> block_mean(static_cast<std::size_t>(blocks * channels)), block_m2(block_mean.size());
    parallel_for(blocks, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t k = begin; k < end; ++k)
        highway_bn_block_stats(p, b, k, block_mean.data() + k * channels, block_m2.data() + k * channels, f64);
    });
    if (f64_compute)
      bn_merge_blocks<double>(p, b, block_mean, block_m2, mean, rstd);
    else
      bn_merge_blocks<float>(p, b, block_mean, block_m2, mean, rstd);
  } else {
    for (std::int64_t c = 0; c < channels; ++c) {
      if (f64_compute) {
        running_mean_rstd(p, b, c, mean[c], rstd[c]);
      } else {
        float m, r;
        running_mean_rstd(p, b, c, m, r);
        mean[c] = m;
        rstd[c] = r;
      }
    }
  }
  for (std::int64_t c = 0; c < channels; ++c) {
    if (b.mean) b.mean[c] = static_cast<float>(mean[c]);
    if (b.rstd) b.rstd[c] = static_cast<float>(rstd[c]);
  }
  parallel_for(stat_cols(p), [&](std::int64_t begin, std::int64_t end) {
    highway_bn_apply_positions(p, b, begin, end, mean.data(), rstd.data(), stream, f64);
  });
}

}  // namespace normbench::detail
