// Conversions: bf16/f16 rounding to nearest even at exact halfway points (scalar and the SIMD
// paths of every supported target), exact widening, and the ULP function.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "normbench/simd_convert.hpp"
#include "test_support.hpp"

namespace normbench::testing {
namespace {

// GCC's _Float16 conversions (libgcc's __truncsfhf2 / __extendhfsf2) are correctly rounded:
// an independent oracle for f16.
float oracle_f16_to_f32(std::uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<float>(h);
}
std::uint16_t oracle_f32_to_f16(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  std::uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

bool same_value(float a, float b) { return (std::isnan(a) && std::isnan(b)) || f32_bits(a) == f32_bits(b); }

// f32 values at and around every halfway point between consecutive 16-bit values.
// For bf16 the halfway point between patterns h and h+1 is the f32 with bits h<<16 | 0x8000.
std::vector<float> bf16_halfway_probes() {
  std::vector<float> v;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7FFF) >= 0x7F80) continue;  // Inf/NaN patterns have no halfway neighbour
    const std::uint32_t mid = (h << 16) | 0x8000u;
    v.push_back(f32_from_bits(mid));
    v.push_back(f32_from_bits(mid - 1));
    v.push_back(f32_from_bits(mid + 1));
  }
  return v;
}

std::uint16_t expected_bf16(float f) {  // from first principles, for probes built above
  const std::uint32_t u = f32_bits(f);
  const std::uint32_t low = u & 0xFFFFu, h = u >> 16;
  if (low < 0x8000u) return static_cast<std::uint16_t>(h);
  if (low > 0x8000u) return static_cast<std::uint16_t>(h + 1);
  return static_cast<std::uint16_t>((h & 1u) ? h + 1 : h);  // tie: even
}

TEST(Bf16, ScalarRoundsHalfwayPointsToEven) {
  for (float f : bf16_halfway_probes())
    ASSERT_EQ(bf16_from_f32(f).bits, expected_bf16(f)) << fmt::format("{:#010x}", f32_bits(f));
  EXPECT_EQ(bf16_from_f32(f32_from_bits(0x3F808000u)).bits, 0x3F80);  // 1 + 2^-8: tie down to even
  EXPECT_EQ(bf16_from_f32(f32_from_bits(0x3F818000u)).bits, 0x3F82);  // tie up to even
}

TEST(Bf16, SpecialValues) {
  EXPECT_TRUE(std::isnan(to_f32(bf16_from_f32(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(to_f32(bf16_from_f32(f32_from_bits(0x7F800001u)))));  // low-payload NaN stays NaN
  EXPECT_EQ(bf16_from_f32(std::numeric_limits<float>::infinity()).bits, 0x7F80);
  EXPECT_EQ(bf16_from_f32(std::numeric_limits<float>::max()).bits, 0x7F80);  // rounds up to Inf
  EXPECT_EQ(bf16_from_f32(-0.0f).bits, 0x8000);
  for (std::uint32_t h = 0; h < 0x10000; ++h) {  // widening is exact and inverts rounding
    if ((h & 0x7FFF) <= 0x7F80) {
      ASSERT_EQ(bf16_from_f32(to_f32(bf16{static_cast<std::uint16_t>(h)})).bits, h);
    }
  }
}

TEST(F16, ScalarWideningIsExactForAllPatterns) {
  for (std::uint32_t h = 0; h < 0x10000; ++h)
    ASSERT_TRUE(same_value(to_f32(f16{static_cast<std::uint16_t>(h)}), oracle_f16_to_f32(static_cast<std::uint16_t>(h))))
        << h;
}

std::vector<float> f16_halfway_probes() {
  std::vector<float> v;
  for (std::uint32_t h = 0; h < 0x7C00; ++h) {  // positive finite; the sign is symmetric below
    const double lo = oracle_f16_to_f32(static_cast<std::uint16_t>(h));
    const double hi = h + 1 == 0x7C00 ? 65536.0 : oracle_f16_to_f32(static_cast<std::uint16_t>(h + 1));
    const float mid = static_cast<float>((lo + hi) / 2);  // exact: 12 significant bits
    for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
      v.push_back(f);
      v.push_back(-f);
    }
  }
  for (float f : {0.0f, -0.0f, 1e-10f, 65504.0f, 65519.99f, 65520.0f, 1e6f, 5.9604645e-08f, 2.9802322e-08f})
    v.push_back(f);
  return v;
}

TEST(F16, ScalarRoundsHalfwayPointsToEven) {
  for (float f : f16_halfway_probes())
    ASSERT_EQ(f16_from_f32(f).bits, oracle_f32_to_f16(f)) << fmt::format("{:.10g}", f);
  EXPECT_EQ(f16_from_f32(std::numeric_limits<float>::infinity()).bits, 0x7C00);
  EXPECT_TRUE(std::isnan(to_f32(f16_from_f32(std::numeric_limits<float>::quiet_NaN()))));
}

// The SIMD conversions the highway kernels use, on every target this CPU supports.
TEST(SimdConversions, RoundToNearestEvenAndWidenExactlyOnEveryTarget) {
  const std::vector<float> bf_probes = bf16_halfway_probes();
  const std::vector<float> f16_probes = f16_halfway_probes();
  for (std::int64_t target : simd_targets())
    for (bool hardware_bf16 : bf16_rounding_settings()) {
      ForcedTarget forced(target);
      HardwareBf16Rounding rounding(hardware_bf16);
      SCOPED_TRACE(fmt::format("{}, AVX512-BF16 rounding {}", hwy::TargetName(target),
                               hardware_bf16 ? "allowed" : "off"));
      std::vector<bf16> bf(bf_probes.size());
      simd_store_rounded(DType::kBF16, bf_probes.data(), bf.data(), bf_probes.size());
      for (std::size_t i = 0; i < bf_probes.size(); ++i)
        ASSERT_EQ(bf[i].bits, expected_bf16(bf_probes[i])) << fmt::format("{:#010x}", f32_bits(bf_probes[i]));
      std::vector<f16> h(f16_probes.size());
      simd_store_rounded(DType::kF16, f16_probes.data(), h.data(), f16_probes.size());
      for (std::size_t i = 0; i < f16_probes.size(); ++i)
        ASSERT_EQ(h[i].bits, oracle_f32_to_f16(f16_probes[i])) << fmt::format("{:.10g}", f16_probes[i]);
      // Special values, repeated to fill whole vector pairs (the rounding of whole vectors).
      const float special_values[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                      std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                                      f32_from_bits(0x7F800001u), f32_from_bits(0xFFC12345u),
                                      std::numeric_limits<float>::max(), 1e30f, -0.0f};
      std::vector<float> specials;
      for (int k = 0; k < 16; ++k)
        specials.insert(specials.end(), std::begin(special_values), std::end(special_values));
      std::vector<f16> hs(std::size(specials));
      std::vector<bf16> bs(std::size(specials));
      simd_store_rounded(DType::kF16, specials.data(), hs.data(), hs.size());
      simd_store_rounded(DType::kBF16, specials.data(), bs.data(), bs.size());
      for (std::size_t i = 0; i < std::size(specials); ++i) {
        EXPECT_TRUE(same_value(to_f32(hs[i]), to_f32(f16_from_f32(specials[i])))) << i;
        EXPECT_EQ(bs[i].bits, bf16_from_f32(specials[i]).bits) << i;  // NaN: sign and payload kept, quieted
      }
      // Widening every pattern.
      std::vector<std::uint16_t> all(0x10000);
      for (std::uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
      std::vector<float> wide(all.size());
      simd_load_widened(DType::kF16, all.data(), wide.data(), all.size());
      for (std::uint32_t i = 0; i < all.size(); ++i)
        ASSERT_TRUE(same_value(wide[i], oracle_f16_to_f32(all[i]))) << "f16 pattern " << i;
      simd_load_widened(DType::kBF16, all.data(), wide.data(), all.size());
      for (std::uint32_t i = 0; i < all.size(); ++i)
        ASSERT_TRUE(same_value(wide[i], to_f32(bf16{all[i]}))) << "bf16 pattern " << i;
    }
}

// highway-f64's stores: f64 rounded once to bf16/f16 on every target. Probes lie a relative 2^-30
// off the halfway points, inside one f32 ulp, where rounding to f32 first would make a tie.
TEST(SimdConversions, RoundF64OnceOnEveryTarget) {
  std::vector<double> probes;
  const auto add_around = [&](float mid) {
    probes.push_back(mid);
    probes.push_back(static_cast<double>(mid) * (1 + 0x1p-30));
    probes.push_back(static_cast<double>(mid) * (1 - 0x1p-30));
  };
  for (std::uint32_t h = 0; h < 0x10000; ++h)
    if ((h & 0x7FFF) < 0x7F80) add_around(f32_from_bits((h << 16) | 0x8000u));  // bf16 halfway points
  for (float f : f16_halfway_probes()) add_around(f);
  const double specials[] = {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::max(),
                             3.4028235e38 * (1 + 1e-9), -1e-300, 4.9e-324, -0.0, 0x1p-126, 0x1p-126 * (1 - 0x1p-30)};
  for (int k = 0; k < 8; ++k) probes.insert(probes.end(), std::begin(specials), std::end(specials));
  for (std::int64_t target : simd_targets()) {
    ForcedTarget forced(target);
    SCOPED_TRACE(hwy::TargetName(target));
    std::vector<bf16> b(probes.size());
    std::vector<f16> h(probes.size());
    simd_store_rounded(DType::kBF16, probes.data(), b.data(), probes.size());
    simd_store_rounded(DType::kF16, probes.data(), h.data(), probes.size());
    for (std::size_t i = 0; i < probes.size(); ++i) {
      ASSERT_TRUE(same_value(to_f32(b[i]), to_f32(from_f64<bf16>(probes[i])))) << fmt::format("bf16 of {:a}", probes[i]);
      ASSERT_TRUE(same_value(to_f32(h[i]), to_f32(from_f64<f16>(probes[i])))) << fmt::format("f16 of {:a}", probes[i]);
    }
  }
}

TEST(RoundToDtype, SingleRoundingFromLongDouble) {
  // Just above a bf16 halfway point by less than an f32 ulp: rounding via f32 would tie to
  // even (down); single rounding must go up.
  const long double halfway = to_f32(bf16{0x3F80}) + std::ldexp(1.0L, -8);  // 1 + 2^-8
  EXPECT_EQ(round_to_dtype(DType::kBF16, halfway + std::ldexp(1.0L, -40)), 1.0L + std::ldexp(1.0L, -7));
  EXPECT_EQ(round_to_dtype(DType::kBF16, halfway), 1.0L);
  EXPECT_EQ(round_to_dtype(DType::kBF16, halfway - std::ldexp(1.0L, -40)), 1.0L);
  const long double f16_half = 1.0L + std::ldexp(1.0L, -11);
  EXPECT_EQ(round_to_dtype(DType::kF16, f16_half + std::ldexp(1.0L, -40)), 1.0L + std::ldexp(1.0L, -10));
  EXPECT_EQ(round_to_dtype(DType::kF16, f16_half), 1.0L);
  EXPECT_EQ(round_to_dtype(DType::kF16, 65519.0L), 65504.0L);
  EXPECT_TRUE(std::isinf(round_to_dtype(DType::kF16, 65520.0L)));
  EXPECT_EQ(round_to_dtype(DType::kF32, 1.0L + std::ldexp(1.0L, -24) + std::ldexp(1.0L, -60)),
            1.0L + std::ldexp(1.0L, -23));
  // Agrees with the f16 oracle on f32 inputs (where there is no double rounding).
  for (float f : f16_halfway_probes())
    ASSERT_EQ(round_to_dtype(DType::kF16, f), static_cast<long double>(oracle_f16_to_f32(oracle_f32_to_f16(f)))) << f;
}

TEST(Ulp, BinadeBoundariesZeroSubnormalsEachDType) {
  EXPECT_EQ(ulp_of(DType::kF32, 1.0L), std::ldexp(1.0L, -23));
  EXPECT_EQ(ulp_of(DType::kF32, std::nextafter(1.0f, 0.0f)), std::ldexp(1.0L, -24));
  EXPECT_EQ(ulp_of(DType::kF32, 2.0L), std::ldexp(1.0L, -22));
  EXPECT_EQ(ulp_of(DType::kF32, -2.0L), std::ldexp(1.0L, -22));
  EXPECT_EQ(ulp_of(DType::kF64, 1.0L), std::ldexp(1.0L, -52));
  EXPECT_EQ(ulp_of(DType::kBF16, 1.0L), std::ldexp(1.0L, -7));
  EXPECT_EQ(ulp_of(DType::kF16, 1.0L), std::ldexp(1.0L, -10));
  EXPECT_EQ(ulp_of(DType::kF16, 65504.0L), 32.0L);
  // zero and subnormals: the smallest subnormal spacing
  EXPECT_EQ(ulp_of(DType::kF32, 0.0L), std::ldexp(1.0L, -149));
  EXPECT_EQ(ulp_of(DType::kF32, std::ldexp(1.0L, -140)), std::ldexp(1.0L, -149));
  EXPECT_EQ(ulp_of(DType::kF32, std::ldexp(1.0L, -126)), std::ldexp(1.0L, -149));
  EXPECT_EQ(ulp_of(DType::kF64, 0.0L), std::ldexp(1.0L, -1074));
  EXPECT_EQ(ulp_of(DType::kBF16, 0.0L), std::ldexp(1.0L, -133));
  EXPECT_EQ(ulp_of(DType::kF16, 0.0L), std::ldexp(1.0L, -24));
  EXPECT_EQ(ulp_of(DType::kF16, std::ldexp(1.0L, -20)), std::ldexp(1.0L, -24));
  EXPECT_TRUE(std::isnan(ulp_of(DType::kF32, std::numeric_limits<long double>::infinity())));
  // The spacing is the gap to the next value, for every dtype at a few points.
  for (DType t : kAllDTypes)
    for (long double v : {1.0L, 3.0L, 0.1L, 1000.0L}) {
      const long double r = round_to_dtype(t, v);
      EXPECT_EQ(round_to_dtype(t, r + ulp_of(t, r)), r + ulp_of(t, r)) << dtype_name(t);
      EXPECT_EQ(round_to_dtype(t, r + ulp_of(t, r) * 0.25L), r) << dtype_name(t);
    }
}

}  // namespace
}  // namespace normbench::testing
