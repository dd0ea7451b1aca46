// The SIMD conversions the highway kernels use between f32 registers and bf16/f16 storage,
// exposed so tests can check them on every target (hwy::SetSupportedTargetsForTest picks it).
#pragma once

#include <cstddef>

#include "normbench/dtype.hpp"

namespace normbench {
// out[i] = in[i] rounded to nearest even in t (f32, bf16 or f16; throws Error for f64).
void simd_store_rounded(DType t, const float* in, void* out, std::size_t n);
// out[i] = in[i] rounded once to nearest even in t (f32, bf16 or f16), as highway-f64 stores.
void simd_store_rounded(DType t, const double* in, void* out, std::size_t n);
// out[i] = in[i] widened exactly to f32 (in is f32, bf16 or f16; throws Error for f64).
void simd_load_widened(DType t, const void* in, float* out, std::size_t n);

// Where the CPU has AVX512-BF16 (Zen 4, Sapphire Rapids) and the AVX-512 target runs, the highway
// kernels round f32 to bf16 with its conversion instruction instead of integer code; the results
// are bitwise the same (tests check both ways). Allowed by default; returns the previous setting.
bool set_hardware_bf16_rounding(bool allowed);
// Whether the CPU has the instruction (whether the setting above can take effect).
bool hardware_bf16_rounding_available();
}  // namespace normbench
