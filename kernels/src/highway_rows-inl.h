// The highway row kernels (LayerNorm, RMSNorm, GroupNorm units) as templates over the storage
// type T and the compute type C: highway.cpp instantiates C = f32 (and f64 for f64 data),
// highway_f64.cpp C = f64 for every dtype. Included once per Highway target.
#if defined(NORMBENCH_HIGHWAY_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)  // once per Highway target
#ifdef NORMBENCH_HIGHWAY_ROWS_INL_H_
#undef NORMBENCH_HIGHWAY_ROWS_INL_H_
#else
#define NORMBENCH_HIGHWAY_ROWS_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "chunked_stats.hpp"
#include "families.hpp"
#include "highway_ops-inl.h"

HWY_BEFORE_NAMESPACE();
namespace normbench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// LayerNorm rows of at least this many bytes also prefetch the next rows during their statistics
// read, not only during the apply step: interleaved A/B, 1 thread, f32, 5 rounds: 2048x5120,
// 2048x8192, 2048x16384 and 4096x4096 8-17% faster (the statistics read had been half the time,
// at DRAM speed). RMSNorm's shorter apply step gained nothing consistent for f32 (4096x4096 12%
// slower; 16-bit rows of 8 KiB or more in DRAM do gain, see kRmsPrefetchInStats),
// and 3 KiB rows (21845x768) measured slower with it in a first, unpaired run. 8 KiB rows too
// (lowered from 16 KiB; interleaved A/B, 1 thread, 6 rounds): bf16 16384x4096 16% and f32
// 8192x2048 17% faster, bf16 2048x4096 7% (p = 0.055); the L3-resident 2048x2048 unchanged.
// The apply step still prefetches the same next rows: without its prefetch, f32 2048x4096 and
// 8192x2048 took 20% longer (interleaved A/B, 4 rounds); a line already on its way costs little.
constexpr std::size_t kPrefetchInStatsBytes = 8 * 1024;
// RMSNorm's statistics read prefetches the next rows (blocks of kPrefetchInStatsBytes or more, as
// LayerNorm's) only for 16-bit data written with streaming stores (DRAM-sized calls) and f32
// compute (kRmsPrefetchInStats, below): its widening leaves the read short of
// the bandwidth, and the next rows' lines fill the gap. Interleaved A/B, 1 thread, ABBA, 6 rounds,
// `highway`: bf16 2048x16384 23-26%, 2048x8192 16-19% faster (0.71-0.73 -> 0.86-0.97 of the
// row-phased ceiling), f16 4-6%; f32 rows in DRAM were mixed (2048x8192 8% faster, 4096x4096 27%
// and 16384x4096 19% slower), as was L3-resident bf16 128x8192 (4% slower); highway-f64,
// compute-bound, unchanged. Measured again as landed (two binaries, ABBA, 6 rounds): bf16
// 2048x16384 0.69 and 2048x8192 0.79 of the time before, f16 1.00.
// Its threshold lowered from 16 KiB to 8 KiB (one build, threshold set at run time, ABBA, 6-8 rounds, 1
// thread, medians of the per-round time ratios; three A/Bs): 4096x4096 0.84-0.87 of the time
// before (bf16 and f16, `highway` and `threaded`), 3072x6144 bf16 0.82, 8192x4096 bf16
// 0.91-0.97, f16 0.94-1.08; 16384x4096 0.94-1.06 and 2048x5120 1.01, with the ceilings moving
// as much. The first measurement (above) had read 8 KiB bf16 rows as mixed.
// Not on Intel (detail::prefetch_next_rows_in_rms_stats), where it measured slower.
// Only where it was measured to win: streaming stores, 16-bit data, f32 compute. highway-f64 keeps
// the code it had (compute-bound; its instantiations with this prefetch had also shown the -O2
// sanitizer build's miscompilation, reports/baselines/PERFORMANCE-LOG.md, "The sanitizer build's
// wrong rows").
template <bool kStream, class T, class C>
constexpr bool kRmsPrefetchInStats = kStream && sizeof(T) == 2 && std::is_same_v<C, float>;

// Row r's rstd from its M2 (RMSNorm: sum of squares), with mean and rstd written where asked;
// storage_compute rounds mean (in place) and the returned rstd to T, as the apply step uses them.
template <bool kVariant, class T, class C>
HWY_INLINE C RowScale(const Problem& p, const Buffers& b, std::int64_t r, C& mean, C m2) {
  C rstd = detail::row_rstd(m2, p.cols, p);
  if (b.mean) b.mean[r] = static_cast<float>(mean);
  if (b.rstd) b.rstd[r] = static_cast<float>(rstd);
  if (kVariant && p.variant.storage_compute) {
    mean = RoundScalarToStorage<T>(mean);
    rstd = RoundScalarToStorage<T>(rstd);
  }
  return rstd;
}

// highway-f64 on bf16/f16 data: the statistics read keeps the rows widened to f64 in a per-thread
// buffer (kKeepsWidened) and the apply step reads them from there, instead of widening each value
// twice. The same arithmetic, so the same results. One build, the buffer's size limit set at run
// time, ABBA, 4 rounds, 1 thread, medians of the per-round time ratio (Zen 4): bf16 LayerNorm and
// RMSNorm 1x768 to 512x16384 (in DRAM 21845x768, 2048x8192) 0.85-0.90 of the time before, f16
// 0.88-0.92 (RMSNorm 21845x768 1.00). Not for f32 data: LayerNorm 64x768 and 1x4096 0.85-1.00
// and 10923x768 0.95-1.05, but 2048x1024 1.14-1.30 and 4096x4096 1.01-1.20, RMSNorm in DRAM
// (10923x768, 4096x4096) 1.43-1.79 of the time before, though a microbenchmark of the two loops
// alone had read the f32 form 20% faster. Zen 5, two builds, ABBA, 4 rounds, 1 thread: bf16
// 0.83-0.93, f16 0.85-0.95 (RMSNorm 64x768 1.00) of the time before. Rows of up to
// kWidenedRowsMaxBytes per ShortRows call (f64 copies of two rows of 16384 values: the largest
// measured).
template <class T, class C, bool kVariant>
constexpr bool kMayWidenRows = std::is_same_v<C, double> && sizeof(T) == 2 && !kVariant;
constexpr std::size_t kWidenedRowsMaxBytes = 256 * 1024;

// highway-f64 on f32 rows written with streaming stores (DRAM-sized calls): the next rows are
// prefetched at half rate through both steps of a row (or block), their first half during the
// statistics read and their second half during the apply step (next_x + n / 2 and
// ApplyOptions::half_rate_prefetch), rather than all of them during the apply step. The apply step
// is bound by its f64 conversions and the statistics read by little, so with the whole prefetch
// in the apply step memory sat idle through the statistics and the apply step asked for more than
// one thread's bandwidth. Only on Intel (detail::half_rate_next_rows_in_f64, measurements there).
// Rows longer than one statistics chunk do the same in f32 compute too (ForwardRowsImpl).
template <bool kStream, class T, class C>
constexpr bool kHalfRateNextRows = kStream && std::is_same_v<T, float> && std::is_same_v<C, double>;

// R whole rows of at most one chunk each, starting at row r: statistics, then the apply step.
// Computing the next block's statistics as a step of its own before this block's apply step had
// measured slower on Zen 5 (interleaved A/B, 1 thread, f32, 4 rounds: highway 128x1024 13-15%,
// 43x768 4-10%, 128x768 6-7% slower; highway-f64 the same to 7% faster); the two in one loop
// (PipelinedRows) are faster for f32 rows.
// widened (kMayWidenRows only; may be null): room for R rows of widened_stride values.
// paired: see PairedParams (bf16 rows, f32 compute).
template <std::size_t R, bool kStream, bool kVariant, bool kHwBf16, class T, class C, class P>
HWY_INLINE void ShortRows(const Problem& p, const Buffers& b, std::int64_t r, const P* gamma, const P* beta,
                          const T* next_x, C* widened = nullptr, std::size_t widened_stride = 0,
                          const PairedParams<P>& paired = {}) {
  const hn::ScalableTag<C> d;
  const std::size_t n = static_cast<std::size_t>(p.cols);
  const T* x[R];
  T* y[R];
  C mean[R], m2[R], rstd[R];
  for (std::size_t k = 0; k < R; ++k) {
    x[k] = static_cast<const T*>(b.x) + (r + static_cast<std::int64_t>(k)) * p.cols;
    y[k] = static_cast<T*>(b.y) + (r + static_cast<std::int64_t>(k)) * p.cols;
    mean[k] = 0;
  }
  if constexpr (kMayWidenRows<T, C, kVariant>) {
    // The same sequence as below, over the widened copies. Folded with it into one always-inlined
    // helper, GCC 12's code measured 1-2% slower for highway-f64 (PERFORMANCE-LOG, "ShortRows'").
    if (widened) {
      C* w[R];
      const C* xw[R];
      for (std::size_t k = 0; k < R; ++k) xw[k] = w[k] = widened + k * widened_stride;
      if (centres(p.norm))
        BlockStats<R>(d, x, n, mean, m2, n * R * sizeof(T) >= kPrefetchInStatsBytes ? next_x : nullptr, w);
      else
        SumsOfSquares<R>(d, x, n, m2, static_cast<const T*>(nullptr), w);
      for (std::size_t k = 0; k < R; ++k)
        rstd[k] = RowScale<kVariant, T>(p, b, r + static_cast<std::int64_t>(k), mean[k], m2[k]);
      Apply<kStream, R, kVariant, false, kHwBf16>(d, xw, y, n, mean, rstd, gamma, beta, next_x, ApplyOptionsOf(p));
      return;
    }
  }
  const bool half_rate = kHalfRateNextRows<kStream, T, C> && next_x && detail::half_rate_next_rows_in_f64();
  if (centres(p.norm)) {
    if (half_rate)
      BlockStats<R, 1>(d, x, n, mean, m2, next_x);
    else  // blocks of >= kPrefetchInStatsBytes: the next rows' prefetch starts in this read already
      BlockStats<R>(d, x, n, mean, m2, n * R * sizeof(T) >= kPrefetchInStatsBytes ? next_x : nullptr);
  } else if (half_rate) {
    SumsOfSquares<R, 1>(d, x, n, m2, next_x);
  } else {
    SumsOfSquares<R>(d, x, n, m2,
                     kRmsPrefetchInStats<kStream, T, C> && n * R * sizeof(T) >= kPrefetchInStatsBytes &&
                             detail::prefetch_next_rows_in_rms_stats()
                         ? next_x
                         : nullptr);
  }
  for (std::size_t k = 0; k < R; ++k)
    rstd[k] = RowScale<kVariant, T>(p, b, r + static_cast<std::int64_t>(k), mean[k], m2[k]);
  ApplyOptions opt = ApplyOptionsOf(p);
  opt.half_rate_prefetch = half_rate;
  Apply<kStream, R, kVariant, false, kHwBf16>(d, x, y, n, mean, rstd, gamma, beta, half_rate ? next_x + n / 2 : next_x,
                                              opt, paired);
}

// count rows from row r, software-pipelined: each row's apply step runs in one loop with the next
// row's statistics read (LayerNorm: ApplyWithNextCentredSums, the next row's shift sampled just
// before; RMSNorm: ApplyWithNextSumOfSquares). A row computed alone (ShortRows<1>) waits on its
// own chain (LayerNorm: the shift's sample, then the centred sums' reduction and rstd); here the
// next row's chain overlaps this row's apply step, and pairs or triples, which overlap chains
// only within their group, are not needed. The same arithmetic per row as ShortRows, so the same
// results. f32 compute (f32 rows, and 16-bit rows of more than 4 KiB), LayerNorm with gamma and
// beta, RMSNorm with gamma only, cached stores (see detail::pipeline_short_rows and, for LayerNorm rows
// the block rule takes, detail::pipeline_blocked_layernorm_rows for where; the measurements are there).
template <bool kHwBf16, class T, class AddRows>
HWY_INLINE void PipelinedRows(const Problem& p, const Buffers& b, std::int64_t r, std::int64_t count,
                              const float* gamma, const float* beta, const AddRows& add_rows,
                              const PairedParams<float>& paired = {}) {
  const hn::ScalableTag<float> d;
  const std::size_t n = static_cast<std::size_t>(p.cols);
  const auto row_x = [&](std::int64_t row) { return static_cast<const T*>(b.x) + row * p.cols; };
  const std::int64_t end = r + count;
  const bool layernorm = centres(p.norm);
  float mean = 0, m2;
  add_rows(r, 1);
  const T* x[1] = {row_x(r)};
  if (layernorm)
    BlockStats<1>(d, x, n, &mean, &m2);
  else
    SumsOfSquares<1>(d, x, n, &m2);
  for (; r < end; ++r) {
    const float rstd = RowScale<false, T>(p, b, r, mean, m2);
    T* y = static_cast<T*>(b.y) + r * p.cols;
    if (r + 1 == end) {
      T* ys[1] = {y};
      Apply<false, 1, false, false, kHwBf16>(d, x, ys, n, &mean, &rstd, gamma, beta, static_cast<const T*>(nullptr), {},
                                             paired);
      break;
    }
    add_rows(r + 1, 1);
    const T* next[1] = {row_x(r + 1)};
    if (layernorm) {
      float shift, s1, s2;
      StatsShifts<1>(d, next, n, &shift);
      ApplyWithNextCentredSums<kHwBf16>(d, x[0], y, n, mean, rstd, gamma, beta, next[0], shift, s1, s2, paired);
      StatsFromCentredSums<1>(d, next, n, &shift, &s1, &s2, &mean, &m2);
    } else {
      ApplyWithNextSumOfSquares<kHwBf16>(d, x[0], y, n, rstd, gamma, next[0], m2, paired);
    }
    x[0] = next[0];
  }
}

// Rows of a block computed by BlockedRows (see detail::block_long_layernorm_rows).
using detail::kBlockRows;
// Columns of one block of BlockedRows' apply step: gamma and beta for them take 16 KiB, a third of
// a 48 KiB L1, beside the block of x and y of the row being written.
constexpr std::size_t kApplyBlockParamBytes = 16 * 1024;

// count (<= kBlockRows) whole rows of at most one chunk each, starting at row r: the statistics
// of every row, then the apply step column block by column block, each block of gamma and beta
// (RMSNorm's gamma alone, for highway-f64) applied to every row while it is in L1. A row's x is
// read back from L2 instead of L1, so this pays where the rows are long enough that x, y and the
// parameters overflow L1 (4.5 lines moved from L2 per output vector had bounded 8x4096 at under
// half the ceiling). Interleaved A/B against the
// pairs before it, 1 thread: see families.hpp. The same arithmetic per element, so the results
// are those of rows computed alone.
// next_x: the next block's first next_count rows, prefetched into L2 by the apply step.
template <bool kStream, bool kVariant, bool kHwBf16, class T, class C, class P>
HWY_INLINE void BlockedRows(const Problem& p, const Buffers& b, std::int64_t r, std::int64_t count, const P* gamma,
                            const P* beta, const T* next_x, std::int64_t next_count,
                            const PairedParams<P>& paired = {}) {
  const hn::ScalableTag<C> d;
  const std::size_t n = static_cast<std::size_t>(p.cols);
  const T* x[kBlockRows];
  T* y[kBlockRows];
  C mean[kBlockRows], rstd[kBlockRows];
  const bool half_rate = kHalfRateNextRows<kStream, T, C> && detail::half_rate_next_rows_in_f64();
  for (std::int64_t k = 0; k < count; ++k) {
    x[k] = static_cast<const T*>(b.x) + (r + k) * p.cols;
    y[k] = static_cast<T*>(b.y) + (r + k) * p.cols;
    C m2;
    mean[k] = 0;
    const T* next_half = half_rate && k < next_count ? next_x + k * p.cols : nullptr;
    if (centres(p.norm))
      BlockStats<1, 1>(d, &x[k], n, &mean[k], &m2, next_half);
    else
      SumsOfSquares<1, 1>(d, &x[k], n, &m2, next_half);
    rstd[k] = RowScale<kVariant, T>(p, b, r + k, mean[k], m2);
  }
  // A multiple of two vectors (Apply's bf16 step), so that only a row's last block has a tail.
  const std::size_t block = std::max<std::size_t>(kApplyBlockParamBytes / (2 * sizeof(P)) / (2 * hn::Lanes(d)), 1) *
                            2 * hn::Lanes(d);
  for (std::size_t c0 = 0; c0 < n; c0 += block) {
    const std::size_t len = std::min(block, n - c0);
    for (std::int64_t k = 0; k < count; ++k) {
      const T* xs[1] = {x[k] + c0};
      T* ys[1] = {y[k] + c0};
      const T* next = k < next_count ? next_x + k * p.cols + (half_rate ? p.cols / 2 + c0 / 2 : c0) : nullptr;
      ApplyOptions opt = ApplyOptionsOf(p);
      opt.half_rate_prefetch = half_rate;
      Apply<kStream, 1, kVariant, false, kHwBf16>(d, xs, ys, len, &mean[k], &rstd[k], gamma + c0,
                                                  beta ? beta + c0 : nullptr, next,
                                                  opt, paired.at(c0));
    }
  }
}

// GroupNorm units [u_begin, u_end) (unit u = row u / groups, group u % groups), each over its
// contiguous (C/groups)*HW elements: statistics as for a LayerNorm row (chunked beyond one chunk,
// merged in order), then per channel the apply step with that channel's gamma/beta broadcast.
// Every unit is computed whole by one call, so `threaded` splitting units is bitwise equal.
template <bool kStream, bool kHwBf16, class T, class C>
void GroupUnitsImpl(const Problem& p, const Buffers& b, std::int64_t u_begin, std::int64_t u_end) {
  using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const hn::ScalableTag<C> d;
  const std::int64_t groups = group_count(p), len = stat_cols(p), hw = spatial_size(p), per_group = len / hw;
  const auto* gamma = static_cast<const P*>(b.gamma);
  const auto* beta = static_cast<const P*>(b.beta);
  for (std::int64_t u = u_begin; u < u_end; ++u) {
    const T* x = static_cast<const T*>(b.x) + u * len;
    T* y = static_cast<T*>(b.y) + u * len;
    detail::ChunkAccumulator<C> acc;
    for (std::int64_t k = 0; k < detail::chunk_count(len); ++k) {
      C chunk_mean, chunk_m2;
      ChunkStatsTyped(d, x, len, k, p.norm, chunk_mean, chunk_m2);
      if (centres(p.norm))
        acc.add_layernorm(static_cast<C>(std::min(len - k * detail::kStatsChunk, detail::kStatsChunk)), chunk_mean,
                          chunk_m2);
      else
        acc.add_rmsnorm(chunk_m2);
    }
    const C mean = acc.mean, rstd = detail::row_rstd(acc.m2, len, p);
    if (b.mean) b.mean[u] = static_cast<float>(mean);
    if (b.rstd) b.rstd[u] = static_cast<float>(rstd);
    const std::int64_t channel0 = (u % groups) * per_group;
    const P* g = gamma ? gamma + channel0 : nullptr;
    const P* bt = beta ? beta + channel0 : nullptr;
    const T* next_x = u + 1 < u_end ? x + len : nullptr;
    if (hw == 1) {  // per-element parameters: the row form
      const T* xs[1] = {x};
      T* ys[1] = {y};
      Apply<kStream, 1, false, false, kHwBf16>(d, xs, ys, static_cast<std::size_t>(len), &mean, &rstd, g, bt, next_x);
      continue;
    }
    for (std::int64_t c = 0; c < per_group; ++c) {
      const T* xs[1] = {x + c * hw};
      T* ys[1] = {y + c * hw};
      Apply<kStream, 1, false, true, kHwBf16>(d, xs, ys, static_cast<std::size_t>(hw), &mean, &rstd, g ? g + c : nullptr,
                                     bt ? bt + c : nullptr, c + 1 == per_group ? next_x : nullptr);
    }
  }
  if constexpr (kStream) hwy::FlushStream();
}

// Rows interleaved by the short-row path when detail::interleave_short_rows or
// interleave_long_layernorm_rows says so.
constexpr std::size_t kRowsAtOnce = 2;
// Rows interleaved where detail::triple_short_layernorm_rows says so (the remainder in a pair or alone).
constexpr std::int64_t kTriple = 3;

// f32 gamma/beta widened to f64 once per call, for the f64 lanes of highway-f64: converted in the
// apply step they cost two conversions per vector of every row, on top of x's two (in and out).
// Interleaved A/B, 1 thread, 3 rounds: LayerNorm f32 64x768 13%, 512x8192 12%, 10923x768 27%,
// bf16 8-9%; RMSNorm f32 9-19%, bf16 7-8% faster.
// Per calling thread, reused across calls; only for rows of one chunk (the copies stay in L2) and
// calls of kMinRowsToWidenParams rows or more: the widening costs about one row's conversions
// (1x4096 f32 had taken 22-45% longer with it).
constexpr std::int64_t kMinRowsToWidenParams = 4;
inline std::vector<double>& WidenedParamsBuffer(int which) {
  thread_local std::vector<double> buffers[3];  // gamma, beta, and the rows of kMayWidenRows
  return buffers[which];
}

template <class D>
const double* WidenParams(D d, const float* HWY_RESTRICT p, std::size_t n, int which) {
  if (!p) return nullptr;
  std::vector<double>& out = WidenedParamsBuffer(which);
  out.resize(n);
  const std::size_t N = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(LoadRow(d, p + i), d, out.data() + i);
  for (; i < n; ++i) out[i] = p[i];
  return out.data();
}

// bf16 rows with f32 compute take Apply's even/odd order (PairedParams, kEvenOddOrder) where gamma
// and beta are copied into that order once per call (per calling thread, reused across calls):
// see detail::pair_params_for_even_odd_apply for which calls.
inline std::vector<float>& PairedParamsBuffer(int which) {
  thread_local std::vector<float> buffers[2];  // gamma, beta
  return buffers[which];
}

// p's steps of 2N columns from `from` in even/odd order (see PairedParams); null for null.
template <class D>
const float* PairParams(D d, const float* HWY_RESTRICT p, std::size_t n, std::size_t from, int which) {
  if (!p) return nullptr;
  std::vector<float>& out = PairedParamsBuffer(which);
  out.resize(n);
#if HWY_TARGET != HWY_SCALAR  // (no ConcatEven; not called there)
  const std::size_t N = hn::Lanes(d);
  for (std::size_t i = from; i + 2 * N <= n; i += 2 * N) {
    const auto lo = hn::LoadU(d, p + i), hi = hn::LoadU(d, p + i + N);
    hn::StoreU(hn::ConcatEven(d, hi, lo), d, out.data() + i);
    hn::StoreU(hn::ConcatOdd(d, hi, lo), d, out.data() + i + N);
  }
#else
  (void)d, (void)from;
#endif
  return out.data();
}

// The PairedParams of a call of `rows` rows of p whose first row is written at y0 (off where
// kEvenOddOrder does not hold or the rule declines the call).
template <bool kStream, bool kHwBf16, class D, class T, class P>
PairedParams<P> PairedParamsOf(D d, const Problem& p, const P* gamma, const P* beta, const T* y0, std::int64_t rows) {
  if constexpr (kEvenOddOrder<D, T, kHwBf16>) {
    if (!detail::pair_params_for_even_odd_apply(p, rows, (gamma != nullptr) + (beta != nullptr))) return {};
    const auto n = static_cast<std::size_t>(p.cols);
    const std::size_t from = kStream ? StreamPeel(y0, n, 2 * hn::Lanes(d) * sizeof(T)) : 0;
    return {PairParams(d, gamma, n, from, 0), PairParams(d, beta, n, from, 1), from, true};
  } else {
    (void)d, (void)p, (void)gamma, (void)beta, (void)y0, (void)rows;
    return {};
  }
}

// highway-f64 LayerNorm on f32 rows written with streaming stores (DRAM-sized calls): rows taken
// one at a time prefetch the row after next, not the next one. Its apply step, bound by the f64
// conversions (about 150 ns for 768 values on Zen 4), issues the next row's prefetches over its
// whole length, the last of them too late to arrive before that row's statistics read. Zen 4 VM,
// one build toggled at run time, ABBA, 5 rounds, pinned, 1 thread, medians of the per-round ratio
// of the time to the in-run stream-scale ceiling's, two rows ahead against one: 10923x768 0.88,
// 21845x768 0.83, 43691x768 0.92 (raw 0.83), 16384x1024 1.00 (raw 0.95), the rows before it at
// 270-400 ns; measured again an hour later, when the rows before it ran at 260-345 ns: 0.93-1.00
// (16384x1024 0.93, 87381x768 0.96), with the slowest repetitions 292 ns against 345 (43691x768).
// Not for RMSNorm (0.91-1.05, mixed), bf16 rows (widened once, 0.92-1.05), pairs of long rows
// (2048x4096, 2048x5120, 4096x4096 the same), nor `highway` f32 (memory-bound: 21845x768 1.0-1.2
// of the time before); and not for rows of kPrefetchInStatsBytes or more, whose statistics read
// prefetches the next row as well (not measured).
template <class T, class C>
constexpr bool kF32InF64 = std::is_same_v<T, float> && std::is_same_v<C, double>;
constexpr std::int64_t kF64RowsAhead = 2;

// T: storage type; C: compute type (f32, or f64 for f64 data and for the accuracy-first variant).
// residual_add: each row (or pair of rows) of h = x + r is written first and normalized while it
// is still in L1; `in` is then b with x = h. kHwBf16: see WithBf16Rounding.
template <bool kStream, bool kVariant, bool kHwBf16, class T, class C>
void ForwardRowsImpl(const Problem& p, const Buffers& b, std::int64_t row_begin, std::int64_t row_end) {
  if (p.norm == Norm::kGroupNorm && (group_count(p) > 1 || spatial_size(p) > 1)) {  // else a LayerNorm row
    GroupUnitsImpl<kStream, kHwBf16, T, C>(p, b, row_begin * group_count(p), row_end * group_count(p));
    return;
  }
  using P = std::conditional_t<std::is_same_v<T, double>, double, float>;  // gamma/beta
  const hn::ScalableTag<C> d;
  HWY_DASSERT(hn::Lanes(d) * sizeof(C) <= kMaxVectorBytes);
  const auto* gamma = static_cast<const P*>(b.gamma);
  const auto* beta = static_cast<const P*>(b.beta);
  const auto row_x = [&](std::int64_t r) { return static_cast<const T*>(b.x) + r * p.cols; };
  const std::int64_t chunks = detail::chunk_count(p.cols);
  Buffers in = b;
  if (p.residual_add) in.x = b.h;
  const auto add_rows = [&](std::int64_t r, std::int64_t count) {
    if (!p.residual_add) return;
    const auto offset = r * p.cols;
    AddRowInto(d, row_x(r), static_cast<const T*>(b.residual) + offset, static_cast<T*>(b.h) + offset,
               static_cast<std::size_t>(count * p.cols));
  };
  if (chunks == 1) {
    // Inlined, and a lone row asks no pairing rule: a decode call (one 768-float row, ~80 ns) had
    // spent ~5 ns in the lambda's own call and frame and the out-of-line rule (perf annotate).
    const auto short_rows = [&](const auto* g, const auto* bt) HWY_ATTR __attribute__((always_inline)) {
      constexpr auto R = static_cast<std::int64_t>(kRowsAtOnce);
      C* widened = nullptr;
      std::size_t stride = 0;
      if constexpr (kMayWidenRows<T, C, kVariant>) {
        const std::size_t N = hn::Lanes(d);
        stride = (static_cast<std::size_t>(p.cols) + N - 1) / N * N;
        if (kRowsAtOnce * stride * sizeof(C) <= kWidenedRowsMaxBytes) {
          std::vector<double>& buf = WidenedParamsBuffer(2);
          constexpr std::size_t kAlign = kMaxVectorBytes / sizeof(double);  // whole vectors, aligned
          if (buf.size() < kRowsAtOnce * stride + kAlign) buf.resize(kRowsAtOnce * stride + kAlign);
          const auto misalign = reinterpret_cast<std::uintptr_t>(buf.data()) % kMaxVectorBytes / sizeof(double);
          widened = buf.data() + (misalign ? kAlign - misalign : 0);
        }
      }
      // highway-f64 on 16-bit data is compute-bound there: its pairs of long rows measured 5-6% slower.
      constexpr bool kLongRowPairs = !(std::is_same_v<C, double> && sizeof(T) == 2);
      std::int64_t r = row_begin;
      // Streaming stores peel every row to the same alignment: rows must share it.
      // (Apply's widest store is two vectors' worth of bf16.)
      const bool same_alignment = !kStream || static_cast<std::size_t>(p.cols) % (2 * hn::Lanes(d)) == 0;
      const std::int64_t rows = row_end - row_begin;
      const auto paired = PairedParamsOf<kStream, kHwBf16>(d, p, g, bt, static_cast<const T*>(b.y) + row_begin * p.cols,
                                                           rows);
      // LayerNorm with gamma and beta; RMSNorm with gamma alone only for highway-f64 on f32 rows.
      // Not highway-f64 on 16-bit data, compute-bound there (blocked: bf16 4-8% slower); on f32 rows
      // only on Intel (see detail::block_long_f32_rows_in_f64).
      constexpr bool kMayBlock = !(std::is_same_v<C, double> && sizeof(T) == 2);
      constexpr bool kMayPipeline = std::is_same_v<C, float> && !std::is_same_v<T, double> && !kStream && !kVariant;
      bool pipelined = false;  // rows the block rule takes, pipelined instead (detail::pipeline_blocked_layernorm_rows)
      const bool multi_row_rules = rows >= detail::kMinRowsOfMultiRowRules;
      if (kMayBlock && multi_row_rules && g && (centres(p.norm) ? bt != nullptr : kF32InF64<T, C> && bt == nullptr) &&
          (kF32InF64<T, C> ? detail::block_long_f32_rows_in_f64(p, rows) : detail::block_long_layernorm_rows(p, rows)) &&
          !(pipelined = kMayPipeline && detail::pipeline_blocked_layernorm_rows(p, rows))) {
        for (; r < row_end; r += kBlockRows) {
          const std::int64_t count = std::min(kBlockRows, row_end - r), next = r + count;
          add_rows(r, count);
          BlockedRows<kStream, kVariant, kHwBf16, T, C>(p, in, r, count, g, bt, next < row_end ? row_x(next) : nullptr,
                                                       std::min(kBlockRows, row_end - next), paired);
        }
        return;
      }
      if constexpr (kMayPipeline) {
        if (pipelined || (multi_row_rules && g && (centres(p.norm) ? bt != nullptr : bt == nullptr) &&
                          detail::pipeline_short_rows(p, rows))) {
          PipelinedRows<kHwBf16, T>(p, in, r, rows, g, bt, add_rows, paired);
          return;
        }
      }
      // f32 compute on 16-bit or f32 rows (the rule tells which)
      constexpr bool kMayTriple = sizeof(T) <= 4 && std::is_same_v<C, float>;
      if (kMayTriple && multi_row_rules && same_alignment && detail::triple_short_layernorm_rows(p, rows, kStream))
        for (; r + kTriple <= row_end; r += kTriple) {
          add_rows(r, kTriple);
          ShortRows<kTriple, kStream, kVariant, kHwBf16, T, C>(
              p, in, r, g, bt, r + kTriple < row_end ? row_x(r + kTriple) : nullptr, nullptr, 0, paired);
        }
      if (row_end - r >= R && same_alignment && (detail::interleave_short_rows(p, rows) ||
                             (kLongRowPairs && g && bt && detail::interleave_long_layernorm_rows(p, rows))))
        for (; r + R <= row_end; r += R) {
          add_rows(r, R);
          ShortRows<kRowsAtOnce, kStream, kVariant, kHwBf16, T, C>(p, in, r, g, bt, r + R < row_end ? row_x(r + R) : nullptr,
                                                               widened, stride, paired);
        }
      const std::int64_t ahead =
          kF32InF64<T, C> && kStream && centres(p.norm) && static_cast<std::size_t>(p.cols) * sizeof(T) < kPrefetchInStatsBytes
              ? kF64RowsAhead
              : 1;
      for (; r < row_end; ++r) {
        add_rows(r, 1);
        ShortRows<1, kStream, kVariant, kHwBf16, T, C>(p, in, r, g, bt, r + ahead < row_end ? row_x(r + ahead) : nullptr,
                                                     widened, stride, paired);
      }
    };
    constexpr bool kMayWiden = std::is_same_v<C, double> && std::is_same_v<P, float> && !kVariant;
    if (kMayWiden && row_end - row_begin >= kMinRowsToWidenParams) {
      const auto n = static_cast<std::size_t>(p.cols);
      if constexpr (kMayWiden) short_rows(WidenParams(d, gamma, n, 0), WidenParams(d, beta, n, 1));
    } else {
      short_rows(gamma, beta);
    }
  } else {  // long rows: fixed chunks merged in order, exactly as `threaded` does in parallel
    // The statistics read does not prefetch the next row (short rows of >= kPrefetchInStatsBytes
    // do). On a Zen 4 VM its prefetch of the next row's chunk had measured 11% faster (128x65537
    // f32 and bf16); on the Zen 5 VM, interleaved A/B, 1 thread, 4 rounds, LayerNorm 128x65537
    // without it: highway f32 22%, bf16 25%, highway-f64 f32 25% faster (it front-loaded two rows'
    // DRAM traffic into the statistics, leaving the apply's idle).
    // LayerNorm's apply step prefetches it only on Intel, for DRAM-sized calls whose two rows fit L2
    // (and 1.5 MiB) with their parameters (detail::prefetch_next_long_layernorm_row): the row (128 KiB or
    // more), its gamma and beta (twice as much again in f32) and the next row fetched ahead
    // overflowed Zen 4's 1 MiB L2. Without it each row's statistics read streams the row from
    // DRAM (hardware prefetcher) and the apply step re-reads it from L2. Zen 4 VM, two builds,
    // ABBA, 6 rounds, medians of the per-round time ratio, without / with: 1 thread 128x65537 f32
    // 0.78, bf16 0.75-0.84, highway-f64 f32 0.91; 64x131072 f32 0.83-0.89, bf16 0.91-0.99,
    // highway-f64 0.91; 32x262144 (rows beyond L2 either way) 0.87-1.03; 2 threads 0.82-0.98, f32
    // 32x262144 1.09 (rounds 0.96-1.82). RMSNorm keeps the prefetch (its apply step reads only
    // gamma): without it 0.90-0.97 at 65537 and 131072 columns but 1.12-1.14 at 262144, mixed.
    const auto row_in = [&](std::int64_t r) { return static_cast<const T*>(in.x) + r * p.cols; };
    const bool prefetch_next = !centres(p.norm) || (kStream && detail::prefetch_next_long_layernorm_row(p));
    // A row that the previous row's apply step did not prefetch reads itself ahead in both steps,
    // gamma and beta too in the apply step (Intel, streaming: detail::prefetch_long_rows_ahead).
    // Near a row's end these addresses pass it: prefetches of them never fault.
    const std::size_t ahead = detail::long_rows_ahead_elements<T>(p, kStream);
    // The next row at half rate through both steps, as kHalfRateNextRows for short rows, for every
    // dtype (see detail::half_rate_next_long_row).
    const bool half_rate = kStream && prefetch_next && detail::half_rate_next_long_row(p, std::is_same_v<C, double>);
    for (std::int64_t r = row_begin; r < row_end; ++r) {
      add_rows(r, 1);
      detail::ChunkAccumulator<C> acc;
      const bool prefetched = prefetch_next && r > row_begin;
      const T* next_half = half_rate && r + 1 < row_end ? row_x(r + 1) : nullptr;
      for (std::int64_t k = 0; k < chunks; ++k) {
        C chunk_mean, chunk_m2;
        ChunkStatsTyped(d, row_in(r), p.cols, k, p.norm, chunk_mean, chunk_m2, prefetched ? 0 : ahead, next_half);
        const C count = static_cast<C>(std::min(p.cols - k * detail::kStatsChunk, detail::kStatsChunk));
        if (centres(p.norm))
          acc.add_layernorm(count, chunk_mean, chunk_m2);
        else
          acc.add_rmsnorm(chunk_m2);
      }
      C mean = acc.mean, rstd = detail::row_rstd(acc.m2, p.cols, p);
      if (b.mean) b.mean[r] = static_cast<float>(mean);
      if (b.rstd) b.rstd[r] = static_cast<float>(rstd);
      if (kVariant && p.variant.storage_compute) {
        mean = RoundScalarToStorage<T>(mean);
        rstd = RoundScalarToStorage<T>(rstd);
      }
      const T* x[1] = {row_in(r)};
      T* y[1] = {static_cast<T*>(b.y) + r * p.cols};
      const bool next = prefetch_next && r + 1 < row_end;
      ApplyOptions opt = ApplyOptionsOf(p);
      opt.read_ahead = ahead;  // used only by a row with no next row to prefetch
      const T* next_row = next ? row_x(r + 1) : nullptr;
      if (next_half) {  // implies next
        next_row += p.cols / 2;
        opt.half_rate_prefetch = true;
      }
      Apply<kStream, 1, kVariant, false, kHwBf16>(d, x, y, static_cast<std::size_t>(p.cols), &mean, &rstd, gamma, beta,
                                                  next_row, opt);
    }
  }
  if constexpr (kStream) hwy::FlushStream();  // order the non-temporal stores before what follows
}

template <class T, class C>
void ForwardRowsTyped(const Problem& p, const Buffers& b, std::int64_t row_begin, std::int64_t row_end,
                      bool stream) {
  const bool variant = p.variant.one_plus_gamma || p.variant.storage_compute;
  WithBf16Rounding<T, C>([&](auto hw_bf16) HWY_ATTR {
    constexpr bool kHw = decltype(hw_bf16)::value;
    if (stream && variant)
      ForwardRowsImpl<true, true, kHw, T, C>(p, b, row_begin, row_end);
    else if (stream)
      ForwardRowsImpl<true, false, kHw, T, C>(p, b, row_begin, row_end);
    else if (variant)
      ForwardRowsImpl<false, true, kHw, T, C>(p, b, row_begin, row_end);
    else
      ForwardRowsImpl<false, false, kHw, T, C>(p, b, row_begin, row_end);
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace normbench
HWY_AFTER_NAMESPACE();

#endif  // NORMBENCH_HIGHWAY_ROWS_INL_H_
