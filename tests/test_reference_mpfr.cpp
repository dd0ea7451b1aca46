// The long-double reference against MPFR at 256 bits, on rows with condition number up to 1e8.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>

#include <fmt/format.h>

#include "test_support.hpp"

namespace normbench::testing {
namespace {

class Mp {  // minimal RAII wrapper
 public:
  Mp() { mpfr_init2(v_, 256); mpfr_set_zero(v_, 1); }
  ~Mp() { mpfr_clear(v_); }
  Mp(const Mp&) = delete;
  Mp& operator=(const Mp&) = delete;
  mpfr_ptr get() { return v_; }
  long double ld() const { return mpfr_get_ld(v_, MPFR_RNDN); }

 private:
  mpfr_t v_;
};

struct Exact {
  std::vector<long double> y;
  long double mean, var, rstd;
};

// y = (x - mean) / sqrt(var + eps) * gamma + beta for one row, every operation at 256 bits.
Exact exact_row(const Problem& p, const Inputs& in) {
  const std::size_t n = static_cast<std::size_t>(p.cols);
  const DType pt = param_dtype(p.dtype);
  Mp sum, mean, t, ssd, var, rstd;
  for (std::size_t i = 0; i < n; ++i)
    mpfr_add_d(sum.get(), sum.get(), static_cast<double>(load_as_long_double(p.dtype, in.x.data(), i)), MPFR_RNDN);
  if (centres(p.norm)) mpfr_div_ui(mean.get(), sum.get(), n, MPFR_RNDN);
  for (std::size_t i = 0; i < n; ++i) {
    mpfr_set_ld(t.get(), load_as_long_double(p.dtype, in.x.data(), i), MPFR_RNDN);
    mpfr_sub(t.get(), t.get(), mean.get(), MPFR_RNDN);
    mpfr_fma(ssd.get(), t.get(), t.get(), ssd.get(), MPFR_RNDN);
  }
  mpfr_div_ui(var.get(), ssd.get(), n, MPFR_RNDN);
  mpfr_add_d(rstd.get(), var.get(), p.eps, MPFR_RNDN);
  mpfr_rec_sqrt(rstd.get(), rstd.get(), MPFR_RNDN);
  Exact e{std::vector<long double>(n), mean.ld(), var.ld(), rstd.ld()};
  for (std::size_t i = 0; i < n; ++i) {
    mpfr_set_ld(t.get(), load_as_long_double(p.dtype, in.x.data(), i), MPFR_RNDN);
    mpfr_sub(t.get(), t.get(), mean.get(), MPFR_RNDN);
    mpfr_mul(t.get(), t.get(), rstd.get(), MPFR_RNDN);
    mpfr_mul_d(t.get(), t.get(), static_cast<double>(load_as_long_double(pt, in.gamma.data(), i)), MPFR_RNDN);
    mpfr_add_d(t.get(), t.get(), static_cast<double>(load_as_long_double(pt, in.beta.data(), i)), MPFR_RNDN);
    e.y[i] = t.ld();
  }
  return e;
}

// The reference keeps the mean as hi + lo and compensates every sum, so its error does not grow
// with kappa: x - mean is formed with error <= 2u|x - mean| + u^2|mean|, the compensated sums
// are good to ~2u, and the apply step adds ~3u. Bound used: 16 u_ld relative to the terms of y
// (u_ld = 2^-64), and 16 u_ld relative for mean, var and rstd.
TEST(ReferenceVsMpfr, AccurateToLongDoubleAtEveryConditionNumber) {
  const long double u = std::ldexp(1.0L, -64);
  for (DType t : {DType::kF64, DType::kF32})
    for (Norm norm : row_norms())  // BatchNorm: test_batchnorm.cpp checks it equals this reference
      for (std::int64_t n : {7, 768, 4096})
        for (double kappa : {1.0, 1e2, 1e4, 1e6, 1e8}) {
          SCOPED_TRACE(fmt::format("{} {} n={} kappa={:g}", dtype_name(t), norm_name(norm), n, kappa));
          const Problem p{norm, t, 1, n, 1e-5};
          Inputs in(p, true, true);
          // kappa = sqrt(1 + mean^2/sigma^2) for unit sigma.
          fill_inputs(in, static_cast<std::uint64_t>(n) * 31 + static_cast<std::uint64_t>(std::log10(kappa)),
                      std::sqrt(kappa * kappa - 1));
          const ReferenceResult ref = reference_forward(p, in.buffers(nullptr));
          const Exact ex = exact_row(p, in);
          EXPECT_LE(std::fabs(ref.mean[0] - ex.mean), 16 * u * std::fabs(ex.mean));
          EXPECT_LE(std::fabs(ref.var[0] - ex.var), 16 * u * ex.var);
          EXPECT_LE(std::fabs(ref.rstd[0] - ex.rstd), 16 * u * ex.rstd);
          const DType pt = param_dtype(t);
          for (std::int64_t i = 0; i < n; ++i) {
            const long double g = load_as_long_double(pt, in.gamma.data(), i);
            const long double b = load_as_long_double(pt, in.beta.data(), i);
            const long double scale = std::fabs(ex.y[i] - b) + std::fabs(g) + std::fabs(b);
            ASSERT_LE(std::fabs(ref.y[i] - ex.y[i]), 16 * u * scale) << "element " << i;
          }
        }
}

}  // namespace
}  // namespace normbench::testing
