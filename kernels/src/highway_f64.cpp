// highway-f64: the accuracy-first Highway kernel. Statistics, centring and the apply step in f64
// lanes for every dtype (as gemma.cpp does), one rounding on output; the same row code as
// `highway` (highway_rows-inl.h) with C = f64. Its own translation unit so the build compiles it
// in parallel with highway.cpp.
#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "highway_f64.cpp"  // found through this directory on the include path
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "batchnorm.hpp"
#include "families.hpp"
#include "highway_ops-inl.h"
#include "highway_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace normbench {
namespace HWY_NAMESPACE {

// f64 data is highway's own f64 kernel (highway_f64_forward sends it there).
void ForwardRowsF64(const Problem& p, const Buffers& b, std::int64_t row_begin, std::int64_t row_end, bool stream) {
  switch (p.dtype) {
    case DType::kF32: return ForwardRowsTyped<float, double>(p, b, row_begin, row_end, stream);
    case DType::kBF16: return ForwardRowsTyped<bf16, double>(p, b, row_begin, row_end, stream);
    case DType::kF16: return ForwardRowsTyped<f16, double>(p, b, row_begin, row_end, stream);
    case DType::kF64: break;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace normbench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normbench {
HWY_EXPORT(ForwardRowsF64);

namespace detail {
void highway_f64_forward(const Problem& p, const Buffers& b, const RunConfig& cfg) {
  if (p.dtype == DType::kF64) return highway_forward(p, b, cfg);  // the same computation
  if (p.norm == Norm::kBatchNorm) return highway_batchnorm(p, b, streaming_stores(p, cfg), true, serial_for);
  HWY_DYNAMIC_DISPATCH(ForwardRowsF64)(p, b, 0, p.rows, streaming_stores(p, cfg));
}
}  // namespace detail
}  // namespace normbench
#endif
