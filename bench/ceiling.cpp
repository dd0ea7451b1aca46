#include "ceiling.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>

#include <fmt/format.h>

#include "normbench/normbench.hpp"
#include "normbench/thread_team.hpp"

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

// The row-phased ceiling (see ceiling.hpp) of R rows at once (1, or a pair read and written
// interleaved, as the kernels take short rows): a read of the whole rows into a sum each, then a
// second read of them with gamma [and beta] (loaded once for the R rows) and the write of y, each
// row scaled by a factor that depends on its sum, so that no store of a row can start before its
// read has finished. n: the floats of every row (a pair's shorter row; the longer one's last
// float is finished alone). kParamsPerVector: parameter vectors per vector of x (2 when x holds
// 16-bit values and the parameters f32). param_n: the floats of gamma (and of beta) from the
// rows' first column on, which bound the vector loop. next: the R rows after these (contiguous),
// prefetched into L2 during the second read, and during the first with prefetch_in_read.
// kArithmetic (f32 rows, gamma and beta): LayerNorm's arithmetic too (PhasedRows::layernorm_arithmetic).
template <std::size_t R, bool kStream, bool kBeta, std::size_t kParamsPerVector, bool kArithmetic = false>
HWY_INLINE float PhasedRowsOf(const float* const* x, float* const* y, std::size_t n, const std::size_t* row_n,
                              const float* HWY_RESTRICT gamma, const float* HWY_RESTRICT beta, std::size_t param_n,
                              const float* next, bool prefetch_in_read) {
  const hn::ScalableTag<float> d;
  const std::size_t N = hn::Lanes(d);
  static_assert(!kArithmetic || (kBeta && kParamsPerVector == 1));
  hn::Vec<decltype(d)> a[R][4], q[R][4], shift[R];
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t j = 0; j < 4; ++j) a[r][j] = q[r][j] = hn::Zero(d);
    shift[r] = hn::Set(d, kArithmetic && row_n[r] ? x[r][0] : 0.0f);
  }
  // One value of the read: its sum, or LayerNorm's centred sums (a subtraction, an addition, an FMA).
  const auto read = [&](std::size_t r, std::size_t j, hn::Vec<decltype(d)> v) HWY_ATTR __attribute__((always_inline)) {
    if constexpr (kArithmetic) {
      v = hn::Sub(v, shift[r]);
      q[r][j] = hn::MulAdd(v, v, q[r][j]);
    }
    a[r][j] = hn::Add(a[r][j], v);
  };
  std::size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N)
    for (std::size_t r = 0; r < R; ++r) {
      if (prefetch_in_read && next)  // one line of the next rows per 64 bytes read
        for (std::size_t j = 0; j < 4 * N; j += 64 / sizeof(float)) __builtin_prefetch(next + r * n + i + j, 0, 1);
      for (std::size_t j = 0; j < 4; ++j) read(r, j, hn::LoadU(d, x[r] + i + j * N));
    }
  for (; i + N <= n; i += N)
    for (std::size_t r = 0; r < R; ++r) read(r, 0, hn::LoadU(d, x[r] + i));
  const auto total = [&](const hn::Vec<decltype(d)>* acc) HWY_ATTR __attribute__((always_inline)) {
    return hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(acc[0], acc[1]), hn::Add(acc[2], acc[3]))));
  };
  float sum[R], scale[R], mean[R];
  hn::Vec<decltype(d)> s[R], m[R];
  for (std::size_t r = 0; r < R; ++r) {
    sum[r] = total(a[r]);
    mean[r] = 0.0f;
    if constexpr (kArithmetic) {  // mean, variance and 1/sqrt(var + eps) from the centred sums
      float squares = total(q[r]);
      const float x0 = hn::GetLane(shift[r]);
      for (std::size_t k = i; k < row_n[r]; ++k) {
        const float dev = x[r][k] - x0;
        sum[r] += dev;
        squares += dev * dev;
      }
      const float inv_n = 1.0f / static_cast<float>(row_n[r]);
      mean[r] = x0 + sum[r] * inv_n;
      const float var = std::max(squares - sum[r] * sum[r] * inv_n, 0.0f) * inv_n;
      scale[r] = 1.0f / std::sqrt(var + kLayerNormArithmeticEps);
    } else {
      for (std::size_t k = i; k < row_n[r]; ++k) sum[r] += x[r][k];
      // 0 * sum is not folded (sum may be Inf or NaN): the scale waits on the read.
      scale[r] = 1.0001f + 0.0f * sum[r];
    }
    s[r] = hn::Set(d, scale[r]);
    m[r] = hn::Set(d, mean[r]);
  }
  // A value written by scalar code: LayerNorm's (arithmetic) or the scaled x.
  const auto scalar = [&](std::size_t r, std::size_t k) {
    if constexpr (kArithmetic) return std::fma((x[r][k] - mean[r]) * scale[r], gamma[k], beta[k]);
    return scale[r] * x[r][k];
  };
  i = 0;
  if constexpr (kStream)  // scalar stores up to the vector alignment (the caller gives a pair the same one)
    for (; i < n && reinterpret_cast<std::uintptr_t>(y[0] + i) % (N * sizeof(float)) != 0; ++i)
      for (std::size_t r = 0; r < R; ++r) y[r][i] = scalar(r, i);
  for (; i + N <= n && kParamsPerVector * (i + N) <= param_n; i += N) {
    hn::Vec<decltype(d)> v[R];
    for (std::size_t r = 0; r < R; ++r) {
      if (next) __builtin_prefetch(next + r * n + i, 0, 1);  // the next rows into L2, as the kernels' apply step does
      const auto xv = hn::LoadU(d, x[r] + i);
      v[r] = hn::Mul(s[r], kArithmetic ? hn::Sub(xv, m[r]) : xv);
    }
    for (std::size_t k = 0; k < kParamsPerVector; ++k) {
      const auto g = hn::LoadU(d, gamma + kParamsPerVector * i + k * N);
      const auto b = kBeta ? hn::LoadU(d, beta + kParamsPerVector * i + k * N) : g;
      for (std::size_t r = 0; r < R; ++r) v[r] = kBeta ? hn::MulAdd(v[r], g, b) : hn::Mul(v[r], g);
    }
    for (std::size_t r = 0; r < R; ++r) {
      if constexpr (kStream)
        hn::Stream(v[r], d, y[r] + i);
      else
        hn::StoreU(v[r], d, y[r] + i);
    }
  }
  float sink = 0;
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t k = i; k < row_n[r]; ++k) y[r][k] = scalar(r, k);
    sink += sum[r];
  }
  return sink;
}

// Rows [row_begin, row_end) of the row-phased ceiling, part `part` of `parts` of each row (a
// column split where there are fewer rows than threads). Row r is floats
// [r * total / rows, (r + 1) * total / rows) of x and y: the row's bytes read as floats (16-bit
// rows of odd length shift by half a float, the same traffic). Whole rows go in pairs where
// a.pairs says so (and non-temporal stores find both rows at the same alignment).
template <bool kStream, bool kBeta, std::size_t kParamsPerVector, bool kArithmetic = false>
float PhasedRowsTyped(const PhasedRows& a, std::int64_t row_begin, std::int64_t row_end, std::size_t part,
                      std::size_t parts) {
  const hn::ScalableTag<float> d;
  const std::size_t vector_bytes = hn::Lanes(d) * sizeof(float);
  float sink = 0;
  const auto start = [&](std::int64_t r, std::size_t k) {
    const std::size_t row0 = a.total_floats * static_cast<std::size_t>(r) / static_cast<std::size_t>(a.rows);
    const std::size_t row1 = a.total_floats * static_cast<std::size_t>(r + 1) / static_cast<std::size_t>(a.rows);
    return row0 + (row1 - row0) * k / parts;
  };
  std::int64_t r = row_begin;
  if (a.pairs && parts == 1)
    for (; r + 2 <= row_end; r += 2) {
      const std::size_t b0 = start(r, 0), b1 = start(r + 1, 0), e1 = start(r + 2, 0);
      if (kStream && (b1 - b0) * sizeof(float) % vector_bytes != 0) break;  // rows at different alignments
      const float* x[2] = {a.x + b0, a.x + b1};
      float* y[2] = {a.y + b0, a.y + b1};
      const std::size_t row_n[2] = {b1 - b0, e1 - b1};
      const float* next = r + 4 <= row_end ? a.x + e1 : nullptr;
      sink += PhasedRowsOf<2, kStream, kBeta, kParamsPerVector, kArithmetic>(
          x, y, std::min(row_n[0], row_n[1]), row_n, a.gamma, a.beta, a.param_floats, next, a.prefetch_in_read);
    }
  for (; r < row_end; ++r) {
    const std::size_t begin = start(r, part), end = part + 1 == parts ? start(r + 1, 0) : start(r, part + 1);
    const std::size_t offset = begin - start(r, 0);  // from the row's first float
    const std::size_t param_offset = std::min(kParamsPerVector * offset, a.param_floats);
    const float* x[1] = {a.x + begin};
    float* y[1] = {a.y + begin};
    const std::size_t row_n[1] = {end - begin};
    const float* next = r + 1 < row_end ? a.x + start(r + 1, part) : nullptr;
    sink += PhasedRowsOf<1, kStream, kBeta, kParamsPerVector, kArithmetic>(
        x, y, end - begin, row_n, a.gamma + param_offset, kBeta ? a.beta + param_offset : nullptr,
        a.param_floats - param_offset, next, a.prefetch_in_read);
  }
  if constexpr (kStream) hwy::FlushStream();
  return sink;
}

float PhasedRowsRange(const PhasedRows& a, std::int64_t row_begin, std::int64_t row_end, std::size_t part,
                      std::size_t parts) {
  const bool beta = a.beta != nullptr, two = a.params_per_vector == 2;
  if (a.layernorm_arithmetic)  // (row_phased checked: gamma and beta, one parameter vector per vector)
    return a.nontemporal ? PhasedRowsTyped<true, true, 1, true>(a, row_begin, row_end, part, parts)
                         : PhasedRowsTyped<false, true, 1, true>(a, row_begin, row_end, part, parts);
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

namespace {
// Threads a ceiling of n floats runs on: at most `threads`, at least kMinElementsPerThread each
// (the threaded kernel's policy).
int ceiling_threads(std::size_t n, int threads) {
  return static_cast<int>(std::min<std::size_t>(
      threads, std::max<std::size_t>(1, n / static_cast<std::size_t>(kMinElementsPerThread))));
}

// Runs part(id, nt) on `threads` threads of the team and returns the sum of what each returned,
// in thread order. The partial sums sit on the stack: a heap allocation would be part of the time.
template <class Part>
float sum_on_team(int threads, const Part& part) {
  std::array<float, kMaxThreads> partial;
  int used = 1;
  run_on_team(threads, [&](const int id, const int nt) {
    partial[static_cast<std::size_t>(id)] = part(static_cast<std::size_t>(id), static_cast<std::size_t>(nt));
    if (id == 0) used = nt;
  });
  return std::accumulate(partial.begin(), partial.begin() + used, 0.0f);
}
}  // namespace

float stream_scale(const float* src, float* dst, std::size_t n, const float* extra, std::size_t n_extra,
                   int threads, bool nontemporal) {
  const auto scale = HWY_DYNAMIC_DISPATCH(Scale);
  const auto sum = HWY_DYNAMIC_DISPATCH(Sum);
  const int t = ceiling_threads(n, threads);
  if (t <= 1) {
    const float extra_sum = n_extra ? sum(extra, n_extra) : 0.0f;
    scale(src, dst, n, nontemporal);
    return extra_sum;
  }
  // Each thread reads its share of `extra` too, as `threaded` reads the gamma/beta of its share of
  // a long row. Read by one thread ahead of the parallel part, 1x33554432's 256 MiB of gamma and
  // beta held its 16-thread ceiling (16-core Xeon) at 24 GB/s, under the kernels' 89 GB/s.
  return sum_on_team(t, [&](const std::size_t id, const std::size_t nt) {
    const std::size_t e0 = n_extra * id / nt, e1 = n_extra * (id + 1) / nt;
    const float extra_sum = e1 > e0 ? sum(extra + e0, e1 - e0) : 0.0f;
    const std::size_t begin = n * id / nt, end = n * (id + 1) / nt;
    scale(src + begin, dst + begin, end - begin, nontemporal);
    return extra_sum;
  });
}

float row_phased(const PhasedRows& a, int threads) {
  if (a.rows <= 0 || a.total_floats == 0) return 0;
  if (a.params_per_vector != 1 && a.params_per_vector != 2) throw Error("row_phased: 1 or 2 parameter vectors per vector");
  const auto range = HWY_DYNAMIC_DISPATCH(PhasedRowsRange);
  const int t = ceiling_threads(a.total_floats, threads);
  if (a.layernorm_arithmetic) {
    if (!a.beta || a.params_per_vector != 1)
      throw Error("row_phased: LayerNorm's arithmetic needs f32 rows with gamma and beta");
    if (a.rows < t)  // a share of a row is not a LayerNorm of it
      throw Error(
          fmt::format("row_phased: LayerNorm's arithmetic takes whole rows ({} rows on {} threads)", a.rows, t));
  }
  if (t <= 1) return range(a, 0, a.rows, 0, 1);
  return sum_on_team(t, [&](const std::size_t id, const std::size_t nt) {
    const auto rows = static_cast<std::size_t>(a.rows);
    if (rows >= nt)  // whole rows per thread, as `threaded` splits them
      return range(a, static_cast<std::int64_t>(rows * id / nt), static_cast<std::int64_t>(rows * (id + 1) / nt), 0, 1);
    return range(a, 0, a.rows, id, nt);  // a share of every row
  });
}
}  // namespace normbench::bench
#endif
