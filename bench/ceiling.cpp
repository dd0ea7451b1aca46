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

}  // namespace HWY_NAMESPACE
}  // namespace normbench::bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normbench::bench {
HWY_EXPORT(Scale);
HWY_EXPORT(Sum);

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
}  // namespace normbench::bench
#endif
