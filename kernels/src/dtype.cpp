#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "normbench/dtype.hpp"
#include "normbench/error.hpp"

namespace normbench {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF64: return "f64";
    case DType::kBF16: return "bf16";
    case DType::kF16: return "f16";
  }
  return "invalid";
}

DType parse_dtype(std::string_view name) {
  for (DType t : kAllDTypes)
    if (dtype_name(t) == name) return t;
  throw Error(fmt::format("unknown dtype '{}' (expected f32, f64, bf16 or f16)", name));
}

void throw_invalid_dtype(DType t) { throw Error(fmt::format("invalid dtype value {}", static_cast<int>(t))); }

namespace {
struct Format {
  int precision;  // significand bits including the implicit bit
  int emin;       // exponent of the smallest normal number
};
Format format_of(DType t) {
  switch (t) {
    case DType::kF32: return {24, -126};
    case DType::kF64: return {53, -1022};
    case DType::kBF16: return {8, -126};
    case DType::kF16: return {11, -14};
  }
  throw Error(fmt::format("invalid dtype value {}", static_cast<int>(t)));
}

// Sign-magnitude neighbour of a 16-bit float pattern, one step up (+1) or down (-1) in value.
std::uint16_t step16(std::uint16_t bits, int dir) {
  const bool neg = bits & 0x8000u;
  const std::uint16_t mag = bits & 0x7FFFu;
  if (mag == 0) return dir > 0 ? 0x0001 : 0x8001;  // from +-0 to the smallest subnormal
  const bool away_from_zero = (dir > 0) != neg;
  return static_cast<std::uint16_t>(away_from_zero ? bits + 1 : bits - 1);
}

// Single correct rounding of a long double into a 16-bit format. Going through f32 first can
// double-round, but only onto a neighbour of the right answer; pick the nearer of the two.
template <class T>
long double round16(long double v, std::uint16_t max_finite_bits) {
  if (std::isnan(v) || std::isinf(v)) return static_cast<long double>(to_f32(from_f32<T>(static_cast<float>(v))));
  const T max_finite{max_finite_bits};
  const long double maxv = to_f32(max_finite);
  const long double half_ulp_max = ulp_of(std::is_same_v<T, bf16> ? DType::kBF16 : DType::kF16, maxv) / 2;
  if (std::fabs(v) >= maxv + half_ulp_max)  // tie at the top rounds to Inf (max has odd significand)
    return std::copysign(std::numeric_limits<long double>::infinity(), v);
  T h = from_f32<T>(static_cast<float>(v));
  if (std::isinf(to_f32(h))) h = T{static_cast<std::uint16_t>(h.bits - 1)};  // back to max finite
  const long double hv = to_f32(h);
  if (hv == v) return hv;
  const T other{step16(h.bits, v > hv ? +1 : -1)};
  const long double ov = to_f32(other);
  const long double dh = std::fabs(v - hv), dother = std::fabs(v - ov);
  if (dother < dh) return ov;
  if (dh < dother) return hv;
  return (h.bits & 1u) ? ov : hv;  // tie: even significand
}
}  // namespace

double unit_roundoff(DType t) { return std::ldexp(1.0, -format_of(t).precision); }

long double ulp_of(DType t, long double v) {
  if (!std::isfinite(v)) return std::numeric_limits<long double>::quiet_NaN();
  const Format f = format_of(t);
  int e = (v == 0) ? f.emin : std::ilogb(v);
  if (e < f.emin) e = f.emin;
  return std::ldexp(1.0L, e - f.precision + 1);
}

long double round_to_dtype(DType t, long double v) {
  switch (t) {
    case DType::kF32: return static_cast<float>(v);   // x87 -> f32: one rounding, to nearest even
    case DType::kF64: return static_cast<double>(v);
    case DType::kBF16: return round16<bf16>(v, 0x7F7F);
    case DType::kF16: return round16<f16>(v, 0x7BFF);
  }
  throw Error(fmt::format("invalid dtype value {}", static_cast<int>(t)));
}

long double load_as_long_double(DType t, const void* buf, std::size_t i) {
  switch (t) {
    case DType::kF32: return static_cast<const float*>(buf)[i];
    case DType::kF64: return static_cast<const double*>(buf)[i];
    case DType::kBF16: return to_f32(static_cast<const bf16*>(buf)[i]);
    case DType::kF16: return to_f32(static_cast<const f16*>(buf)[i]);
  }
  throw Error(fmt::format("invalid dtype value {}", static_cast<int>(t)));
}

void store_rounded(DType t, void* buf, std::size_t i, long double v) {
  const long double r = round_to_dtype(t, v);  // exact in t, so the casts below are exact
  switch (t) {
    case DType::kF32: static_cast<float*>(buf)[i] = static_cast<float>(r); return;
    case DType::kF64: static_cast<double*>(buf)[i] = static_cast<double>(r); return;
    case DType::kBF16: static_cast<bf16*>(buf)[i] = bf16_from_f32(static_cast<float>(r)); return;
    case DType::kF16: static_cast<f16*>(buf)[i] = f16_from_f32(static_cast<float>(r)); return;
  }
  throw Error(fmt::format("invalid dtype value {}", static_cast<int>(t)));
}

}  // namespace normbench
