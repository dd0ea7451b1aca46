// Every registered implementation x norm x dtype (x every supported Highway target for SIMD
// families) against the long-double reference over the shape grid, with unaligned pointers and
// in place.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "peers.hpp"
#include "test_support.hpp"

namespace normbench::testing {
namespace {

struct KernelCase {
  const Implementation* impl;
  Norm norm;
  DType dtype;
  std::int64_t target;  // 0: the implementation's own choice (scalar code)
};

std::vector<KernelCase> all_cases() {
  std::vector<KernelCase> cases;
  peers::register_all();  // peers (oneDNN) are held to the same standard
  for (const Implementation& impl : registry())
    for (Norm n : impl.norms)
      for (DType t : impl.dtypes) {
        if (is_simd(impl))
          for (std::int64_t target : simd_targets()) cases.push_back({&impl, n, t, target});
        else
          cases.push_back({&impl, n, t, 0});
      }
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<KernelCase>& info) {
  const KernelCase& c = info.param;
  std::string name = fmt::format("{}_{}_{}", c.impl->name, norm_name(c.norm), dtype_name(c.dtype));
  if (c.target != 0) name = fmt::format("{}_{}", name, hwy::TargetName(c.target));
  return sanitize(name);
}

constexpr std::int64_t kCols[] = {1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 127, 768, 1000, 1025, 4096, 65537};
constexpr std::int64_t kRows[] = {1, 3, 64};

void PrintTo(const KernelCase& c, std::ostream* os) {
  *os << c.impl->name << "/" << norm_name(c.norm) << "/" << dtype_name(c.dtype);
  if (c.target != 0) *os << "/" << hwy::TargetName(c.target);
}

class KernelMatrix : public ::testing::TestWithParam<KernelCase> {};

TEST_P(KernelMatrix, MatchesReferenceOnShapeGridUnalignedAndInPlace) {
  const KernelCase& c = GetParam();
  ForcedTarget forced(c.target);
  std::uint64_t seed = 1;
  for (std::int64_t grid_rows : kRows) {
    // BatchNorm reads the grid as (N, C): training needs N >= 2 values per channel.
    const std::int64_t rows = c.norm == Norm::kBatchNorm ? std::max<std::int64_t>(grid_rows, 2) : grid_rows;
    for (std::int64_t cols : kCols) {
      const Problem p{c.norm, c.dtype, rows, cols, default_eps(c.norm)};
      // Cycle through the optional-parameter combinations across shapes.
      const int variant = static_cast<int>(seed % 4);
      Inputs in(p, variant != 1 && variant != 3, variant != 1 && variant != 2);
      fill_inputs(in, seed++);
      SCOPED_TRACE(fmt::format("{}x{} gamma={} beta={}", rows, cols, in.has_gamma, in.has_beta));
      const ReferenceResult ref = reference_forward(p, in.buffers(nullptr));

      Buffer y(static_cast<std::size_t>(rows * cols), dtype_size(c.dtype));
      std::vector<float> mean(units(p) + 1), rstd(units(p) + 1);  // +1: not 64-byte aligned
      const RunConfig cfg{c.impl->uses_threads ? 3 : 1};  // an uneven split for threaded kernels
      forward(*c.impl, p, in.buffers(y.data(), mean.data() + 1, rstd.data() + 1), cfg);
      if (check_against_reference(*c.impl, in, y.data(), mean.data() + 1, rstd.data() + 1, ref) > 0) return;

      // In place: same bits as out of place.
      Buffer inplace(static_cast<std::size_t>(rows * cols), dtype_size(c.dtype));
      std::memcpy(inplace.data(), in.x.data(), in.x.size_bytes());
      Buffers b = in.buffers(inplace.data());
      b.x = inplace.data();
      forward(*c.impl, p, b, cfg);
      ASSERT_EQ(0, std::memcmp(inplace.data(), y.data(), y.size_bytes())) << "in-place result differs";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllImplementations, KernelMatrix, ::testing::ValuesIn(all_cases()), case_name);

TEST(Registry, HasEveryFamilyForBothNormsAndAllDTypes) {
  for (std::string_view family : {"naive", "welford", "fused", "highway", "threaded"}) {
    bool found = false;
    for (const Implementation& impl : registry()) {
      if (impl.family != family) continue;
      found = true;
      for (Norm n : kAllNorms)
        for (DType t : kAllDTypes) EXPECT_TRUE(impl.supports(n, t)) << impl.name;
    }
    EXPECT_TRUE(found) << family;
  }
}

TEST(Registry, SimdTargetNameIsTheDispatchedTarget) {
  const Implementation& hw = find_implementation("highway");
  for (std::int64_t target : simd_targets()) {
    ForcedTarget forced(target);
    EXPECT_EQ(hw.target(), hwy::TargetName(target));
  }
}

}  // namespace
}  // namespace normbench::testing
