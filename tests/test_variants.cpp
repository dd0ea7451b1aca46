// The LayerNorm / RMSNorm variants (eps outside the sqrt, unbiased variance, RMSNorm with shift,
// parameter-free, Gemma's 1 + w, storage-dtype compute) and the fused residual add, in every
// family that supports them, against the long-double reference of the variant; the fused add
// bit for bit against add followed by norm; threaded bitwise equal to highway; bad input.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "test_support.hpp"

namespace normbench::testing {
namespace {

struct VariantCase {
  const Implementation* impl;
  const VariantPreset* variant;
  Norm norm;
  DType dtype;
};

std::vector<VariantCase> variant_cases() {
  std::vector<VariantCase> cases;
  for (const Implementation& impl : registry()) {
    if (!impl.supports_variants) continue;
    for (const VariantPreset& v : variant_presets()) {
      if (v.name == "standard") continue;  // test_kernels.cpp
      for (Norm n : impl.norms)
        for (DType t : impl.dtypes)  // BatchNorm's presets: test_batchnorm.cpp
          if (v.applies(n, t) && n != Norm::kBatchNorm) cases.push_back({&impl, &v, n, t});
    }
  }
  return cases;
}

std::string variant_case_name(const ::testing::TestParamInfo<VariantCase>& info) {
  const VariantCase& c = info.param;
  return sanitize(fmt::format("{}_{}_{}_{}", c.impl->name, c.variant->name, norm_name(c.norm), dtype_name(c.dtype)));
}

void PrintTo(const VariantCase& c, std::ostream* os) {
  *os << c.impl->name << "/" << c.variant->name << "/" << norm_name(c.norm) << "/" << dtype_name(c.dtype);
}

Problem problem_of(const VariantPreset& v, Norm n, DType t, std::int64_t rows, std::int64_t cols) {
  return v.apply_to(Problem{n, t, rows, cols, default_eps(n)});
}

// Inputs of a preset: its parameters, and for residual_add a residual of the same distribution.
struct VariantInputs {
  Inputs in;
  Buffer residual;
  VariantInputs(const Problem& p, const VariantPreset& v, std::uint64_t seed)
      : in(p, v.gamma, v.has_beta(p.norm)),
        residual(static_cast<std::size_t>(p.rows * p.cols), dtype_size(p.dtype)) {
    fill_inputs(in, seed);
    std::mt19937_64 rng(seed + 99);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (std::size_t i = 0; i < static_cast<std::size_t>(p.rows * p.cols); ++i)
      store_rounded(p.dtype, residual.data(), i, normal(rng));
  }
  Buffers buffers(void* y, void* h) const {
    Buffers b = in.buffers(y);
    if (in.problem.residual_add) {
      b.residual = residual.data();
      b.h = h;
    }
    return b;
  }
};

class VariantMatrix : public ::testing::TestWithParam<VariantCase> {};

// 3x5000: LayerNorm rows overflowing L1 with their parameters, applied in column blocks.
constexpr std::int64_t kVariantCols[] = {2, 7, 17, 768, 1025, 5000, 65537};
constexpr std::int64_t kVariantRows[] = {1, 3};

// The variant's y against its reference with test_support's first-order bound. storage_compute
// rounds mean, rstd and each of up to four elementwise steps to the storage dtype (unit u_T):
// |x - mean| and z each pick up u_T relative, mean's rounding u_T |mean| rstd, rstd's u_T |z|,
// so the bound adds 2 u_T ((|mean| rstd + 3|z|) |gamma| + |z gamma| + |beta|).
TEST_P(VariantMatrix, MatchesTheVariantsReference) {
  const VariantCase& c = GetParam();
  const std::vector<std::int64_t> targets = is_simd(*c.impl) ? simd_targets() : std::vector<std::int64_t>{0};
  const DType pt = param_dtype(c.dtype);
  const long double u = accumulator_unit_roundoff(*c.impl, c.dtype);
  const long double u_storage = c.variant->variant.storage_compute ? unit_roundoff(c.dtype) : 0;
  for (std::int64_t target : targets) {
    ForcedTarget forced(target);
    std::uint64_t seed = 7;
    for (std::int64_t rows : kVariantRows)
      for (std::int64_t cols : kVariantCols) {
        SCOPED_TRACE(fmt::format("{} {}x{}", target ? hwy::TargetName(target) : "scalar", rows, cols));
        const Problem p = problem_of(*c.variant, c.norm, c.dtype, rows, cols);
        const VariantInputs vin(p, *c.variant, seed++);
        const Inputs& in = vin.in;
        const auto count = static_cast<std::size_t>(rows * cols);
        Buffer y(count, dtype_size(c.dtype)), h(count, dtype_size(c.dtype));
        forward(*c.impl, p, vin.buffers(y.data(), h.data()), RunConfig{c.impl->uses_threads ? 3 : 1});
        const ReferenceResult ref = reference_forward(p, vin.buffers(nullptr, nullptr));
        if (p.residual_add) {
          for (std::size_t k = 0; k < count; ++k)
            ASSERT_EQ(load_as_long_double(c.dtype, h.data(), k), ref.h[k]) << "h differs at " << k;
        }
        int failures = 0;
        for (std::int64_t r = 0; r < rows; ++r) {
          long double mean_abs = 0;
          for (std::int64_t i = 0; i < cols; ++i)
            mean_abs += std::fabs(p.residual_add ? ref.h[r * cols + i]
                                                 : load_as_long_double(c.dtype, in.x.data(), r * cols + i));
          mean_abs /= cols;
          RowBound rb{u, static_cast<long double>(cols), 0, cols * u};
          if (centres(p.norm) && ref.var[r] > 0) {
            const long double kappa = std::sqrt(1 + ref.mean[r] * ref.mean[r] / ref.var[r]);
            rb.a = mean_abs / std::sqrt(ref.var[r]);
            rb.v = variance_error_bound(c.impl->variance_algorithm, cols, kappa, u);
          }
          for (std::int64_t i = 0; i < cols; ++i) {
            const std::size_t k = r * cols + i;
            long double g = in.has_gamma ? load_as_long_double(pt, in.gamma.data(), i) : 1.0L;
            if (p.variant.one_plus_gamma && in.has_gamma) g += 1;
            const long double b = in.has_beta ? load_as_long_double(pt, in.beta.data(), i) : 0.0L;
            const long double z = (ref.y[k] - b) / g;
            long double bound = element_bound(c.dtype, rb, ref.y[k], ref.y[k] - b, g, b);
            bound += 2 * u_storage *
                     ((std::fabs(ref.mean[r]) * ref.rstd[r] + 3 * std::fabs(z)) * std::fabs(g) + std::fabs(z * g) +
                      std::fabs(b));
            // A step rounded to T that lands among T's subnormals (f16: below 6.1e-5) errs by up to
            // half their spacing, absolutely, carried by the later factors: x - mean by rstd |gamma|,
            // z and gamma by |gamma| and |z|, z * gamma by 1.
            if (u_storage > 0)
              bound += 0.5L * ulp_of(c.dtype, 0) * (ref.rstd[r] * std::fabs(g) + std::fabs(g) + std::fabs(z) + 1);
            const long double got = load_as_long_double(c.dtype, y.data(), k);
            if (!(std::fabs(got - ref.y[k]) <= bound) && failures++ < 5)
              ADD_FAILURE() << fmt::format("row {} col {}: got {:.10g}, reference {:.10g}, |err| {:.3g} > bound {:.3g}",
                                           r, i, static_cast<double>(got), static_cast<double>(ref.y[k]),
                                           static_cast<double>(std::fabs(got - ref.y[k])),
                                           static_cast<double>(bound));
          }
        }
        if (failures) return;
      }
  }
}

INSTANTIATE_TEST_SUITE_P(AllVariants, VariantMatrix, ::testing::ValuesIn(variant_cases()), variant_case_name);

// The fused residual add equals add_rounded followed by the standard norm of h, bit for bit, in
// every family; h may be x or residual itself.
TEST(ResidualAdd, FusedEqualsAddThenNormBitForBitAndInPlace) {
  const VariantPreset& fused_preset = find_variant("residual-add");
  for (const Implementation& impl : registry()) {
    if (!impl.supports_variants) continue;
    for (std::int64_t target : is_simd(impl) ? simd_targets() : std::vector<std::int64_t>{0}) {
      ForcedTarget forced(target);
      for (Norm n : kAllNorms)
        for (DType t : kAllDTypes)
          for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{5, 33}, {64, 768}, {2, 70000}}) {
            if (!fused_preset.applies(n, t)) continue;
            SCOPED_TRACE(fmt::format("{} {} {} {} {}x{}", impl.name, target ? hwy::TargetName(target) : "scalar",
                                     norm_name(n), dtype_name(t), rows, cols));
            const Problem p = problem_of(fused_preset, n, t, rows, cols);
            const VariantInputs vin(p, fused_preset, static_cast<std::uint64_t>(rows + cols));
            const auto count = static_cast<std::size_t>(rows * cols);
            const std::size_t bytes = count * dtype_size(t);
            const RunConfig cfg{impl.uses_threads ? 3 : 1};
            Buffer y(count, dtype_size(t)), h(count, dtype_size(t));
            forward(impl, p, vin.buffers(y.data(), h.data()), cfg);

            Buffer h_sep(count, dtype_size(t)), y_sep(count, dtype_size(t));
            add_rounded(t, vin.in.x.data(), vin.residual.data(), h_sep.data(), count);
            Problem standard = p;
            standard.residual_add = false;
            Buffers b = vin.in.buffers(y_sep.data());
            b.x = h_sep.data();
            forward(impl, standard, b, cfg);
            ASSERT_EQ(0, std::memcmp(h.data(), h_sep.data(), bytes)) << "h differs from add_rounded";
            ASSERT_EQ(0, std::memcmp(y.data(), y_sep.data(), bytes)) << "fused y differs from add then norm";

            // In place: h written over the residual (vLLM's fused_add_rms_norm), and over x.
            for (bool over_x : {false, true}) {
              Buffer x2(count, dtype_size(t)), r2(count, dtype_size(t)), y2(count, dtype_size(t));
              std::memcpy(x2.data(), vin.in.x.data(), bytes);
              std::memcpy(r2.data(), vin.residual.data(), bytes);
              Buffers b2 = vin.in.buffers(y2.data());
              b2.x = x2.data();
              b2.residual = r2.data();
              b2.h = over_x ? x2.data() : r2.data();
              forward(impl, p, b2, cfg);
              ASSERT_EQ(0, std::memcmp(b2.h, h.data(), bytes)) << "in-place h, over x: " << over_x;
              ASSERT_EQ(0, std::memcmp(y2.data(), y.data(), bytes)) << "in-place y, over x: " << over_x;
            }
          }
    }
  }
}

// Gemma's (1 + w) with w = 0 is the parameter-free norm: the 1 + w really is applied.
TEST(GemmaScale, ZeroWeightEqualsParameterFree) {
  for (const Implementation& impl : registry()) {
    if (!impl.supports_variants) continue;
    for (DType t : kAllDTypes) {
      SCOPED_TRACE(fmt::format("{} {}", impl.name, dtype_name(t)));
      Problem p{Norm::kRMSNorm, t, 4, 1000, 1e-6};
      Inputs in(p, true, false);
      fill_inputs(in, 3);
      std::memset(in.gamma.data(), 0, static_cast<std::size_t>(p.cols) * dtype_size(param_dtype(t)));
      Buffer y_gemma(4000, dtype_size(t)), y_free(4000, dtype_size(t));
      Problem gemma = p;
      gemma.variant.one_plus_gamma = true;
      forward(impl, gemma, in.buffers(y_gemma.data()));
      Buffers free = in.buffers(y_free.data());
      free.gamma = nullptr;
      forward(impl, p, free);
      ASSERT_EQ(0, std::memcmp(y_gemma.data(), y_free.data(), 4000 * dtype_size(t)));
    }
  }
}

// Storage-dtype compute really rounds every step: on the same inputs its output differs from the
// upcast one and is further from the reference (what the upcast buys, in every family).
TEST(StorageCompute, IsLessAccurateThanUpcastInEveryFamily) {
  for (const Implementation& impl : registry()) {
    if (!impl.supports_variants) continue;
    for (DType t : {DType::kBF16, DType::kF16})
      for (Norm n : find_variant("storage").norms) {
        SCOPED_TRACE(fmt::format("{} {} {}", impl.name, dtype_name(t), norm_name(n)));
        const Problem upcast{n, t, 8, 768, default_eps(n)};
        Problem storage = upcast;
        storage.variant.storage_compute = true;
        Inputs in(upcast, true, true);
        fill_inputs(in, 5, 3.0);  // a mean of 3: x - mean loses bits when rounded to the dtype
        const ReferenceResult ref = reference_forward(upcast, in.buffers(nullptr));
        Buffer y_up(8 * 768, dtype_size(t)), y_st(8 * 768, dtype_size(t));
        forward(impl, upcast, in.buffers(y_up.data()));
        forward(impl, storage, in.buffers(y_st.data()));
        long double err_up = 0, err_st = 0;
        for (std::size_t k = 0; k < 8 * 768; ++k) {
          err_up = std::max(err_up, std::fabs(load_as_long_double(t, y_up.data(), k) - ref.y[k]));
          err_st = std::max(err_st, std::fabs(load_as_long_double(t, y_st.data(), k) - ref.y[k]));
        }
        EXPECT_GT(err_st, 1.5L * err_up) << "storage " << static_cast<double>(err_st) << " upcast "
                                          << static_cast<double>(err_up);
      }
  }
}

// Every variant in threaded equals highway bit for bit for every thread count, including rows
// split into chunks across threads.
TEST(ThreadedVariants, BitwiseEqualToHighwayForEveryThreadCount) {
  const Implementation& hw = find_implementation("highway");
  const Implementation& th = find_implementation("threaded");
  for (const VariantPreset& v : variant_presets())
    for (Norm n : row_norms())
      for (DType t : kAllDTypes) {
        if (!v.applies(n, t)) continue;
        for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{64, 1000}, {1, 163845}, {3, 65537}}) {
          SCOPED_TRACE(fmt::format("{} {} {} {}x{}", v.name, norm_name(n), dtype_name(t), rows, cols));
          const Problem p = problem_of(v, n, t, rows, cols);
          const VariantInputs vin(p, v, 11);
          const auto count = static_cast<std::size_t>(rows * cols);
          Buffer y_hw(count, dtype_size(t)), h_hw(count, dtype_size(t));
          forward(hw, p, vin.buffers(y_hw.data(), h_hw.data()));
          for (int threads : {2, 3}) {
            Buffer y(count, dtype_size(t)), h(count, dtype_size(t));
            forward(th, p, vin.buffers(y.data(), h.data()), RunConfig{threads});
            ASSERT_EQ(0, std::memcmp(y.data(), y_hw.data(), count * dtype_size(t))) << threads << " threads";
            if (p.residual_add) {
              ASSERT_EQ(0, std::memcmp(h.data(), h_hw.data(), count * dtype_size(t)));
            }
          }
        }
      }
}

// Clear errors, before anything is written.
TEST(VariantBadInput, IsRejectedWithAClearMessage) {
  const Implementation& hw = find_implementation("highway");
  std::vector<float> x(64, 1.0f), y(64, -7.0f), h(64, -7.0f), r(64, 2.0f);
  const auto expect_error = [&](const Problem& p, const Buffers& b, std::string_view fragment) {
    expect_error_mentioning([&] { forward(hw, p, b); }, fragment);
    for (float v : y) ASSERT_EQ(v, -7.0f) << "y was written";
  };
  Problem p{Norm::kRMSNorm, DType::kF32, 2, 32, 1e-6};
  Buffers b{x.data(), y.data()};
  p.variant.unbiased = true;
  expect_error(p, b, "LayerNorm only");
  p = Problem{Norm::kLayerNorm, DType::kF32, 64, 1, 1e-5};
  p.variant.unbiased = true;
  expect_error(p, b, "at least 2 elements");
  p = Problem{Norm::kLayerNorm, DType::kF32, 2, 32, 1e-5};
  p.variant.storage_compute = true;
  expect_error(p, b, "bf16 and f16");
  p = Problem{Norm::kLayerNorm, DType::kF32, 2, 32, 1e-5};
  p.residual_add = true;
  expect_error(p, b, "residual is null");
  b.residual = r.data();
  expect_error(p, b, "h (the output");
  b.h = y.data();
  expect_error(p, b, "y overlaps h");
  b.h = r.data() + 4;
  expect_error(p, b, "h partially overlaps");
  for (const Implementation& impl : registry())
    if (!impl.supports_variants) {
      Problem q{Norm::kLayerNorm, DType::kF32, 2, 32, 1e-5};
      q.variant.eps_outside_sqrt = true;
      EXPECT_THROW(forward(impl, q, Buffers{x.data(), y.data()}), Error) << impl.name;
    }
}

}  // namespace
}  // namespace normbench::testing
