// highway BatchNorm (torch.nn.BatchNorm1d/2d), the SIMD pieces that batchnorm.hpp's driver runs
// serially (`highway`, `highway-f64`) or over threads (`threaded`).
//  - (N, C, L), L > 1: a channel's values are N contiguous runs of L. The corrected two-pass over
//    all of them (each pass run by run, the runs' sums added in order), then the apply step over
//    the runs with the channel's gamma/beta broadcast, while the channel's N*L values are in L2.
//  - Channels innermost, (N, L, C) or (N, C): vectors run across channels and the reduction runs
//    down the positions, with one accumulator per channel in a small array (C values, L1/L2),
//    so every pass reads x sequentially: no strided loads. Positions are cut into fixed chunks of
//    about 32K elements (two-pass within a chunk, its second pass from L2), merged in order in
//    coordinates shifted by the channel's first value.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "highway_batchnorm.cpp"  // found through this directory on the include path
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/aligned_allocator.h>
#include <hwy/highway.h>

#include "batchnorm.hpp"
#include "families.hpp"
#include "highway_ops-inl.h"

HWY_BEFORE_NAMESPACE();
namespace normbench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Channels [c_begin, c_end) of the (N, C, L) layout, each computed whole.
template <bool kStream, class T, class C>
void BnChannelsImpl(const Problem& p, const Buffers& b, std::int64_t c_begin, std::int64_t c_end) {
  using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const hn::ScalableTag<C> d;
  const std::int64_t len = spatial_size(p), n = stat_cols(p);
  const auto* gamma = static_cast<const P*>(b.gamma);
  const auto* beta = static_cast<const P*>(b.beta);
  const auto run_x = [&](std::int64_t s, std::int64_t c) { return static_cast<const T*>(b.x) + s * p.cols + c * len; };
  for (std::int64_t c = c_begin; c < c_end; ++c) {
    C mean, rstd;
    if (p.batchnorm.training) {  // the corrected two-pass over the channel's runs, shifted by its first value
      const C shift = static_cast<C>(widen(run_x(0, c)[0])), inv_n = C(1) / static_cast<C>(n);
      C sum = 0, centred = 0, squares = 0;
      for (std::int64_t s = 0; s < p.rows; ++s) {
        const T* xs[1] = {run_x(s, c)};
        C run_sum;
        ShiftedSums<1>(d, xs, static_cast<std::size_t>(len), &shift, &run_sum);
        sum += run_sum;
      }
      const C mean0 = shift + sum * inv_n;
      for (std::int64_t s = 0; s < p.rows; ++s) {
        const T* xs[1] = {run_x(s, c)};
        C run_c, run_s;
        CentredSums<1>(d, xs, static_cast<std::size_t>(len), &mean0, &run_c, &run_s);
        centred += run_c;
        squares += run_s;
      }
      mean = mean0 + centred * inv_n;
      const C m2 = squares - centred * centred * inv_n;
      rstd = detail::row_rstd(m2, n, p);
      detail::update_running_stats(p, b, c, mean, m2);
    } else {
      detail::running_mean_rstd(p, b, c, mean, rstd);
    }
    if (b.mean) b.mean[c] = static_cast<float>(mean);
    if (b.rstd) b.rstd[c] = static_cast<float>(rstd);
    for (std::int64_t s = 0; s < p.rows; ++s) {
      const T* xs[1] = {run_x(s, c)};
      T* ys[1] = {static_cast<T*>(b.y) + s * p.cols + c * len};
      Apply<kStream, 1, false, true>(d, xs, ys, static_cast<std::size_t>(len), &mean, &rstd, gamma ? gamma + c : nullptr,
                                     beta ? beta + c : nullptr, static_cast<const T*>(nullptr));
    }
  }
  if constexpr (kStream) hwy::FlushStream();
}

// Vector j (channels [j, j + N)) of a position's row of `channels` values; the last may be partial.
template <class D, class T>
HWY_INLINE hn::Vec<D> LoadChannels(D d, const T* HWY_RESTRICT row, std::size_t j, std::size_t channels) {
  const std::size_t N = hn::Lanes(d);
  return j + N <= channels ? LoadRow(d, row + j) : LoadPartial(d, row + j, channels - j);
}

// Statistics of block `block` of positions, in coordinates shifted by the channel's first value K
// (position 0 of the tensor, for every block): z = x - K. Per chunk the corrected two-pass of z,
// then the chunks merged in order (as ChunkAccumulator::add_layernorm, lane by lane). Shifted, the
// merged means are of size |mean - K| ~ sigma rather than |mean|: merging absolute means would
// cost kappa * u of the variance (Welford's bound), a loss the two-pass does not have.
// Out: mean of z and M2 per channel.
template <class T, class C>
void BnBlockStatsImpl(const Problem& p, const Buffers& b, std::int64_t block, double* mean_out, double* m2_out) {
  const hn::ScalableTag<C> d;
  const std::size_t N = hn::Lanes(d);
  const auto channels = static_cast<std::size_t>(channel_count(p));
  const std::size_t padded = (channels + N - 1) / N * N;  // the arrays take whole vectors
  const std::int64_t chunk = detail::bn_chunk_positions(p);
  const std::int64_t begin = block * detail::bn_block_positions(p);
  const std::int64_t end = std::min(stat_cols(p), begin + detail::bn_block_positions(p));
  const auto* x = static_cast<const T*>(b.x);
  const auto row = [&](std::int64_t pos) { return x + pos * static_cast<std::int64_t>(channels); };
  auto arrays = hwy::AllocateAligned<C>(6 * padded);
  C* shift = arrays.get();      // K
  C* mean0 = shift + padded;    // the chunk's first-pass mean of z
  C* sum = mean0 + padded;      // first pass sum z, then the centred sum
  C* sq = sum + padded;         // centred sum of squares
  C* acc_mean = sq + padded;
  C* acc_m2 = acc_mean + padded;
  for (std::size_t j = 0; j < padded; j += N) hn::Store(LoadChannels(d, row(0), j, channels), d, shift + j);
  // x - c, for channels [j, j + N) at position pos.
  const auto dev = [&](std::int64_t pos, std::size_t j, hn::Vec<decltype(d)> c) HWY_ATTR __attribute__((always_inline)) {
    return hn::Sub(LoadChannels(d, row(pos), j, channels), c);
  };
  // Four positions per visit of the accumulator arrays: a quarter of their loads and stores, and
  // four independent terms per update instead of a store-to-load chain per position (interleaved
  // A/B, 1 thread, a training step channels last: 8x3136x64 28% faster in f32 and bf16,
  // 8x784x256 10-17%).
  constexpr std::int64_t kPositions = 4;
  C acc_count = 0;
  for (std::int64_t c0 = begin; c0 < end; c0 += chunk) {
    const std::int64_t c1 = std::min(end, c0 + chunk);
    const C count = static_cast<C>(c1 - c0), inv_count = C(1) / count;
    for (std::size_t j = 0; j < padded; j += N) hn::Store(hn::Zero(d), d, sum + j);
    std::int64_t pos = c0;
    for (; pos + kPositions <= c1; pos += kPositions)
      for (std::size_t j = 0; j < padded; j += N) {
        const auto k = hn::Load(d, shift + j);
        const auto z = hn::Add(hn::Add(dev(pos, j, k), dev(pos + 1, j, k)), hn::Add(dev(pos + 2, j, k), dev(pos + 3, j, k)));
        hn::Store(hn::Add(hn::Load(d, sum + j), z), d, sum + j);
      }
    for (; pos < c1; ++pos)
      for (std::size_t j = 0; j < padded; j += N)
        hn::Store(hn::Add(hn::Load(d, sum + j), dev(pos, j, hn::Load(d, shift + j))), d, sum + j);
    for (std::size_t j = 0; j < padded; j += N) {
      // The first-pass mean of z, the centre of the second pass.
      hn::Store(hn::Mul(hn::Load(d, sum + j), hn::Set(d, inv_count)), d, mean0 + j);
      hn::Store(hn::Zero(d), d, sum + j);
      hn::Store(hn::Zero(d), d, sq + j);
    }
    const auto centred = [&](std::int64_t p0, std::size_t j) HWY_ATTR __attribute__((always_inline)) {
      return hn::Sub(dev(p0, j, hn::Load(d, shift + j)), hn::Load(d, mean0 + j));
    };
    for (pos = c0; pos + kPositions <= c1; pos += kPositions)
      for (std::size_t j = 0; j < padded; j += N) {
        const auto d0 = centred(pos, j), d1 = centred(pos + 1, j), d2 = centred(pos + 2, j), d3 = centred(pos + 3, j);
        hn::Store(hn::Add(hn::Load(d, sum + j), hn::Add(hn::Add(d0, d1), hn::Add(d2, d3))), d, sum + j);
        hn::Store(hn::Add(hn::Load(d, sq + j), hn::MulAdd(d0, d0, hn::MulAdd(d1, d1, hn::MulAdd(d2, d2, hn::Mul(d3, d3))))),
                  d, sq + j);
      }
    for (; pos < c1; ++pos)
      for (std::size_t j = 0; j < padded; j += N) {
        const auto dv = centred(pos, j);
        hn::Store(hn::Add(hn::Load(d, sum + j), dv), d, sum + j);
        hn::Store(hn::MulAdd(dv, dv, hn::Load(d, sq + j)), d, sq + j);
      }
    // mean = mean0 + c/n, M2 = S - c^2/n (the corrected two-pass), merged into the block's.
    const C total = acc_count + count;
    const auto weight = hn::Set(d, count / total), cross = hn::Set(d, acc_count * count / total);
    for (std::size_t j = 0; j < padded; j += N) {
      const auto c = hn::Load(d, sum + j);
      const auto chunk_mean = hn::Add(hn::Load(d, mean0 + j), hn::Mul(c, hn::Set(d, inv_count)));
      const auto chunk_m2 = hn::Sub(hn::Load(d, sq + j), hn::Mul(hn::Mul(c, c), hn::Set(d, inv_count)));
      if (acc_count == 0) {
        hn::Store(chunk_mean, d, acc_mean + j);
        hn::Store(chunk_m2, d, acc_m2 + j);
      } else {
        const auto mean = hn::Load(d, acc_mean + j);
        const auto delta = hn::Sub(chunk_mean, mean);
        hn::Store(hn::Add(mean, hn::Mul(delta, weight)), d, acc_mean + j);
        hn::Store(hn::Add(hn::Load(d, acc_m2 + j), hn::Add(chunk_m2, hn::Mul(hn::Mul(delta, delta), cross))), d,
                  acc_m2 + j);
      }
    }
    acc_count = total;
  }
  for (std::size_t j = 0; j < channels; ++j) {
    mean_out[j] = acc_mean[j];
    m2_out[j] = acc_m2[j];
  }
}

// The apply step over positions [begin, end) of the channels-innermost layout.
template <bool kStream, class T, class C>
void BnApplyPositionsImpl(const Problem& p, const Buffers& b, std::int64_t begin, std::int64_t end,
                          const double* mean_in, const double* rstd_in) {
  using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const hn::ScalableTag<C> d;
  const std::size_t N = hn::Lanes(d);
  const auto channels = static_cast<std::size_t>(channel_count(p));
  const std::size_t padded = (channels + N - 1) / N * N;
  const auto* gamma = static_cast<const P*>(b.gamma);
  const auto* beta = static_cast<const P*>(b.beta);
  auto arrays = hwy::AllocateAligned<C>(4 * padded);  // mean, rstd, gamma, beta in the compute type
  C* mean = arrays.get();
  C* rstd = mean + padded;
  C* g = rstd + padded;
  C* bt = g + padded;
  std::fill(arrays.get(), arrays.get() + 4 * padded, C(0));
  for (std::size_t j = 0; j < channels; ++j) {
    mean[j] = static_cast<C>(mean_in[j]);
    rstd[j] = static_cast<C>(rstd_in[j]);
    g[j] = gamma ? static_cast<C>(gamma[j]) : C(1);
    bt[j] = beta ? static_cast<C>(beta[j]) : C(0);
  }
  const std::size_t whole = channels / N * N;
  // Non-temporal stores need every vector aligned: rows a whole number of vectors, y aligned.
  const bool stream = kStream && whole == channels &&
                      reinterpret_cast<std::uintptr_t>(static_cast<T*>(b.y)) % (N * sizeof(T)) == 0;
  const auto x_row = [&](std::int64_t pos) { return static_cast<const T*>(b.x) + pos * static_cast<std::int64_t>(channels); };
  const auto y_row = [&](std::int64_t pos) { return static_cast<T*>(b.y) + pos * static_cast<std::int64_t>(channels); };
  const auto store = [&](hn::Vec<decltype(d)> v, T* p) HWY_ATTR __attribute__((always_inline)) {
    if (stream)
      StoreRow<true>(d, v, p);
    else
      StoreRow<false>(d, v, p);
  };
  // y for channels [j, j + N) of positions [pos, pos + kPositions): the per-channel vectors are
  // loaded once for all of them (four at a time: inference 8x3136x64 channels last, bf16, 15% faster).
  const auto whole_vector = [&](auto positions, std::int64_t pos, std::size_t j) HWY_ATTR __attribute__((always_inline)) {
    const auto m = hn::Load(d, mean + j), rs = hn::Load(d, rstd + j), gv = hn::Load(d, g + j), bv = hn::Load(d, bt + j);
    for (std::int64_t q = 0; q < decltype(positions)::value; ++q)
      store(Normalize(LoadRow(d, x_row(pos + q) + j), m, rs, gv, bv, gamma != nullptr, beta != nullptr),
            y_row(pos + q) + j);
  };
  const auto tail = [&](std::int64_t pos) HWY_ATTR __attribute__((always_inline)) {  // the last channels, < N
    StorePartial(d,
                 Normalize(LoadPartial(d, x_row(pos) + whole, channels - whole), hn::Load(d, mean + whole),
                           hn::Load(d, rstd + whole), hn::Load(d, g + whole), hn::Load(d, bt + whole),
                           gamma != nullptr, beta != nullptr),
                 y_row(pos) + whole, channels - whole);
  };
  std::int64_t pos = begin;
  for (; pos + 4 <= end; pos += 4) {
    for (std::size_t j = 0; j < whole; j += N) whole_vector(std::integral_constant<std::int64_t, 4>(), pos, j);
    if (whole < channels)
      for (std::int64_t q = 0; q < 4; ++q) tail(pos + q);
  }
  for (; pos < end; ++pos) {
    for (std::size_t j = 0; j < whole; j += N) whole_vector(std::integral_constant<std::int64_t, 1>(), pos, j);
    if (whole < channels) tail(pos);
  }
  if (stream) hwy::FlushStream();
}

// Dispatch on dtype and compute type (f64: the highway-f64 family, or f64 data).
template <template <class, class> class Fn, class... Args>
void ByType(const Problem& p, bool f64, Args&&... args) {
  switch (p.dtype) {
    case DType::kF32: return f64 ? Fn<float, double>::Run(p, args...) : Fn<float, float>::Run(p, args...);
    case DType::kF64: return Fn<double, double>::Run(p, args...);
    case DType::kBF16: return f64 ? Fn<bf16, double>::Run(p, args...) : Fn<bf16, float>::Run(p, args...);
    case DType::kF16: return f64 ? Fn<f16, double>::Run(p, args...) : Fn<f16, float>::Run(p, args...);
  }
}

template <class T, class C>
struct ChannelsFn {
  static void Run(const Problem& p, const Buffers& b, std::int64_t c_begin, std::int64_t c_end, bool stream) {
    if (stream)
      BnChannelsImpl<true, T, C>(p, b, c_begin, c_end);
    else
      BnChannelsImpl<false, T, C>(p, b, c_begin, c_end);
  }
};
template <class T, class C>
struct BlockStatsFn {
  static void Run(const Problem& p, const Buffers& b, std::int64_t block, double* mean, double* m2) {
    BnBlockStatsImpl<T, C>(p, b, block, mean, m2);
  }
};
template <class T, class C>
struct ApplyPositionsFn {
  static void Run(const Problem& p, const Buffers& b, std::int64_t begin, std::int64_t end, const double* mean,
                  const double* rstd, bool stream) {
    if (stream)
      BnApplyPositionsImpl<true, T, C>(p, b, begin, end, mean, rstd);
    else
      BnApplyPositionsImpl<false, T, C>(p, b, begin, end, mean, rstd);
  }
};

void BnChannels(const Problem& p, const Buffers& b, std::int64_t c_begin, std::int64_t c_end, bool stream, bool f64) {
  ByType<ChannelsFn>(p, f64, b, c_begin, c_end, stream);
}
void BnBlockStats(const Problem& p, const Buffers& b, std::int64_t block, double* mean, double* m2, bool f64) {
  ByType<BlockStatsFn>(p, f64, b, block, mean, m2);
}
void BnApplyPositions(const Problem& p, const Buffers& b, std::int64_t begin, std::int64_t end, const double* mean,
                      const double* rstd, bool stream, bool f64) {
  ByType<ApplyPositionsFn>(p, f64, b, begin, end, mean, rstd, stream);
}

}  // namespace HWY_NAMESPACE
}  // namespace normbench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normbench {
HWY_EXPORT(BnChannels);
HWY_EXPORT(BnBlockStats);
HWY_EXPORT(BnApplyPositions);

namespace detail {
void highway_bn_channels(const Problem& p, const Buffers& b, std::int64_t c_begin, std::int64_t c_end, bool stream,
                         bool f64) {
  HWY_DYNAMIC_DISPATCH(BnChannels)(p, b, c_begin, c_end, stream, f64);
}
void highway_bn_block_stats(const Problem& p, const Buffers& b, std::int64_t block, double* mean, double* m2,
                            bool f64) {
  HWY_DYNAMIC_DISPATCH(BnBlockStats)(p, b, block, mean, m2, f64);
}
void highway_bn_apply_positions(const Problem& p, const Buffers& b, std::int64_t begin, std::int64_t end,
                                const double* mean, const double* rstd, bool stream, bool f64) {
  HWY_DYNAMIC_DISPATCH(BnApplyPositions)(p, b, begin, end, mean, rstd, stream, f64);
}
}  // namespace detail
}  // namespace normbench
#endif
