// The row-phased ceiling (bench/ceiling.cpp): it must move every byte it claims to, in the order
// it claims, on every SIMD target this CPU runs. A ceiling that skipped part of y or read the
// wrong parameters would report a rate no kernel's traffic has, so its output is checked element
// by element: y = fma(1.0001 x, gamma, beta) (RMSNorm's traffic: 1.0001 x gamma) where a vector
// wrote it, 1.0001 x where scalar code peeled or finished a row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <fmt/format.h>
#include <hwy/aligned_allocator.h>

#include "ceiling.hpp"
#include "test_support.hpp"

namespace normbench::testing {
namespace {

constexpr float kScale = 1.0001f;

struct PhasedCase {
  std::int64_t rows, cols;
  int threads;
  bool beta, nontemporal;
};

// Small integers: every row's sum is exact in f32, whatever the order of the additions.
float x_value(std::size_t i) { return static_cast<float>(1 + i % 7); }

// f32 data: one parameter vector per vector of x. Columns a multiple of every target's vector
// and buffers 64-byte aligned, so every element is written by the vector loop (no peel, no tail).
TEST(RowPhasedCeiling, WritesEveryElementWithItsOwnParameters) {
  const PhasedCase cases[] = {{5, 768, 1, true, false},  {5, 768, 1, false, true},    {64, 8192, 2, true, true},
                              {3, 1024, 2, true, false}, {1, 1 << 20, 2, true, true}, {1, 1 << 20, 2, false, false},
                              {7, 2048, 2, true, true},  {7, 2048, 2, false, false}};
  for (std::int64_t target : simd_targets()) {
    ForcedTarget forced(target);
    for (const PhasedCase& c : cases)
    for (const bool pairs : {false, true}) {
      SCOPED_TRACE(fmt::format("{} {}x{} threads {} beta {} nontemporal {} pairs {}", hwy::TargetName(target), c.rows,
                               c.cols, c.threads, c.beta, c.nontemporal, pairs));
      const auto n = static_cast<std::size_t>(c.rows * c.cols), cols = static_cast<std::size_t>(c.cols);
      auto x = hwy::AllocateAligned<float>(n), y = hwy::AllocateAligned<float>(n);
      auto gamma = hwy::AllocateAligned<float>(cols), beta = hwy::AllocateAligned<float>(cols);
      ASSERT_TRUE(x && y && gamma && beta);
      double total = 0;
      for (std::size_t i = 0; i < n; ++i) {
        x[i] = x_value(i);
        y[i] = NAN;
        total += x[i];
      }
      for (std::size_t j = 0; j < cols; ++j) {
        gamma[j] = static_cast<float>(1 << (j % 3));  // exact products: an FMA or a multiply and an add agree
        beta[j] = static_cast<float>(j % 5) * 0.5f;
      }
      bench::PhasedRows rows{x.get(), y.get(), n, c.rows, gamma.get(), c.beta ? beta.get() : nullptr,
                             cols, 1, c.nontemporal};
      rows.prefetch_in_read = c.cols >= 2048;  // as normbench sets it for rows of 8 KiB
      rows.pairs = pairs;
      const float sum = bench::row_phased(rows, c.threads);
      EXPECT_EQ(sum, static_cast<float>(total)) << "the sums of the rows' reads";
      int failures = 0;
      for (std::size_t i = 0; i < n && failures < 5; ++i) {
        const std::size_t j = i % cols;
        const float scaled = kScale * x[i];
        const float want = c.beta ? std::fma(scaled, gamma[j], beta[j]) : scaled * gamma[j];
        if (!(y[i] == want) && ++failures)
          ADD_FAILURE() << fmt::format("y[{}] (row {}, column {}) = {}, want {}", i, i / cols, j, y[i], want);
      }
    }
  }
}

// 16-bit data: a row is cols * 2 bytes read as floats (half a float's shift per row of odd
// length) against cols f32 parameters, two parameter vectors per vector of x. With gamma 1 and
// beta 0 every written float is 1.0001 x, and every float of the copy is written.
TEST(RowPhasedCeiling, SixteenBitRowsOfOddLengthCoverTheCopy) {
  const PhasedCase cases[] = {{3, 1001, 1, true, false}, {7, 4097, 1, true, true}, {9, 3001, 2, false, true},
                              {1, 65537, 2, true, true}};
  for (std::int64_t target : simd_targets()) {
    ForcedTarget forced(target);
    for (const PhasedCase& c : cases)
    for (const bool pairs : {false, true}) {
      SCOPED_TRACE(fmt::format("{} {}x{} threads {} nontemporal {} pairs {}", hwy::TargetName(target), c.rows, c.cols,
                               c.threads, c.nontemporal, pairs));
      const auto n = static_cast<std::size_t>(c.rows * c.cols * 2 / 4), cols = static_cast<std::size_t>(c.cols);
      std::vector<float> x(n), y(n, NAN), gamma(cols, 1.0f), beta(cols, 0.0f);
      for (std::size_t i = 0; i < n; ++i) x[i] = x_value(i);
      bench::PhasedRows rows{x.data(), y.data(), n, c.rows, gamma.data(), c.beta ? beta.data() : nullptr,
                             cols, 2, c.nontemporal};
      rows.pairs = pairs;
      bench::row_phased(rows, c.threads);
      int failures = 0;
      for (std::size_t i = 0; i < n && failures < 5; ++i)
        if (!(y[i] == kScale * x[i]) && ++failures) ADD_FAILURE() << fmt::format("y[{}] = {}, want {}", i, y[i], kScale * x[i]);
    }
  }
}

// With LayerNorm's arithmetic every element is that of a LayerNorm of its row: mean and variance
// from sums centred on the row's first value, y = (x - mean) * rstd * gamma + beta, checked
// against the same formula in double. A ceiling that skipped an operation (the squares, the
// subtraction of the mean, a parameter) would write values off by far more than f32 rounding.
// Row lengths with vector tails and scalar tails on every target; pairs, threads and
// non-temporal stores as normbench may run it.
TEST(RowPhasedCeiling, ArithmeticCeilingWritesALayerNormOfEachRow) {
  const PhasedCase cases[] = {{1, 1, 1, true, false},    {1, 5, 1, true, false},    {1, 1025, 1, true, false},
                              {1, 2048, 1, true, true},  {2, 768, 1, true, false},  {3, 4097, 1, true, true},
                              {4, 1000, 2, true, false}, {5, 4099, 2, true, true},  {1, 32768, 1, true, false}};
  for (std::int64_t target : simd_targets()) {
    ForcedTarget forced(target);
    for (const PhasedCase& c : cases)
      for (const bool pairs : {false, true}) {
        SCOPED_TRACE(fmt::format("{} {}x{} threads {} nontemporal {} pairs {}", hwy::TargetName(target), c.rows,
                                 c.cols, c.threads, c.nontemporal, pairs));
        const auto n = static_cast<std::size_t>(c.rows * c.cols), cols = static_cast<std::size_t>(c.cols);
        auto x = hwy::AllocateAligned<float>(n), y = hwy::AllocateAligned<float>(n);
        auto gamma = hwy::AllocateAligned<float>(cols), beta = hwy::AllocateAligned<float>(cols);
        ASSERT_TRUE(x && y && gamma && beta);
        for (std::size_t i = 0; i < n; ++i) {
          x[i] = 3.0f + 0.25f * static_cast<float>((i * 37) % 23) - 0.125f * static_cast<float>(i % 5);
          y[i] = NAN;
        }
        for (std::size_t j = 0; j < cols; ++j) {
          gamma[j] = 0.5f + 0.0625f * static_cast<float>(j % 11);
          beta[j] = -1.0f + 0.25f * static_cast<float>(j % 7);
        }
        bench::PhasedRows rows{x.get(), y.get(), n, c.rows, gamma.get(), beta.get(), cols, 1, c.nontemporal};
        rows.pairs = pairs;
        rows.layernorm_arithmetic = true;
        bench::row_phased(rows, c.threads);
        int failures = 0;
        for (std::size_t r = 0; r < static_cast<std::size_t>(c.rows); ++r) {
          const float* xr = x.get() + r * cols;
          double mean = 0, m2 = 0;
          for (std::size_t j = 0; j < cols; ++j) mean += xr[j];
          mean /= static_cast<double>(cols);
          for (std::size_t j = 0; j < cols; ++j) m2 += (xr[j] - mean) * (xr[j] - mean);
          const double rstd = 1 / std::sqrt(m2 / static_cast<double>(cols) + bench::kLayerNormArithmeticEps);
          for (std::size_t j = 0; j < cols && failures < 5; ++j) {
            const double want = (xr[j] - mean) * rstd * gamma[j] + beta[j];
            // f32 sums of up to 32768 terms: a few hundred ulps of the statistics at most
            if (!(std::fabs(y[r * cols + j] - want) <= 2e-4 * (1 + std::fabs(want))) && ++failures)
              ADD_FAILURE() << fmt::format("y[{}] (row {}, column {}) = {}, want {}", r * cols + j, r, j,
                                           y[r * cols + j], want);
          }
        }
      }
  }
}

// LayerNorm's arithmetic needs gamma and beta in f32 and whole rows per thread.
TEST(RowPhasedCeiling, ArithmeticCeilingRejectsWhatIsNotALayerNormOfWholeRows) {
  std::vector<float> x(1 << 20, 1.0f), y(1 << 20), gamma(1 << 20, 1.0f), beta(1 << 20, 0.0f);
  bench::PhasedRows rows{x.data(), y.data(), 64, 1, gamma.data(), nullptr, 64, 1, false};
  rows.layernorm_arithmetic = true;
  EXPECT_THROW(bench::row_phased(rows, 1), Error) << "no beta";
  rows.beta = beta.data();
  rows.params_per_vector = 2;
  EXPECT_THROW(bench::row_phased(rows, 1), Error) << "16-bit rows";
  rows.params_per_vector = 1;
  EXPECT_NO_THROW(bench::row_phased(rows, 1));
  rows.total_floats = rows.param_floats = x.size();  // one row big enough to split over two threads
  EXPECT_THROW(bench::row_phased(rows, 2), Error) << "a share of a row";
}

TEST(RowPhasedCeiling, RejectsAParameterRatioItCannotRead) {
  std::vector<float> x(64, 1.0f), y(64), gamma(64, 1.0f);
  const bench::PhasedRows rows{x.data(), y.data(), 64, 1, gamma.data(), nullptr, 64, 3, false};
  EXPECT_THROW(bench::row_phased(rows, 1), Error);
}

// The stream-scale ceiling: every element of dst scaled, and every float of `extra` read once at
// every thread count (ones: the returned sum counts them exactly below 2^24, whatever the order).
// A split that skipped or repeated part of either would move other bytes than it reports.
TEST(StreamScaleCeiling, ScalesEveryElementAndReadsAllTheParametersAtEveryThreadCount) {
  const std::size_t n = (std::size_t{1} << 18) + 5, n_extra = (std::size_t{1} << 19) + 3;
  hwy::AlignedFreeUniquePtr<float[]> x = hwy::AllocateAligned<float>(n), y = hwy::AllocateAligned<float>(n);
  const std::vector<float> extra(n_extra, 1.0f);
  for (std::size_t i = 0; i < n; ++i) x[i] = x_value(i);
  for (std::int64_t target : simd_targets()) {
    ForcedTarget forced(target);
    for (int threads : {1, 2, 3, 4, 8})
      for (bool nontemporal : {false, true}) {
        SCOPED_TRACE(fmt::format("{} {} threads, nontemporal {}", hwy::TargetName(target), threads, nontemporal));
        std::fill_n(y.get(), n, -1.0f);
        EXPECT_EQ(bench::stream_scale(x.get(), y.get(), n, extra.data(), n_extra, threads, nontemporal),
                  static_cast<float>(n_extra));
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < n; ++i) wrong += y[i] != kScale * x[i];
        EXPECT_EQ(wrong, 0u);
      }
  }
}

}  // namespace
}  // namespace normbench::testing
