// highway: Google Highway SIMD with dynamic dispatch over every compiled target.
//
// Statistics (BlockStats): shifted sums in one read, kept when the shift is within sigma/4 of
// the mean, else the corrected two-pass algorithm (Chan, Golub & LeVeque 1983, eq. 1.7):
//   read 1: K = mean of the first 64 values; S1 = sum(x - K), S2 = sum((x - K)^2)
//           mean0 = K + S1/n, M2 = S2 - S1^2/n   kept if S1^2/n <= M2/16 (worst case 1.58 n u)
//   read 2: c = sum(x - mean0), S = sum((x - mean0)^2)
//           mean = mean0 + c/n,  var = (S - c^2/n) / n
// The shift makes constant rows exact (K = x0, mean = x0, var = 0, so y = beta); the second
// read removes the first-order error of mean0. Sums use several independent vector accumulators.
// `highway-f64` runs the same algorithm with f64 lanes for every dtype (as gemma.cpp does).
// bf16/f16 are widened to f32 in registers and rounded back to nearest-even by our own integer
// code (Highway 1.0.3's bf16 demotion truncates; its non-F16C f16 paths truncate and break
// Inf/NaN), with hardware F16C used on AVX2 and AVX-512 targets.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "highway.cpp"  // found through this directory on the include path
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <fmt/format.h>

#include "batchnorm.hpp"
#include "families.hpp"
#include "highway_ops-inl.h"
#include "highway_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace normbench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void ForwardRows(const Problem& p, const Buffers& b, std::int64_t row_begin, std::int64_t row_end, bool stream) {
  switch (p.dtype) {
    case DType::kF32: return ForwardRowsTyped<float, float>(p, b, row_begin, row_end, stream);
    case DType::kF64: return ForwardRowsTyped<double, double>(p, b, row_begin, row_end, stream);
    case DType::kBF16: return ForwardRowsTyped<bf16, float>(p, b, row_begin, row_end, stream);
    case DType::kF16: return ForwardRowsTyped<f16, float>(p, b, row_begin, row_end, stream);
  }
}

// One chunk of one row, for `threaded` when it splits long rows: statistics (the compute type's
// values, exactly, in doubles) and the apply step over a column range.
template <class T>
void ChunkStatsOf(const Problem& p, const Buffers& b, std::int64_t row, std::int64_t k, double* mean, double* m2,
                  bool stream) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const hn::ScalableTag<C> d;
  C cm, c2;
  ChunkStatsTyped(d, static_cast<const T*>(b.x) + row * p.cols, p.cols, k, p.norm, cm, c2,
                  detail::long_rows_ahead_elements<T>(p, stream));
  *mean = cm;
  *m2 = c2;
}

template <class T>
void ApplyRangeOf(const Problem& p, const Buffers& b, std::int64_t row, std::int64_t begin, std::int64_t end,
                  double mean, double rstd, bool stream) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  using P = C;
  const hn::ScalableTag<C> d;
  const T* x = static_cast<const T*>(b.x) + row * p.cols + begin;
  T* y = static_cast<T*>(b.y) + row * p.cols + begin;
  const auto* gamma = b.gamma ? static_cast<const P*>(b.gamma) + begin : nullptr;
  const auto* beta = b.beta ? static_cast<const P*>(b.beta) + begin : nullptr;
  const auto n = static_cast<std::size_t>(end - begin);
  C m = static_cast<C>(mean), r = static_cast<C>(rstd);
  const T* xs[1] = {x};
  T* ys[1] = {y};
  ApplyOptions opt = ApplyOptionsOf(p);
  // Streaming, this thread's columns read themselves ahead (see ForwardRowsImpl's long rows).
  opt.read_ahead = detail::long_rows_ahead_elements<T>(p, stream);
  const T* const no_next_row = nullptr;
  if (opt.storage) {
    m = RoundScalarToStorage<T>(m);
    r = RoundScalarToStorage<T>(r);
  }
  WithBf16Rounding<T, C>([&](auto hw_bf16) HWY_ATTR {
    constexpr bool kHw = decltype(hw_bf16)::value;
    if (opt.one_plus_gamma || opt.storage) {
      if (stream) Apply<true, 1, true, false, kHw>(d, xs, ys, n, &m, &r, gamma, beta, no_next_row, opt);
      else Apply<false, 1, true, false, kHw>(d, xs, ys, n, &m, &r, gamma, beta, no_next_row, opt);
    } else {
      if (stream) Apply<true, 1, false, false, kHw>(d, xs, ys, n, &m, &r, gamma, beta, no_next_row, opt);
      else Apply<false, 1, false, false, kHw>(d, xs, ys, n, &m, &r, gamma, beta, no_next_row, opt);
    }
  });
  if (stream) hwy::FlushStream();
}

// GroupNorm units [u_begin, u_end) with the highway kernel (threaded splits units over threads).
template <class T>
void GroupUnitsOf(const Problem& p, const Buffers& b, std::int64_t u_begin, std::int64_t u_end, bool stream) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  WithBf16Rounding<T, C>([&](auto hw_bf16) HWY_ATTR {
    constexpr bool kHw = decltype(hw_bf16)::value;
    if (stream)
      GroupUnitsImpl<true, kHw, T, C>(p, b, u_begin, u_end);
    else
      GroupUnitsImpl<false, kHw, T, C>(p, b, u_begin, u_end);
  });
}

void GroupUnits(const Problem& p, const Buffers& b, std::int64_t u_begin, std::int64_t u_end, bool stream) {
  switch (p.dtype) {
    case DType::kF32: return GroupUnitsOf<float>(p, b, u_begin, u_end, stream);
    case DType::kF64: return GroupUnitsOf<double>(p, b, u_begin, u_end, stream);
    case DType::kBF16: return GroupUnitsOf<bf16>(p, b, u_begin, u_end, stream);
    case DType::kF16: return GroupUnitsOf<f16>(p, b, u_begin, u_end, stream);
  }
}

// h = x + r over [begin, end) of one row, with the kernel's compute type (threaded's split rows).
template <class T>
void AddRangeOf(const Problem& p, const Buffers& b, std::int64_t row, std::int64_t begin, std::int64_t end) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const hn::ScalableTag<C> d;
  const std::int64_t offset = row * p.cols + begin;
  AddRowInto(d, static_cast<const T*>(b.x) + offset, static_cast<const T*>(b.residual) + offset,
             static_cast<T*>(b.h) + offset, static_cast<std::size_t>(end - begin));
}

void AddRange(const Problem& p, const Buffers& b, std::int64_t row, std::int64_t begin, std::int64_t end) {
  switch (p.dtype) {
    case DType::kF32: return AddRangeOf<float>(p, b, row, begin, end);
    case DType::kF64: return AddRangeOf<double>(p, b, row, begin, end);
    case DType::kBF16: return AddRangeOf<bf16>(p, b, row, begin, end);
    case DType::kF16: return AddRangeOf<f16>(p, b, row, begin, end);
  }
}

void ChunkStats(const Problem& p, const Buffers& b, std::int64_t row, std::int64_t k, double* mean, double* m2,
                bool stream) {
  switch (p.dtype) {
    case DType::kF32: return ChunkStatsOf<float>(p, b, row, k, mean, m2, stream);
    case DType::kF64: return ChunkStatsOf<double>(p, b, row, k, mean, m2, stream);
    case DType::kBF16: return ChunkStatsOf<bf16>(p, b, row, k, mean, m2, stream);
    case DType::kF16: return ChunkStatsOf<f16>(p, b, row, k, mean, m2, stream);
  }
}

void ApplyRange(const Problem& p, const Buffers& b, std::int64_t row, std::int64_t begin, std::int64_t end,
                double mean, double rstd, bool stream) {
  switch (p.dtype) {
    case DType::kF32: return ApplyRangeOf<float>(p, b, row, begin, end, mean, rstd, stream);
    case DType::kF64: return ApplyRangeOf<double>(p, b, row, begin, end, mean, rstd, stream);
    case DType::kBF16: return ApplyRangeOf<bf16>(p, b, row, begin, end, mean, rstd, stream);
    case DType::kF16: return ApplyRangeOf<f16>(p, b, row, begin, end, mean, rstd, stream);
  }
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

template <class T, bool kHwBf16 = false>
void ConvertTyped(const float* in_f32, T* out_t, const T* in_t, float* out_f32, std::size_t n) {
  const hn::ScalableTag<float> d;
  const std::size_t N = hn::Lanes(d);
  std::size_t i = 0;
  if constexpr (kBf16InPairs<decltype(d), T>)  // rounded in pairs of vectors, as Apply stores bf16
    for (; out_t && i + 2 * N <= n; i += 2 * N)
      NarrowPairToBf16<false, kHwBf16>(d, hn::LoadU(d, in_f32 + i), hn::LoadU(d, in_f32 + i + N), out_t + i);
  for (; i + N <= n; i += N) {
    if (out_t) StoreRow(d, hn::LoadU(d, in_f32 + i), out_t + i);
    if (out_f32) hn::StoreU(LoadRow(d, in_t + i), d, out_f32 + i);
  }
  if (i < n) {
    if (out_t) StorePartial(d, LoadPartial(d, in_f32 + i, n - i), out_t + i, n - i);
    if (out_f32) StorePartial(d, LoadPartial(d, in_t + i, n - i), out_f32 + i, n - i);
  }
}

// f64 to T, rounded once (highway-f64's stores).
template <class T>
void ConvertF64Typed(const double* in, T* out, std::size_t n) {
  const hn::ScalableTag<double> d;
  const std::size_t N = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + N <= n; i += N) StoreRow(d, hn::LoadU(d, in + i), out + i);
  if (i < n) StorePartial(d, LoadPartial(d, in + i, n - i), out + i, n - i);
}

void ConvertF64(DType t, const double* in, void* out, std::size_t n) {
  switch (t) {
    case DType::kF32: return ConvertF64Typed(in, static_cast<float*>(out), n);
    case DType::kBF16: return ConvertF64Typed(in, static_cast<bf16*>(out), n);
    case DType::kF16: return ConvertF64Typed(in, static_cast<f16*>(out), n);
    case DType::kF64: return;
  }
}

// Store direction when in_f32 is given, load direction when out_f32 is given.
void Convert(DType t, const float* in_f32, void* out_t, const void* in_t, float* out_f32, std::size_t n) {
  switch (t) {
    case DType::kF32:
      return ConvertTyped(in_f32, static_cast<float*>(out_t), static_cast<const float*>(in_t), out_f32, n);
    case DType::kBF16:
      return WithBf16Rounding<bf16, float>([&](auto hw_bf16) HWY_ATTR {
        ConvertTyped<bf16, decltype(hw_bf16)::value>(in_f32, static_cast<bf16*>(out_t), static_cast<const bf16*>(in_t),
                                                     out_f32, n);
      });
    case DType::kF16:
      return ConvertTyped(in_f32, static_cast<f16*>(out_t), static_cast<const f16*>(in_t), out_f32, n);
    case DType::kF64: return;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace normbench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normbench {
HWY_EXPORT(ForwardRows);
HWY_EXPORT(ChunkStats);
HWY_EXPORT(ApplyRange);
HWY_EXPORT(AddRange);
HWY_EXPORT(GroupUnits);
HWY_EXPORT(TargetName);
HWY_EXPORT(Convert);
HWY_EXPORT(ConvertF64);

namespace {
// The public entry points below check what forward() checks for the kernels: the Highway code
// behind them dereferences its buffers as typed, aligned elements.
// in_size / out_size: the element sizes of in and out (the alignment each needs).
void check_conversion(DType t, const void* in, std::size_t in_size, const void* out, std::size_t out_size,
                      std::size_t n) {
  if (t != DType::kF32 && t != DType::kBF16 && t != DType::kF16)
    throw Error(fmt::format("SIMD conversion supports f32, bf16 and f16, not {}", dtype_name(t)));
  if (n == 0) return;
  if (in == nullptr || out == nullptr) throw Error("SIMD conversion: null buffer");
  detail::check_aligned(in, in_size, "SIMD conversion input");
  detail::check_aligned(out, out_size, "SIMD conversion output");
  // The vector loop reads and writes a vector at a time, at different widths when the sizes
  // differ, so any overlap (in place included) would read values it has already overwritten.
  if (detail::ranges_overlap(in, n * in_size, out, n * out_size)) throw Error("SIMD conversion: input and output overlap");
}
}  // namespace

void simd_store_rounded(DType t, const float* in, void* out, std::size_t n) {
  check_conversion(t, in, sizeof(float), out, dtype_size(t), n);
  HWY_DYNAMIC_DISPATCH(Convert)(t, in, out, nullptr, nullptr, n);
}
void simd_store_rounded(DType t, const double* in, void* out, std::size_t n) {
  check_conversion(t, in, sizeof(double), out, dtype_size(t), n);
  HWY_DYNAMIC_DISPATCH(ConvertF64)(t, in, out, n);
}
void simd_load_widened(DType t, const void* in, float* out, std::size_t n) {
  check_conversion(t, in, dtype_size(t), out, sizeof(float), n);
  HWY_DYNAMIC_DISPATCH(Convert)(t, nullptr, nullptr, in, out, n);
}

void add_rounded(DType t, const void* x, const void* residual, void* h, std::size_t n) {
  if (n == 0) return;
  if (x == nullptr || residual == nullptr || h == nullptr) throw Error("add_rounded: null buffer");
  const std::size_t size = dtype_size(t);
  detail::check_aligned(x, size, "add_rounded: x");
  detail::check_aligned(residual, size, "add_rounded: residual");
  detail::check_aligned(h, size, "add_rounded: h");
  // forward()'s rules for its fused add (core.cpp): elementwise, so residual may be x and h may be
  // either; shifted, a vector's store to h would overwrite inputs a later vector has yet to read.
  const std::size_t bytes = n * size;
  if (detail::partially_overlaps(residual, x, bytes)) throw Error("add_rounded: residual partially overlaps x");
  if (detail::partially_overlaps(h, x, bytes) || detail::partially_overlaps(h, residual, bytes))
    throw Error("add_rounded: h partially overlaps x or residual (h may be x or residual itself)");
  Problem p{Norm::kLayerNorm, t, 1, static_cast<std::int64_t>(n), 0.0};
  Buffers b;
  b.x = x;
  b.residual = residual;
  b.h = h;
  HWY_DYNAMIC_DISPATCH(AddRange)(p, b, 0, 0, static_cast<std::int64_t>(n));
}

namespace detail {
void highway_group_units(const Problem& p, const Buffers& b, std::int64_t u_begin, std::int64_t u_end, bool stream) {
  HWY_DYNAMIC_DISPATCH(GroupUnits)(p, b, u_begin, u_end, stream);
}
void highway_add_range(const Problem& p, const Buffers& b, std::int64_t row, std::int64_t begin, std::int64_t end) {
  HWY_DYNAMIC_DISPATCH(AddRange)(p, b, row, begin, end);
}
void highway_rows(const Problem& p, const Buffers& b, std::int64_t row_begin, std::int64_t row_end, bool stream) {
  HWY_DYNAMIC_DISPATCH(ForwardRows)(p, b, row_begin, row_end, stream);
}
void highway_forward(const Problem& p, const Buffers& b, const RunConfig& cfg) {
  if (p.norm == Norm::kBatchNorm)
    return highway_batchnorm(p, b, streaming_stores(p, cfg), false, serial_for);
  highway_rows(p, b, 0, p.rows, streaming_stores(p, cfg));
}
void highway_chunk_stats(const Problem& p, const Buffers& b, std::int64_t row, std::int64_t chunk, double* mean,
                         double* m2, bool stream) {
  HWY_DYNAMIC_DISPATCH(ChunkStats)(p, b, row, chunk, mean, m2, stream);
}
void highway_apply_range(const Problem& p, const Buffers& b, std::int64_t row, std::int64_t begin, std::int64_t end,
                         double mean, double rstd, bool stream) {
  HWY_DYNAMIC_DISPATCH(ApplyRange)(p, b, row, begin, end, mean, rstd, stream);
}
std::string highway_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

namespace {
std::atomic<bool> g_hardware_bf16_allowed{true};
}  // namespace
bool use_hardware_bf16_rounding() {
  return g_hardware_bf16_allowed.load(std::memory_order_relaxed) && hardware_bf16_rounding_available();
}
}  // namespace detail

bool hardware_bf16_rounding_available() {
#if HWY_ARCH_X86 && (defined(__GNUC__) || defined(__clang__))
  static const bool available = [] {
    __builtin_cpu_init();  // in case this runs before the CPU model's own initialisation
    return __builtin_cpu_supports("avx512bf16") != 0;
  }();
  return available;
#else
  return false;
#endif
}
bool set_hardware_bf16_rounding(bool allowed) { return detail::g_hardware_bf16_allowed.exchange(allowed); }
}  // namespace normbench
#endif
