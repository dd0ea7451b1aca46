// GroupNorm (torch.nn.GroupNorm over (N, C, HW)) in every family and dtype against the
// long-double reference; its identities (groups = C is InstanceNorm, groups = 1 is LayerNorm over
// C*HW with per-channel affine) bit for bit within each family; threaded == highway; bad input.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "test_support.hpp"

namespace normbench::testing {
namespace {

struct Geometry {
  std::int64_t n, c, hw, groups;
};

// Channel counts that are not a multiple of any vector width, spatial sizes with tails, one group
// longer than a statistics chunk (32K elements), InstanceNorm and one group.
constexpr Geometry kGeometries[] = {{2, 6, 5, 3},  {3, 64, 49, 32}, {1, 8, 1, 4},    {2, 12, 17, 12},
                                    {2, 12, 17, 1}, {1, 4, 40000, 2}, {5, 3, 33, 3}, {2, 96, 7, 32}};

Problem groupnorm(DType t, const Geometry& g) {
  Problem p{Norm::kGroupNorm, t, g.n, g.c * g.hw, 1e-5};
  p.channels = g.c;
  p.groups = g.groups;
  return p;
}

// Per-channel parameters, as GroupNorm has them.
struct GroupInputs {
  Problem problem;
  Buffer x, gamma, beta;
  explicit GroupInputs(const Problem& p, std::uint64_t seed, double offset = 0.5)
      : problem(p),
        x(static_cast<std::size_t>(p.rows * p.cols), dtype_size(p.dtype)),
        gamma(static_cast<std::size_t>(p.channels), dtype_size(param_dtype(p.dtype))),
        beta(static_cast<std::size_t>(p.channels), dtype_size(param_dtype(p.dtype))) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> unit(-0.5, 0.5);
    for (std::size_t i = 0; i < static_cast<std::size_t>(p.rows * p.cols); ++i)
      store_rounded(p.dtype, x.data(), i, offset + normal(rng));
    for (std::size_t i = 0; i < static_cast<std::size_t>(p.channels); ++i) {
      store_rounded(param_dtype(p.dtype), gamma.data(), i, 1.0 + unit(rng));
      store_rounded(param_dtype(p.dtype), beta.data(), i, unit(rng));
    }
  }
  Buffers buffers(void* y, float* mean = nullptr, float* rstd = nullptr) const {
    return Buffers{x.data(), y, gamma.data(), beta.data(), mean, rstd};
  }
};

std::vector<std::int64_t> targets_of(const Implementation& impl) {
  return is_simd(impl) ? simd_targets() : std::vector<std::int64_t>{0};
}

class GroupNormMatrix : public ::testing::TestWithParam<std::pair<const Implementation*, DType>> {};

std::vector<std::pair<const Implementation*, DType>> groupnorm_cases() {
  std::vector<std::pair<const Implementation*, DType>> v;
  for (const Implementation& impl : registry())
    for (DType t : kAllDTypes)
      if (impl.supports(Norm::kGroupNorm, t)) v.push_back({&impl, t});
  return v;
}

// y against the reference with test_support's first-order bound, per unit (sample, group), and
// the per-unit mean/rstd outputs.
TEST_P(GroupNormMatrix, MatchesReference) {
  const auto [impl, t] = GetParam();
  const long double u = accumulator_unit_roundoff(*impl, t);
  const DType pt = param_dtype(t);
  for (std::int64_t target : targets_of(*impl)) {
    ForcedTarget forced(target);
    std::uint64_t seed = 1;
    for (const Geometry& geo : kGeometries) {
      SCOPED_TRACE(fmt::format("{} N={} C={} HW={} G={}", target ? hwy::TargetName(target) : "scalar", geo.n, geo.c,
                               geo.hw, geo.groups));
      const Problem p = groupnorm(t, geo);
      const GroupInputs in(p, seed++);
      const auto count = static_cast<std::size_t>(p.rows * p.cols);
      Buffer y(count, dtype_size(t));
      std::vector<float> mean(units(p)), rstd(units(p));
      forward(*impl, p, in.buffers(y.data(), mean.data(), rstd.data()), RunConfig{impl->uses_threads ? 3 : 1});
      const ReferenceResult ref = reference_forward(p, in.buffers(nullptr));
      ASSERT_EQ(ref.mean.size(), static_cast<std::size_t>(geo.n * geo.groups));
      const std::int64_t len = stat_cols(p);
      int failures = 0;
      for (std::int64_t unit = 0; unit < units(p); ++unit) {
        long double mean_abs = 0;
        for (std::int64_t i = 0; i < len; ++i) mean_abs += std::fabs(load_as_long_double(t, in.x.data(), unit * len + i));
        mean_abs /= len;
        RowBound rb{u, static_cast<long double>(len), 0, len * u};
        if (ref.var[unit] > 0) {
          const long double kappa = std::sqrt(1 + ref.mean[unit] * ref.mean[unit] / ref.var[unit]);
          rb.a = mean_abs / std::sqrt(ref.var[unit]);
          rb.v = variance_error_bound(impl->variance_algorithm, len, kappa, u);
        }
        for (std::int64_t i = 0; i < len; ++i) {
          const std::size_t k = unit * len + i;
          const std::int64_t channel = (unit % geo.groups) * (geo.c / geo.groups) + i / geo.hw;
          const long double g = load_as_long_double(pt, in.gamma.data(), channel);
          const long double b = load_as_long_double(pt, in.beta.data(), channel);
          const long double bound = element_bound(t, rb, ref.y[k], ref.y[k] - b, g, b);
          const long double got = load_as_long_double(t, y.data(), k);
          if (!(std::fabs(got - ref.y[k]) <= bound) && failures++ < 5)
            ADD_FAILURE() << fmt::format("unit {} element {}: got {:.10g}, reference {:.10g}, bound {:.3g}", unit, i,
                                         static_cast<double>(got), static_cast<double>(ref.y[k]),
                                         static_cast<double>(bound));
        }
        const long double rstd_bound = 2 * (rb.v / 2 + 6 * u) * ref.rstd[unit] + ulp_of(DType::kF32, ref.rstd[unit]);
        if (!(std::fabs(rstd[unit] - ref.rstd[unit]) <= rstd_bound) && failures++ < 5)
          ADD_FAILURE() << "unit " << unit << ": rstd " << rstd[unit] << " vs " << static_cast<double>(ref.rstd[unit]);
      }
      if (failures) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, GroupNormMatrix, ::testing::ValuesIn(groupnorm_cases()),
                         [](const auto& info) {
                           return sanitize(fmt::format("{}_{}", info.param.first->name, dtype_name(info.param.second)));
                         });

// groups = C: InstanceNorm, i.e. LayerNorm over each (sample, channel) row of HW elements; and
// groups = 1: LayerNorm over C*HW with gamma/beta expanded per element. Bit for bit, per family.
TEST(GroupNormIdentities, InstanceNormAndLayerNormBitForBit) {
  for (const Implementation& impl : registry()) {
    if (!impl.supports(Norm::kGroupNorm, DType::kF32)) continue;
    for (std::int64_t target : targets_of(impl)) {
      ForcedTarget forced(target);
      for (DType t : kAllDTypes)
        for (const Geometry& base : {Geometry{3, 12, 17, 0}, Geometry{2, 5, 1000, 0}, Geometry{1, 2, 40000, 0}}) {
          SCOPED_TRACE(fmt::format("{} {} {} C={} HW={}", impl.name, target ? hwy::TargetName(target) : "scalar",
                                   dtype_name(t), base.c, base.hw));
          const auto count = static_cast<std::size_t>(base.n * base.c * base.hw);
          const std::size_t bytes = count * dtype_size(t), psize = dtype_size(param_dtype(t));
          const RunConfig cfg{impl.uses_threads ? 3 : 1};
          {  // InstanceNorm, no affine (torch.nn.InstanceNorm's default)
            const Problem gn = groupnorm(t, {base.n, base.c, base.hw, base.c});
            const GroupInputs in(gn, 21);
            Buffer y_gn(count, dtype_size(t)), y_ln(count, dtype_size(t));
            Buffers b = in.buffers(y_gn.data());
            b.gamma = b.beta = nullptr;
            forward(impl, gn, b, cfg);
            const Problem ln{Norm::kLayerNorm, t, base.n * base.c, base.hw, 1e-5};
            forward(impl, ln, Buffers{in.x.data(), y_ln.data()}, cfg);
            ASSERT_EQ(0, std::memcmp(y_gn.data(), y_ln.data(), bytes)) << "groups = C differs from InstanceNorm";
          }
          {  // one group, per-channel affine
            const Problem gn = groupnorm(t, {base.n, base.c, base.hw, 1});
            const GroupInputs in(gn, 22);
            Buffer gamma_full(static_cast<std::size_t>(gn.cols), psize), beta_full(static_cast<std::size_t>(gn.cols), psize);
            for (std::int64_t i = 0; i < gn.cols; ++i) {
              std::memcpy(static_cast<char*>(gamma_full.data()) + i * psize,
                          static_cast<const char*>(in.gamma.data()) + (i / base.hw) * psize, psize);
              std::memcpy(static_cast<char*>(beta_full.data()) + i * psize,
                          static_cast<const char*>(in.beta.data()) + (i / base.hw) * psize, psize);
            }
            Buffer y_gn(count, dtype_size(t)), y_ln(count, dtype_size(t));
            forward(impl, gn, in.buffers(y_gn.data()), cfg);
            const Problem ln{Norm::kLayerNorm, t, base.n, gn.cols, 1e-5};
            forward(impl, ln, Buffers{in.x.data(), y_ln.data(), gamma_full.data(), beta_full.data()}, cfg);
            ASSERT_EQ(0, std::memcmp(y_gn.data(), y_ln.data(), bytes)) << "groups = 1 differs from LayerNorm over C*HW";
          }
        }
    }
  }
}

TEST(GroupNormThreaded, BitwiseEqualToHighwayForEveryThreadCount) {
  const Implementation& hw = find_implementation("highway");
  const Implementation& th = find_implementation("threaded");
  for (DType t : kAllDTypes)
    for (const Geometry& geo : {Geometry{2, 320, 64, 32}, Geometry{1, 4, 40000, 2}, Geometry{4, 64, 49, 32}}) {
      SCOPED_TRACE(fmt::format("{} C={} HW={} G={}", dtype_name(t), geo.c, geo.hw, geo.groups));
      const Problem p = groupnorm(t, geo);
      const GroupInputs in(p, 5);
      const auto count = static_cast<std::size_t>(p.rows * p.cols);
      Buffer expected(count, dtype_size(t));
      std::vector<float> mean_hw(units(p)), rstd_hw(units(p));
      forward(hw, p, in.buffers(expected.data(), mean_hw.data(), rstd_hw.data()));
      for (int threads : {1, 2, 3, 8}) {
        Buffer got(count, dtype_size(t));
        std::vector<float> mean(units(p)), rstd(units(p));
        forward(th, p, in.buffers(got.data(), mean.data(), rstd.data()), RunConfig{threads});
        ASSERT_EQ(0, std::memcmp(got.data(), expected.data(), count * dtype_size(t))) << threads << " threads";
        ASSERT_EQ(0, std::memcmp(rstd.data(), rstd_hw.data(), rstd.size() * sizeof(float)));
      }
    }
}

TEST(GroupNormBadInput, IsRejectedBeforeAnythingIsWritten) {
  const Implementation& hw = find_implementation("highway");
  std::vector<float> x(240, 1.0f), y(240, -7.0f);
  const auto expect_error = [&](const Problem& p, std::string_view fragment) {
    expect_error_mentioning([&] { forward(hw, p, Buffers{x.data(), y.data()}); }, fragment);
    for (float v : y) ASSERT_EQ(v, -7.0f) << "y was written";
  };
  Problem p = groupnorm(DType::kF32, {2, 12, 10, 5});
  expect_error(p, "5 groups do not divide 12 channels");
  p = groupnorm(DType::kF32, {2, 12, 10, 4});
  p.channels = 7;  // 120 elements per sample are not 7 channels times a spatial size
  expect_error(p, "layout does not match");
  p = groupnorm(DType::kF32, {2, 12, 10, 0});
  expect_error(p, "groups must be at least 1");
  p = groupnorm(DType::kF32, {2, 12, 10, 4});
  p.variant.one_plus_gamma = true;
  expect_error(p, "only the standard form");
  Problem ln{Norm::kLayerNorm, DType::kF32, 2, 120, 1e-5};
  ln.groups = 4;
  expect_error(ln, "groupnorm and batchnorm only");
  EXPECT_EQ(parse_norm("groupnorm"), Norm::kGroupNorm);
}

}  // namespace
}  // namespace normbench::testing
