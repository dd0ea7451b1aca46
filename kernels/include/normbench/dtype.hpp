// Storage types and correctly rounded conversions for normbench.
//
// bf16 and f16 are plain 16-bit storage; every kernel widens them to f32 exactly and rounds
// results back to nearest-even. Highway 1.0.3's DemoteTo(bf16)/BF16FromF32 truncate, and its
// emulated (non-F16C) f16 conversions truncate and mishandle Inf/NaN, so the rounding steps
// here are our own and the tests check them against exact arithmetic.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace normbench {

enum class DType : std::uint8_t { kF32, kF64, kBF16, kF16 };
inline constexpr DType kAllDTypes[] = {DType::kF32, DType::kF64, DType::kBF16, DType::kF16};

struct bf16 {
  std::uint16_t bits;
};
struct f16 {
  std::uint16_t bits;
};

// "f32", "f64", "bf16", "f16"; "invalid" for a value outside the enum.
std::string_view dtype_name(DType t);
// Parses a name produced by dtype_name; throws normbench::Error otherwise.
DType parse_dtype(std::string_view name);
[[noreturn]] void throw_invalid_dtype(DType t);
// Bytes per element of x/y. Inline: the kernels ask it on every call, and a 1x768 row takes ~80 ns.
inline std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF64: return 8;
    case DType::kBF16:
    case DType::kF16: return 2;
  }
  throw_invalid_dtype(t);
}
// Unit roundoff u = 2^-p of the dtype (p = significand bits incl. the implicit one).
double unit_roundoff(DType t);

inline std::uint32_t f32_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float f32_from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline float to_f32(bf16 v) { return f32_from_bits(std::uint32_t{v.bits} << 16); }

// Round-to-nearest-even; NaN stays NaN (quieted), Inf stays Inf, overflow rounds to Inf.
inline bf16 bf16_from_f32(float f) {
  const std::uint32_t u = f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return bf16{static_cast<std::uint16_t>((u >> 16) | 0x40u)};
  const std::uint32_t lsb = (u >> 16) & 1u;
  return bf16{static_cast<std::uint16_t>((u + 0x7FFFu + lsb) >> 16)};
}

// Exact widening, including subnormals, Inf and NaN (F. Giesen's half_to_float).
inline float to_f32(f16 h) {
  const std::uint32_t shifted_exp = 0x7C00u << 13;
  std::uint32_t o = (std::uint32_t{h.bits} & 0x7FFFu) << 13;
  const std::uint32_t exp = shifted_exp & o;
  o += (127u - 15u) << 23;
  if (exp == shifted_exp) {
    o += (128u - 16u) << 23;  // Inf/NaN
  } else if (exp == 0) {
    o += 1u << 23;  // zero/subnormal: renormalize through the FPU (exact)
    o = f32_bits(f32_from_bits(o) - f32_from_bits(113u << 23));
  }
  o |= (std::uint32_t{h.bits} & 0x8000u) << 16;
  return f32_from_bits(o);
}

// Round-to-nearest-even from f32 (F. Giesen's float_to_half_fast3_rtne); NaN -> quiet NaN.
inline f16 f16_from_f32(float f) {
  std::uint32_t u = f32_bits(f);
  const std::uint32_t sign = u & 0x80000000u;
  u ^= sign;
  std::uint32_t o;
  if (u >= (127u + 16u) << 23) {  // >= 65536 (overflow), Inf or NaN
    o = (u > 0x7F800000u) ? 0x7E00u : 0x7C00u;
  } else if (u < (113u << 23)) {  // result is subnormal or zero: let the FPU round
    const std::uint32_t denorm_magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    o = f32_bits(f32_from_bits(u) + f32_from_bits(denorm_magic)) - denorm_magic;
  } else {
    const std::uint32_t mant_odd = (u >> 13) & 1u;
    u += ((15u - 127u) << 23) + 0xFFFu;
    u += mant_odd;
    o = u >> 13;
  }
  return f16{static_cast<std::uint16_t>(o | (sign >> 16))};
}

// Exact widening to the compute type: f64 stays f64, the other dtypes become f32.
inline float widen(float v) { return v; }
inline double widen(double v) { return v; }
inline float widen(bf16 v) { return to_f32(v); }
inline float widen(f16 v) { return to_f32(v); }

// Narrowing f64 -> f32 with round-to-odd: truncate toward zero, then set the lowest bit if
// anything was lost. Rounding that result to nearest even in a format with at least two fewer
// significand bits (bf16: 8, f16: 11, vs 24) equals one correct rounding of the f64 value.
inline float f32_round_to_odd(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d || d != d) return f;
  if ((f < 0 ? -static_cast<double>(f) : static_cast<double>(f)) > (d < 0 ? -d : d))
    f = f32_from_bits(f32_bits(f) - 1u);  // one step toward zero (sign-magnitude)
  return f32_from_bits(f32_bits(f) | 1u);
}

// Rounding from f32 to a storage type, to nearest even.
template <class T>
T from_f32(float v);
template <>
inline float from_f32<float>(float v) { return v; }
template <>
inline bf16 from_f32<bf16>(float v) { return bf16_from_f32(v); }
template <>
inline f16 from_f32<f16>(float v) { return f16_from_f32(v); }

// Rounding from f64 to a storage type: one correct rounding to nearest even.
template <class T>
T from_f64(double v);
template <>
inline float from_f64<float>(double v) { return static_cast<float>(v); }
template <>
inline double from_f64<double>(double v) { return v; }
template <>
inline bf16 from_f64<bf16>(double v) { return bf16_from_f32(f32_round_to_odd(v)); }
template <>
inline f16 from_f64<f16>(double v) { return f16_from_f32(f32_round_to_odd(v)); }

// Reads element i of a buffer of dtype t, exactly, as long double.
long double load_as_long_double(DType t, const void* buf, std::size_t i);
// Writes v to element i, correctly rounded to nearest-even in dtype t (single rounding).
void store_rounded(DType t, void* buf, std::size_t i, long double v);
// Correct rounding of v to dtype t, returned exactly as long double.
long double round_to_dtype(DType t, long double v);
// Spacing of dtype t at |v|: 2^(e-p+1) for |v| in [2^e, 2^(e+1)), the smallest subnormal
// spacing below the normal range; ulp(0) is that smallest spacing; NaN for non-finite v.
long double ulp_of(DType t, long double v);

}  // namespace normbench
