// The SIMD conversions the highway kernels use between f32 registers and bf16/f16 storage,
// exposed so tests can check them on every target (hwy::SetSupportedTargetsForTest picks it).
#pragma once

#include <cstddef>

#include "normbench/dtype.hpp"

namespace normbench {
// out[i] = in[i] rounded to nearest even in t (f32, bf16 or f16; throws Error for f64).
void simd_store_rounded(DType t, const float* in, void* out, std::size_t n);
// out[i] = in[i] widened exactly to f32 (in is f32, bf16 or f16; throws Error for f64).
void simd_load_widened(DType t, const void* in, float* out, std::size_t n);
}  // namespace normbench
