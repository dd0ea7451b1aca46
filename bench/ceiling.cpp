#include "ceiling.hpp"

#include <algorithm>
#include <cstdint>

#include <omp.h>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ceiling.cpp"  // this directory is on the include path
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace normbench::bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void Scale(const float* HWY_RESTRICT src, float* HWY_RESTRICT dst, std::size_t n) {
  const hn::ScalableTag<float> d;
  const std::size_t N = hn::Lanes(d);
  const auto a = hn::Set(d, 1.0001f);
  std::size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    hn::StoreU(hn::Mul(a, hn::LoadU(d, src + i)), d, dst + i);
    hn::StoreU(hn::Mul(a, hn::LoadU(d, src + i + N)), d, dst + i + N);
    hn::StoreU(hn::Mul(a, hn::LoadU(d, src + i + 2 * N)), d, dst + i + 2 * N);
    hn::StoreU(hn::Mul(a, hn::LoadU(d, src + i + 3 * N)), d, dst + i + 3 * N);
  }
  for (; i < n; ++i) dst[i] = 1.0001f * src[i];
}

float Sum(const float* HWY_RESTRICT p, std::size_t n) {
  const hn::ScalableTag<float> d;
  const std::size_t N = hn::Lanes(d);
  auto acc = hn::Zero(d);
  std::size_t i = 0;
  for (; i + N <= n; i += N) acc = hn::Add(acc, hn::LoadU(d, p + i));
  float s = hn::GetLane(hn::SumOfLanes(d, acc));
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

namespace {
constexpr std::size_t kMinFloatsPerThread = 32 * 1024;  // as the threaded kernel
}

float stream_scale(const float* src, float* dst, std::size_t n, const float* extra, std::size_t n_extra,
                   int threads) {
  const auto scale = HWY_DYNAMIC_DISPATCH(Scale);
  const float extra_sum = n_extra ? HWY_DYNAMIC_DISPATCH(Sum)(extra, n_extra) : 0.0f;
  const int t = static_cast<int>(std::min<std::size_t>(threads, std::max<std::size_t>(1, n / kMinFloatsPerThread)));
  if (t <= 1) {
    scale(src, dst, n);
    return extra_sum;
  }
#pragma omp parallel num_threads(t)
  {
    const std::size_t id = omp_get_thread_num(), nt = omp_get_num_threads();
    const std::size_t begin = n * id / nt, end = n * (id + 1) / nt;
    scale(src + begin, dst + begin, end - begin);
  }
  return extra_sum;
}
}  // namespace normbench::bench
#endif
