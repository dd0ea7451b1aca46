#include "ceiling.hpp"

#include <algorithm>
#include <cstdint>

#include <omp.h>

#include "normbench/normbench.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ceiling.cpp"  // this directory is on the include path
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace normbench::bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <bool kStream>
void ScaleTyped(const float* HWY_RESTRICT src, float* HWY_RESTRICT dst, std::size_t n) {
  const hn::ScalableTag<float> d;
  const std::size_t N = hn::Lanes(d);
  const auto a = hn::Set(d, 1.0001f);
  const auto put = [&](hn::Vec<decltype(d)> v, float* p) {
    if constexpr (kStream)
      hn::Stream(v, d, p);
    else
      hn::StoreU(v, d, p);
  };
  std::size_t i = 0;
  if constexpr (kStream)  // scalar stores up to the vector alignment
    for (; i < n && reinterpret_cast<std::uintptr_t>(dst + i) % (N * sizeof(float)) != 0; ++i) dst[i] = 1.0001f * src[i];
  for (; i + 4 * N <= n; i += 4 * N) {
    put(hn::Mul(a, hn::LoadU(d, src + i)), dst + i);
    put(hn::Mul(a, hn::LoadU(d, src + i + N)), dst + i + N);
    put(hn::Mul(a, hn::LoadU(d, src + i + 2 * N)), dst + i + 2 * N);
    put(hn::Mul(a, hn::LoadU(d, src + i + 3 * N)), dst + i + 3 * N);
  }
  for (; i < n; ++i) dst[i] = 1.0001f * src[i];
  if constexpr (kStream) hwy::FlushStream();
}

void Scale(const float* HWY_RESTRICT src, float* HWY_RESTRICT dst, std::size_t n, bool stream) {
  if (stream)
    ScaleTyped<true>(src, dst, n);
  else
    ScaleTyped<false>(src, dst, n);
}

// Four accumulators: with one, the add latency made this read slower than the norms' own
// reads of gamma/beta, which lowered the ceiling of short rows.
float Sum(const float* HWY_RESTRICT p, std::size_t n) {
  const hn::ScalableTag<float> d;
  const std::size_t N = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  std::size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    a0 = hn::Add(a0, hn::LoadU(d, p + i));
    a1 = hn::Add(a1, hn::LoadU(d, p + i + N));
    a2 = hn::Add(a2, hn::LoadU(d, p + i + 2 * N));
    a3 = hn::Add(a3, hn::LoadU(d, p + i + 3 * N));
  }
  for (; i + N <= n; i += N) a0 = hn::Add(a0, hn::LoadU(d, p + i));
  float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i) s += p[i];
  return s;
}

// The row-phased ceiling (see ceiling.hpp): per row, a read of the whole row into a sum, then a
// second read of it with gamma [and beta] and the write of y, scaled by a factor that depends on
// the sum, so that no store of a row can start before its read has finished. kParamsPerVector:
// parameter vectors per vector of x (2 when x holds 16-bit values and the parameters f32).
// param_n: the floats of gamma (and of beta) from x's first column on, which bound the vector loop.
template <bool kStream, bool kBeta, std::size_t kParamsPerVector>
HWY_INLINE float PhasedRowTyped(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, std::size_t n,
                                const float* HWY_RESTRICT gamma, const float* HWY_RESTRICT beta, std::size_t param_n,
                                const float* next) {
  const hn::ScalableTag<float> d;
  const std::size_t N = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  std::size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    a0 = hn::Add(a0, hn::LoadU(d, x + i));
    a1 = hn::Add(a1, hn::LoadU(d, x + i + N));
    a2 = hn::Add(a2, hn::LoadU(d, x + i + 2 * N));
    a3 = hn::Add(a3, hn::LoadU(d, x + i + 3 * N));
  }
  for (; i + N <= n; i += N) a0 = hn::Add(a0, hn::LoadU(d, x + i));
  float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i) sum += x[i];
  // 0 * sum is not folded (sum may be Inf or NaN): the scale waits on the read.
  const float scale = 1.0001f + 0.0f * sum;
  const auto s = hn::Set(d, scale);
  const auto value = [&](std::size_t j) HWY_ATTR {
    auto v = hn::Mul(s, hn::LoadU(d, x + j));
    for (std::size_t k = 0; k < kParamsPerVector; ++k) {
      const auto g = hn::LoadU(d, gamma + kParamsPerVector * j + k * N);
      v = kBeta ? hn::MulAdd(v, g, hn::LoadU(d, beta + kParamsPerVector * j + k * N)) : hn::Mul(v, g);
    }
    return v;
  };
  i = 0;
  if constexpr (kStream)  // scalar stores up to the vector alignment, as the scale ceiling does
    for (; i < n && reinterpret_cast<std::uintptr_t>(y + i) % (N * sizeof(float)) != 0; ++i) y[i] = scale * x[i];
  for (; i + N <= n && kParamsPerVector * (i + N) <= param_n; i += N) {
    if (next) __builtin_prefetch(next + i, 0, 1);  // the next row into L2, as the kernels' apply step does
    if constexpr (kStream)
      hn::Stream(value(i), d, y + i);
    else
      hn::StoreU(value(i), d, y + i);
  }
  for (; i < n; ++i) y[i] = scale * x[i];
  return sum;
}

// Rows [row_begin, row_end) of the row-phased ceiling, part `part` of `parts` of each row (a
// column split where there are fewer rows than threads). Row r is floats
// [r * total / rows, (r + 1) * total / rows) of x and y: the row's bytes read as floats (16-bit
// rows of odd length shift by half a float, the same traffic).
template <bool kStream, bool kBeta, std::size_t kParamsPerVector>
float PhasedRowsTyped(const PhasedRows& a, std::int64_t row_begin, std::int64_t row_end, std::size_t part,
                      std::size_t parts) {
  float sink = 0;
  const auto start = [&](std::int64_t r, std::size_t k) {
    const std::size_t row0 = a.total_floats * static_cast<std::size_t>(r) / static_cast<std::size_t>(a.rows);
    const std::size_t row1 = a.total_floats * static_cast<std::size_t>(r + 1) / static_cast<std::size_t>(a.rows);
    return row0 + (row1 - row0) * k / parts;
  };
  for (std::int64_t r = row_begin; r < row_end; ++r) {
    const std::size_t begin = start(r, part), end = part + 1 == parts ? start(r + 1, 0) : start(r, part + 1);
    const std::size_t offset = begin - start(r, 0);  // from the row's first float
    const std::size_t param_offset = std::min(kParamsPerVector * offset, a.param_floats);
    const float* next = r + 1 < row_end ? a.x + start(r + 1, part) : nullptr;
    sink += PhasedRowTyped<kStream, kBeta, kParamsPerVector>(a.x + begin, a.y + begin, end - begin,
                                                             a.gamma + param_offset, kBeta ? a.beta + param_offset : nullptr,
                                                             a.param_floats - param_offset, next);
  }
  if constexpr (kStream) hwy::FlushStream();
  return sink;
}

float PhasedRowsRange(const PhasedRows& a, std::int64_t row_begin, std::int64_t row_end, std::size_t part,
                      std::size_t parts) {
  const bool beta = a.beta != nullptr, two = a.params_per_vector == 2;
  if (a.nontemporal) {
    if (beta) return two ? PhasedRowsTyped<true, true, 2>(a, row_begin, row_end, part, parts)
                         : PhasedRowsTyped<true, true, 1>(a, row_begin, row_end, part, parts);
    return two ? PhasedRowsTyped<true, false, 2>(a, row_begin, row_end, part, parts)
               : PhasedRowsTyped<true, false, 1>(a, row_begin, row_end, part, parts);
  }
  if (beta) return two ? PhasedRowsTyped<false, true, 2>(a, row_begin, row_end, part, parts)
                       : PhasedRowsTyped<false, true, 1>(a, row_begin, row_end, part, parts);
  return two ? PhasedRowsTyped<false, false, 2>(a, row_begin, row_end, part, parts)
             : PhasedRowsTyped<false, false, 1>(a, row_begin, row_end, part, parts);
}

}  // namespace HWY_NAMESPACE
}  // namespace normbench::bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normbench::bench {
HWY_EXPORT(Scale);
HWY_EXPORT(Sum);
HWY_EXPORT(PhasedRowsRange);

float stream_scale(const float* src, float* dst, std::size_t n, const float* extra, std::size_t n_extra,
                   int threads, bool nontemporal) {
  const auto scale = HWY_DYNAMIC_DISPATCH(Scale);
  const float extra_sum = n_extra ? HWY_DYNAMIC_DISPATCH(Sum)(extra, n_extra) : 0.0f;
  const int t = static_cast<int>(std::min<std::size_t>(threads, std::max<std::size_t>(1, n / static_cast<std::size_t>(kMinElementsPerThread))));
  if (t <= 1) {
    scale(src, dst, n, nontemporal);
    return extra_sum;
  }
#pragma omp parallel num_threads(t)
  {
    const std::size_t id = omp_get_thread_num(), nt = omp_get_num_threads();
    const std::size_t begin = n * id / nt, end = n * (id + 1) / nt;
    scale(src + begin, dst + begin, end - begin, nontemporal);
  }
  return extra_sum;
}

float row_phased(const PhasedRows& a, int threads) {
  if (a.rows <= 0 || a.total_floats == 0) return 0;
  if (a.params_per_vector != 1 && a.params_per_vector != 2) throw Error("row_phased: 1 or 2 parameter vectors per vector");
  const auto range = HWY_DYNAMIC_DISPATCH(PhasedRowsRange);
  const int t = static_cast<int>(std::min<std::size_t>(
      threads, std::max<std::size_t>(1, a.total_floats / static_cast<std::size_t>(kMinElementsPerThread))));
  if (t <= 1) return range(a, 0, a.rows, 0, 1);
  float sink = 0;
#pragma omp parallel num_threads(t) reduction(+ : sink)
  {
    const auto id = static_cast<std::size_t>(omp_get_thread_num()), nt = static_cast<std::size_t>(omp_get_num_threads());
    const auto rows = static_cast<std::size_t>(a.rows);
    if (rows >= nt)  // whole rows per thread, as `threaded` splits them
      sink += range(a, static_cast<std::int64_t>(rows * id / nt), static_cast<std::int64_t>(rows * (id + 1) / nt), 0, 1);
    else  // a share of every row
      sink += range(a, 0, a.rows, id, nt);
  }
  return sink;
}
}  // namespace normbench::bench
#endif
