// BatchNorm (torch.nn.BatchNorm1d/2d): every family x dtype (x Highway target) against the
// long-double reference on (N, C, L) and channels-last (N, L, C) shapes, training and inference;
// the running statistics against a hand-computed two-step example; threaded bitwise equal to
// highway for every thread count; bad input rejected before anything is written.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "test_support.hpp"

namespace normbench::testing {
namespace {

struct BatchNormCase {
  const Implementation* impl;
  DType dtype;
  std::int64_t target;  // 0: scalar code
};

void PrintTo(const BatchNormCase& c, std::ostream* os) {
  *os << c.impl->name << "/" << dtype_name(c.dtype);
  if (c.target != 0) *os << "/" << hwy::TargetName(c.target);
}

std::vector<BatchNormCase> batchnorm_cases() {
  std::vector<BatchNormCase> cases;
  for (const Implementation& impl : registry())
    for (DType t : impl.dtypes) {
      if (!impl.supports(Norm::kBatchNorm, t)) continue;
      if (is_simd(impl))
        for (std::int64_t target : simd_targets()) cases.push_back({&impl, t, target});
      else
        cases.push_back({&impl, t, 0});
    }
  return cases;
}

std::string batchnorm_case_name(const ::testing::TestParamInfo<BatchNormCase>& info) {
  const BatchNormCase& c = info.param;
  std::string name = fmt::format("{}_{}", c.impl->name, dtype_name(c.dtype));
  if (c.target != 0) name = fmt::format("{}_{}", name, hwy::TargetName(c.target));
  return sanitize(name);
}

Problem batchnorm_problem(DType t, std::int64_t n, std::int64_t c, std::int64_t l, bool channels_last, bool training) {
  Problem p{Norm::kBatchNorm, t, n, c * l, 1e-5};
  p.channels = c;
  p.batchnorm.channels_last = channels_last;
  p.batchnorm.training = training;
  return p;
}

// Running statistics in the parameter dtype: mean ~ 0.5 + 0.1 N(0,1), var ~ 1 + |0.2 N(0,1)|.
struct Running {
  Buffer mean, var;
  Running(const Problem& p, std::uint64_t seed)
      : mean(static_cast<std::size_t>(channel_count(p)), dtype_size(param_dtype(p.dtype))),
        var(static_cast<std::size_t>(channel_count(p)), dtype_size(param_dtype(p.dtype))) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (std::size_t c = 0; c < static_cast<std::size_t>(channel_count(p)); ++c) {
      store_rounded(param_dtype(p.dtype), mean.data(), c, 0.5 + 0.1 * normal(rng));
      store_rounded(param_dtype(p.dtype), var.data(), c, 1 + std::fabs(0.2 * normal(rng)));
    }
  }
};

constexpr std::int64_t kSamples[] = {2, 5};
constexpr std::int64_t kChannels[] = {1, 3, 17, 64};  // 3 and 17 are not multiples of any vector width
constexpr std::int64_t kLengths[] = {1, 7, 100};

class BatchNormMatrix : public ::testing::TestWithParam<BatchNormCase> {};

// y, the saved statistics and the updated running statistics against the reference, in both
// layouts and both modes; in place gives the same bits.
TEST_P(BatchNormMatrix, MatchesReferenceInBothLayoutsAndModes) {
  const BatchNormCase& c = GetParam();
  ForcedTarget forced(c.target);
  const DType pt = param_dtype(c.dtype);
  const long double u = accumulator_unit_roundoff(*c.impl, c.dtype);
  std::uint64_t seed = 1;
  for (bool channels_last : {false, true})
    for (bool training : {true, false})
      for (std::int64_t n : kSamples)
        for (std::int64_t ch : kChannels)
          for (std::int64_t l : kLengths) {
            if (channels_last && l == 1) continue;  // (N, C): the same layout as channels first
            const Problem p = batchnorm_problem(c.dtype, n, ch, l, channels_last, training);
            const int params = static_cast<int>(seed % 4);
            Inputs in(p, params != 1 && params != 3, params != 1 && params != 2);
            fill_inputs(in, seed);
            Running running(p, seed + 1000), initial(p, seed + 1000);
            ++seed;
            SCOPED_TRACE(fmt::format("N={} C={} L={} {} {} gamma={} beta={}", n, ch, l,
                                     channels_last ? "channels-last" : "channels-first",
                                     training ? "training" : "inference", in.has_gamma, in.has_beta));
            Buffers rb = in.buffers(nullptr);
            rb.running_mean = initial.mean.data();
            rb.running_var = initial.var.data();
            const ReferenceResult ref = reference_forward(p, rb);

            Buffer y(static_cast<std::size_t>(n * ch * l), dtype_size(c.dtype));
            std::vector<float> mean(units(p) + 1), rstd(units(p) + 1);
            Buffers b = in.buffers(y.data(), mean.data() + 1, rstd.data() + 1);
            b.running_mean = running.mean.data();
            b.running_var = running.var.data();
            const RunConfig cfg{c.impl->uses_threads ? 3 : 1};
            forward(*c.impl, p, b, cfg);
            if (check_against_reference(*c.impl, in, y.data(), mean.data() + 1, rstd.data() + 1, ref) > 0) return;

            for (std::int64_t k = 0; k < ch; ++k) {
              const auto kk = static_cast<std::size_t>(k);
              if (!training) {  // read, never written
                ASSERT_EQ(0, std::memcmp(running.mean.data(), initial.mean.data(), running.mean.size_bytes()));
                ASSERT_EQ(0, std::memcmp(running.var.data(), initial.var.data(), running.var.size_bytes()));
                break;
              }
              // Running mean: the batch mean's error (two-pass bound) times momentum, plus the
              // rounding to the parameter dtype; running var likewise with the variance's bound.
              const long double len = static_cast<long double>(stat_cols(p));
              const long double kappa = ref.var[kk] > 0 ? std::sqrt(1 + ref.mean[kk] * ref.mean[kk] / ref.var[kk]) : 1;
              const long double v = variance_error_bound(c.impl->variance_algorithm, static_cast<double>(len),
                                                         static_cast<double>(kappa), static_cast<double>(u));
              const long double got_mean = load_as_long_double(pt, running.mean.data(), kk);
              const long double got_var = load_as_long_double(pt, running.var.data(), kk);
              const long double mean_bound = 0.1L * 2 * (len + 1) * u * (std::fabs(ref.mean[kk]) + std::sqrt(ref.var[kk])) +
                                             ulp_of(pt, ref.running_mean[kk]);
              const long double var_bound = 0.1L * 2 * (v + 4 * u) * ref.var[kk] * len / (len - 1) +
                                            ulp_of(pt, ref.running_var[kk]);
              ASSERT_LE(std::fabs(got_mean - ref.running_mean[kk]), mean_bound) << "running_mean of channel " << k;
              ASSERT_LE(std::fabs(got_var - ref.running_var[kk]), var_bound) << "running_var of channel " << k;
            }

            Buffer inplace(static_cast<std::size_t>(n * ch * l), dtype_size(c.dtype));
            std::memcpy(inplace.data(), in.x.data(), in.x.size_bytes());
            Running again(p, seed + 999);  // the initial values once more
            Buffers bi = in.buffers(inplace.data());
            bi.x = inplace.data();
            bi.running_mean = again.mean.data();
            bi.running_var = again.var.data();
            forward(*c.impl, p, bi, cfg);
            ASSERT_EQ(0, std::memcmp(inplace.data(), y.data(), y.size_bytes())) << "in-place result differs";
          }
}

INSTANTIATE_TEST_SUITE_P(AllImplementations, BatchNormMatrix, ::testing::ValuesIn(batchnorm_cases()),
                         batchnorm_case_name);

// torch.nn.BatchNorm1d(2, momentum=0.1) on two batches, worked by hand:
//   batch 1, channel 0: 1 2 3 4  -> mean 2.5, biased var 1.25, unbiased 5/3
//            channel 1: 2 2 2 6  -> mean 3,   biased var 3,    unbiased 4
//   running_mean = 0.9 * 0 + 0.1 * mean:          0.25,  0.3
//   running_var  = 0.9 * 1 + 0.1 * unbiased:      1.0666..., 1.3
//   batch 2, channel 0: 2 4 6 8  -> mean 5,  unbiased 20/3
//            channel 1: 0 0 0 0  -> mean 0,  unbiased 0
//   running_mean = 0.9 * 0.25 + 0.5 = 0.725;  0.9 * 0.3 + 0 = 0.27
//   running_var  = 0.9 * 1.0666... + 0.6666... = 1.6266...;  0.9 * 1.3 + 0 = 1.17
// then inference on batch 1 uses those: y = (x - 0.725) / sqrt(1.6266... + 1e-5) for channel 0.
TEST(BatchNormRunningStatistics, MatchHandComputedTwoSteps) {
  const double batch1[4][2] = {{1, 2}, {2, 2}, {3, 2}, {4, 6}};
  const double batch2[4][2] = {{2, 0}, {4, 0}, {6, 0}, {8, 0}};
  const double want_mean1[2] = {0.25, 0.3}, want_var1[2] = {0.9 + 0.1 * 5.0 / 3.0, 1.3};
  const double want_mean2[2] = {0.725, 0.27}, want_var2[2] = {0.9 * (0.9 + 0.1 * 5.0 / 3.0) + 0.1 * 20.0 / 3.0, 1.17};
  for (const Implementation& impl : registry())
    for (DType t : impl.dtypes) {
      if (!impl.supports(Norm::kBatchNorm, t)) continue;
      SCOPED_TRACE(fmt::format("{} {}", impl.name, dtype_name(t)));
      const DType pt = param_dtype(t);
      Problem p{Norm::kBatchNorm, t, 4, 2, 1e-5};
      Buffer x(8, dtype_size(t)), y(8, dtype_size(t)), rm(2, dtype_size(pt)), rv(2, dtype_size(pt));
      for (std::size_t c = 0; c < 2; ++c) {
        store_rounded(pt, rm.data(), c, 0.0);
        store_rounded(pt, rv.data(), c, 1.0);
      }
      Buffers b{x.data(), y.data()};
      b.running_mean = rm.data();
      b.running_var = rv.data();
      const auto step = [&](const double (&batch)[4][2], const double (&mean)[2], const double (&var)[2]) {
        for (std::size_t i = 0; i < 8; ++i) store_rounded(t, x.data(), i, batch[i / 2][i % 2]);
        forward(impl, p, b, RunConfig{2});
        for (std::size_t c = 0; c < 2; ++c) {
          // The update is computed in double and rounded once to the parameter dtype.
          EXPECT_NEAR(load_as_long_double(pt, rm.data(), c), mean[c], 2 * ulp_of(pt, mean[c])) << "channel " << c;
          EXPECT_NEAR(load_as_long_double(pt, rv.data(), c), var[c], 2 * ulp_of(pt, var[c])) << "channel " << c;
        }
      };
      step(batch1, want_mean1, want_var1);
      step(batch2, want_mean2, want_var2);
      p.batchnorm.training = false;
      for (std::size_t i = 0; i < 8; ++i) store_rounded(t, x.data(), i, batch1[i / 2][i % 2]);
      forward(impl, p, b, RunConfig{2});
      for (std::size_t i = 0; i < 8; ++i) {
        const std::size_t c = i % 2;
        const double want = (batch1[i / 2][c] - want_mean2[c]) / std::sqrt(want_var2[c] + 1e-5);
        EXPECT_NEAR(load_as_long_double(t, y.data(), i), want, 2 * ulp_of(t, want) + 1e-6) << "element " << i;
      }
      EXPECT_NEAR(load_as_long_double(pt, rm.data(), 0), want_mean2[0], 2 * ulp_of(pt, want_mean2[0]))
          << "inference changed the running statistics";
    }
}

// threaded: the same bits as highway (y, saved statistics, running statistics) for every thread
// count, in both layouts, with enough positions for several blocks of the channels-last split.
TEST(BatchNormThreaded, BitwiseEqualToHighwayForEveryThreadCount) {
  const Implementation& highway = find_implementation("highway");
  const Implementation& threaded = find_implementation("threaded");
  struct Shape {
    std::int64_t n, c, l;
    bool channels_last;
  };
  for (const Shape s : {Shape{4, 3, 40000, false}, Shape{8, 64, 3136, true}, Shape{64, 1000, 1, false},
                        Shape{3, 5, 70000, true}})
    for (DType t : {DType::kF32, DType::kBF16, DType::kF64}) {
      SCOPED_TRACE(fmt::format("{}x{}x{} {} {}", s.n, s.c, s.l, s.channels_last ? "nlc" : "ncl", dtype_name(t)));
      const Problem p = batchnorm_problem(t, s.n, s.c, s.l, s.channels_last, true);
      Inputs in(p, true, true);
      fill_inputs(in, 3);
      const auto run = [&](const Implementation& impl, int threads, Buffer& y, Running& running,
                           std::vector<float>& mean, std::vector<float>& rstd) {
        Buffers b = in.buffers(y.data(), mean.data(), rstd.data());
        b.running_mean = running.mean.data();
        b.running_var = running.var.data();
        forward(impl, p, b, RunConfig{threads});
      };
      const auto count = static_cast<std::size_t>(p.rows * p.cols);
      Buffer y0(count, dtype_size(t));
      Running r0(p, 5);
      std::vector<float> m0(units(p)), s0(units(p));
      run(highway, 1, y0, r0, m0, s0);
      for (int threads : {1, 2, 3, 5, 16}) {
        Buffer y(count, dtype_size(t));
        Running r(p, 5);
        std::vector<float> m(units(p)), sd(units(p));
        run(threaded, threads, y, r, m, sd);
        EXPECT_EQ(0, std::memcmp(y.data(), y0.data(), y.size_bytes())) << threads << " threads: y";
        EXPECT_EQ(m, m0) << threads << " threads: mean";
        EXPECT_EQ(sd, s0) << threads << " threads: rstd";
        EXPECT_EQ(0, std::memcmp(r.mean.data(), r0.mean.data(), r.mean.size_bytes())) << threads << ": running_mean";
        EXPECT_EQ(0, std::memcmp(r.var.data(), r0.var.data(), r.var.size_bytes())) << threads << ": running_var";
      }
    }
}

// The BatchNorm reference of (N, C) without affine parameters equals, bit for bit, the LayerNorm
// reference (checked against MPFR in test_reference_mpfr.cpp) of the transposed data: the same
// compensated two-pass over the same values in the same order.
TEST(BatchNormReference, EqualsTheLayerNormReferenceOfTheTransposedData) {
  for (DType t : {DType::kF32, DType::kF64})
    for (auto [n, c] : {std::pair<std::int64_t, std::int64_t>{7, 3}, {768, 5}, {2, 17}}) {
      SCOPED_TRACE(fmt::format("{} N={} C={}", dtype_name(t), n, c));
      const Problem bn{Norm::kBatchNorm, t, n, c, 1e-5};
      const Problem ln{Norm::kLayerNorm, t, c, n, 1e-5};
      Inputs in(bn, false, false);
      fill_inputs(in, 13, 1e3);  // offset 1e3: kappa ~ 1e3, where a plain two-pass would lose digits
      Buffer xt(static_cast<std::size_t>(n * c), dtype_size(t));
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < c; ++j)
          std::memcpy(static_cast<unsigned char*>(xt.data()) + (j * n + i) * dtype_size(t),
                      static_cast<const unsigned char*>(in.x.data()) + (i * c + j) * dtype_size(t), dtype_size(t));
      const ReferenceResult rb = reference_forward(bn, Buffers{in.x.data()});
      const ReferenceResult rl = reference_forward(ln, Buffers{xt.data()});
      EXPECT_EQ(rb.mean, rl.mean);
      EXPECT_EQ(rb.var, rl.var);
      EXPECT_EQ(rb.rstd, rl.rstd);
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < c; ++j)
          ASSERT_EQ(rb.y[static_cast<std::size_t>(i * c + j)], rl.y[static_cast<std::size_t>(j * n + i)]) << i << "," << j;
    }
}

// A NaN poisons its channel's statistics and so its whole channel and its running statistics,
// nothing else, in both layouts.
TEST(BatchNormBadInput, NanStaysInItsChannel) {
  for (const Implementation& impl : registry())
    for (DType t : impl.dtypes) {
      if (!impl.supports(Norm::kBatchNorm, t)) continue;
      for (bool channels_last : {false, true}) {
        SCOPED_TRACE(fmt::format("{} {} {}", impl.name, dtype_name(t), channels_last ? "nlc" : "ncl"));
        const Problem p = batchnorm_problem(t, 3, 5, 11, channels_last, true);
        Inputs in(p, true, true);
        fill_inputs(in, 7);
        store_rounded(t, in.x.data(), static_cast<std::size_t>(unit_element(p, 2, 13)),
                      std::numeric_limits<long double>::quiet_NaN());
        Buffer y(static_cast<std::size_t>(p.rows * p.cols), dtype_size(t));
        Running running(p, 3);
        Buffers b = in.buffers(y.data());
        b.running_mean = running.mean.data();
        b.running_var = running.var.data();
        forward(impl, p, b, RunConfig{2});
        for (std::size_t c = 0; c < 5; ++c) {
          const DType pt = param_dtype(t);
          EXPECT_EQ(std::isnan(load_as_long_double(pt, running.mean.data(), c)), c == 2) << "running_mean " << c;
          EXPECT_EQ(std::isnan(load_as_long_double(pt, running.var.data(), c)), c == 2) << "running_var " << c;
        }
        for (std::int64_t c = 0; c < 5; ++c)
          for (std::int64_t i = 0; i < stat_cols(p); ++i)
            ASSERT_EQ(std::isnan(load_as_long_double(t, y.data(), static_cast<std::size_t>(unit_element(p, c, i)))),
                      c == 2)
                << c << "," << i;
      }
    }
}

// Bad input: a clear error naming the problem, and the running statistics untouched.
TEST(BatchNormBadInput, RejectedBeforeAnythingIsWritten) {
  for (const Implementation& impl : registry()) {
    if (!impl.supports(Norm::kBatchNorm, DType::kF32)) continue;
    SCOPED_TRACE(impl.name);
    std::vector<float> x(64, 1.5f), y(64), rm(8, 0.25f), rv(8, 2.0f), gamma(8, 1.0f);
    const auto call = [&](Problem p, Buffers b) -> std::string {
      try {
        forward(impl, p, b);
      } catch (const Error& e) {
        return e.what();
      }
      return "";
    };
    const auto buffers = [&] {
      Buffers b{x.data(), y.data(), gamma.data()};
      b.running_mean = rm.data();
      b.running_var = rv.data();
      return b;
    };
    Problem p{Norm::kBatchNorm, DType::kF32, 8, 8, 1e-5};
    const auto expect_error = [&](Problem bad, Buffers b, std::string_view needle) {
      const std::string what = call(bad, b);
      EXPECT_NE(what.find(needle), std::string::npos) << "got '" << what << "', expected '" << needle << "'";
      EXPECT_EQ(rm, std::vector<float>(8, 0.25f)) << "running_mean written by a rejected call";
      EXPECT_EQ(rv, std::vector<float>(8, 2.0f)) << "running_var written by a rejected call";
    };
    Problem single = p;  // one value per channel: (N, C) = (1, 8)
    single.rows = 1;
    expect_error(single, buffers(), "expected more than 1 value per channel when training");
    Problem single_nlc = single;  // (1, 1, 8) channels last: still one value per channel
    single_nlc.channels = 8;
    single_nlc.batchnorm.channels_last = true;
    expect_error(single_nlc, buffers(), "expected more than 1 value per channel");
    Problem layout = p;
    layout.channels = 3;  // 8 elements per sample are not 3 channels times a length
    expect_error(layout, buffers(), "layout does not match the shape");
    Problem grouped = p;
    grouped.groups = 2;
    expect_error(grouped, buffers(), "groups must be 1");
    Problem momentum = p;
    momentum.batchnorm.momentum = 1.5;
    expect_error(momentum, buffers(), "momentum must be in [0, 1]");
    momentum.batchnorm.momentum = std::nan("");
    expect_error(momentum, buffers(), "momentum must be in [0, 1]");
    Buffers gamma_count = buffers();
    gamma_count.gamma_elements = 7;
    expect_error(p, gamma_count, "gamma has 7 elements, expected 8");
    Buffers running_count = buffers();
    running_count.running_elements = 16;
    expect_error(p, running_count, "running_mean has 16 elements, expected 8");
    Buffers only_mean = buffers();
    only_mean.running_var = nullptr;
    expect_error(p, only_mean, "running_mean and running_var must be given together");
    Problem inference = p;
    inference.batchnorm.training = false;
    Buffers no_running{x.data(), y.data()};
    expect_error(inference, no_running, "inference (training = false) needs running_mean and running_var");
    Buffers overlapping = buffers();
    overlapping.running_var = rm.data() + 4;
    expect_error(p, overlapping, "running_mean and running_var overlap");
    Problem variant = p;
    variant.variant.unbiased = true;
    expect_error(variant, buffers(), "only the standard form");
    // The options of BatchNorm on another norm, and running statistics given to another norm.
    Problem layernorm{Norm::kLayerNorm, DType::kF32, 8, 8, 1e-5};
    Problem channels_last_layernorm = layernorm;
    channels_last_layernorm.batchnorm.channels_last = true;
    expect_error(channels_last_layernorm, Buffers{x.data(), y.data()}, "do not apply to layernorm");
    expect_error(layernorm, buffers(), "running statistics apply to batchnorm only");
    // Valid: the running statistics change.
    EXPECT_EQ(call(p, buffers()), "");
    EXPECT_NE(rv, std::vector<float>(8, 2.0f));
  }
}

}  // namespace
}  // namespace normbench::testing
