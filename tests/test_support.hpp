// Shared helpers for the kernel tests: typed buffers, seeded inputs, and the error bound.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include "normbench/normbench.hpp"
#include "normbench/reference.hpp"
#include "normbench/simd_convert.hpp"

namespace normbench {
// Readable parameter names in ctest's listing.
inline void PrintTo(const Implementation* impl, std::ostream* os) { *os << impl->name; }
}  // namespace normbench

namespace normbench::testing {

// A byte buffer whose data() is offset by one element from a 64-byte boundary, so kernels see
// element-aligned but vector-unaligned pointers; aligned_data() is that boundary itself (the same
// size_bytes() from there), for the paths that start aligned.
class Buffer {
 public:
  Buffer(std::size_t count, std::size_t elem_size)
      : elem_(elem_size), bytes_(count * elem_size + 64 + elem_size) {}
  void* data() { return base() + elem_; }
  void* aligned_data() { return base(); }
  const void* data() const { return const_cast<Buffer*>(this)->data(); }
  std::size_t size_bytes() const { return bytes_.size() - 64 - elem_; }

 private:
  unsigned char* base() {
    auto p = reinterpret_cast<std::uintptr_t>(bytes_.data());
    return bytes_.data() + ((64 - p % 64) % 64);
  }
  std::size_t elem_;
  std::vector<unsigned char> bytes_;
};

struct Inputs {
  Problem problem;
  Buffer x, gamma, beta;
  bool has_gamma, has_beta;
  Inputs(const Problem& p, bool with_gamma, bool with_beta)
      : problem(p),
        x(static_cast<std::size_t>(p.rows * p.cols), dtype_size(p.dtype)),
        gamma(static_cast<std::size_t>(p.cols), dtype_size(param_dtype(p.dtype))),
        beta(static_cast<std::size_t>(p.cols), dtype_size(param_dtype(p.dtype))),
        has_gamma(with_gamma),
        has_beta(with_beta) {}
  Buffers buffers(void* y, float* mean = nullptr, float* rstd = nullptr) const {
    return Buffers{x.data(), y, has_gamma ? gamma.data() : nullptr, has_beta ? beta.data() : nullptr,
                   mean, rstd};
  }
};

// x = offset + N(0, 1) rounded to the dtype; gamma in [0.5, 1.5], beta in [-0.5, 0.5].
inline void fill_inputs(Inputs& in, std::uint64_t seed, double offset = 0.5) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(-0.5, 0.5);
  const Problem& p = in.problem;
  for (std::size_t i = 0; i < static_cast<std::size_t>(p.rows * p.cols); ++i)
    store_rounded(p.dtype, in.x.data(), i, offset + normal(rng));
  const DType pt = param_dtype(p.dtype);
  for (std::size_t i = 0; i < static_cast<std::size_t>(p.cols); ++i) {
    store_rounded(pt, in.gamma.data(), i, 1.0 + unit(rng));
    store_rounded(pt, in.beta.data(), i, unit(rng));
  }
}

// Bound on |y_i - ref_i| for one output element, derived to first order.
//
// Kernels accumulate in A (unit roundoff u: f32 for f32/bf16/f16, f64 for f64) and round once
// to the output dtype T. With sequential sums over n elements (the worst case; SIMD kernels with
// several accumulators do better):
//   mean:  |d mean| <= (n-1) u mean|x|                              (recursive summation)
//   var:   |d var|/var <= v, the algorithm's bound (variance_error_bound: two-pass n u +
//          n^2 kappa^2 u^2, Welford n kappa u, textbook 3 n kappa^2 u; RMSNorm's mean of squares
//          of positive terms: n u), plus 2u for the division; so |d rstd|/rstd <= v/2 + 3u
//   apply: three roundings of (x-mean)*rstd*gamma + beta: 3u |z gamma| + u |beta|
// With z_i = (x_i - mean) * rstd and a = mean|x| / sigma (0 for RMSNorm, whose mean is 0):
//   e_i = (n+1) u a |gamma_i| + (v/2 + 6u) |z_i gamma_i| + u |beta_i|
// and the final rounding to T adds half an ulp of T at |ref_i| + e_i. The test allows 2 e_i
// for second-order terms. kappa and a are those of the row, from the reference.
struct RowBound {
  long double u;       // unit roundoff of the accumulator
  long double n;       // elements per row
  long double a;       // mean|x| / sigma
  long double v;       // relative bound on the variance
};

inline long double element_bound(DType t, const RowBound& rb, long double ref, long double z_gamma,
                                 long double gamma, long double beta) {
  const long double e = 2.0L * ((rb.n + 1) * rb.u * rb.a * std::fabs(gamma) +
                                (rb.v / 2 + 6 * rb.u) * std::fabs(z_gamma) + rb.u * std::fabs(beta));
  return 0.5L * ulp_of(t, std::fabs(ref) + e) + e;
}

// Checks y (dtype of p) and the per-unit statistics (rows, GroupNorm groups, BatchNorm channels)
// against the reference with element_bound. Returns the number of violations (reports the first few).
inline int check_against_reference(const Implementation& impl, const Inputs& in, const void* y, const float* mean,
                            const float* rstd, const ReferenceResult& ref) {
  const Problem& p = in.problem;
  const DType pt = param_dtype(p.dtype);
  const long double u = accumulator_unit_roundoff(impl, p.dtype);
  const std::int64_t len = stat_cols(p);
  int failures = 0;
  for (std::int64_t r = 0; r < units(p); ++r) {
    long double mean_abs = 0;
    for (std::int64_t i = 0; i < len; ++i)
      mean_abs += std::fabs(load_as_long_double(p.dtype, in.x.data(), unit_element(p, r, i)));
    mean_abs /= len;
    RowBound rb{u, static_cast<long double>(len), 0, len * u};
    if (centres(p.norm) && ref.var[r] > 0) {
      const long double kappa = std::sqrt(1 + ref.mean[r] * ref.mean[r] / ref.var[r]);
      rb.a = mean_abs / std::sqrt(ref.var[r]);
      rb.v = variance_error_bound(impl.variance_algorithm, len, kappa, u);
    }
    for (std::int64_t i = 0; i < len; ++i) {
      const auto k = static_cast<std::size_t>(unit_element(p, r, i));
      const auto param = static_cast<std::size_t>(unit_param(p, r, i));
      const long double g = in.has_gamma ? load_as_long_double(pt, in.gamma.data(), param) : 1.0L;
      const long double b = in.has_beta ? load_as_long_double(pt, in.beta.data(), param) : 0.0L;
      const long double bound = element_bound(p.dtype, rb, ref.y[k], ref.y[k] - b, g, b);
      const long double got = load_as_long_double(p.dtype, y, k);
      if (!(std::fabs(got - ref.y[k]) <= bound) && failures++ < 5)
        ADD_FAILURE() << fmt::format("unit {} element {}: got {:.10g}, reference {:.10g}, |err| {:.3g} > bound {:.3g}",
                                     r, i, static_cast<double>(got), static_cast<double>(ref.y[k]),
                                     static_cast<double>(std::fabs(got - ref.y[k])), static_cast<double>(bound));
    }
    // Per-unit statistics, delivered in f32: the same first-order bounds, plus f32 rounding.
    const long double mean_bound = 2 * (len + 1) * u * mean_abs + ulp_of(DType::kF32, ref.mean[r]);
    const long double rstd_bound = 2 * (rb.v / 2 + 6 * u) * ref.rstd[r] + ulp_of(DType::kF32, ref.rstd[r]);
    if (!(std::fabs(mean[r] - ref.mean[r]) <= mean_bound) && failures++ < 5)
      ADD_FAILURE() << fmt::format("unit {}: mean {} vs reference {}", r, mean[r], static_cast<double>(ref.mean[r]));
    if (!(std::fabs(rstd[r] - ref.rstd[r]) <= rstd_bound) && failures++ < 5)
      ADD_FAILURE() << fmt::format("unit {}: rstd {} vs reference {}", r, rstd[r], static_cast<double>(ref.rstd[r]));
  }
  return failures;
}

// Restores Highway's normal target selection when a test that forced one ends.
struct ForcedTarget {
  explicit ForcedTarget(std::int64_t target) {
    if (target != 0) hwy::SetSupportedTargetsForTest(target);
  }
  ~ForcedTarget() { hwy::SetSupportedTargetsForTest(0); }
  ForcedTarget(const ForcedTarget&) = delete;
  ForcedTarget& operator=(const ForcedTarget&) = delete;
};

// Allows or forbids AVX512-BF16 rounding in the highway kernels for a scope, then restores it.
struct HardwareBf16Rounding {
  explicit HardwareBf16Rounding(bool allowed) : previous(set_hardware_bf16_rounding(allowed)) {}
  ~HardwareBf16Rounding() { set_hardware_bf16_rounding(previous); }
  HardwareBf16Rounding(const HardwareBf16Rounding&) = delete;
  HardwareBf16Rounding& operator=(const HardwareBf16Rounding&) = delete;
  bool previous;
};

// The settings of HardwareBf16Rounding this CPU can tell apart: both where it has AVX512-BF16.
inline std::vector<bool> bf16_rounding_settings() {
  if (hardware_bf16_rounding_available()) return {false, true};
  return {false};
}

// Targets a SIMD family runs on in these tests: every compiled target this CPU supports.
inline std::vector<std::int64_t> simd_targets() { return hwy::SupportedAndGeneratedTargets(); }

inline bool is_simd(const Implementation& impl) { return impl.highway_dispatch; }

// The norms whose units are rows or blocks of a row: all but BatchNorm, whose statistics couple the
// rows (test_batchnorm.cpp holds its versions of the row-by-row properties).
inline std::vector<Norm> row_norms() { return {Norm::kLayerNorm, Norm::kRMSNorm, Norm::kGroupNorm}; }

// Expects call() to throw a normbench::Error whose message contains `needle` (callers check, each
// in its own way, that nothing was written before the error).
template <class Call>
void expect_error_mentioning(const Call& call, std::string_view needle) {
  try {
    call();
    ADD_FAILURE() << "accepted; expected an error mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string_view(e.what()).find(needle), std::string_view::npos) << e.what();
  }
}

inline std::string sanitize(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

}  // namespace normbench::testing
