#include "normbench/reference.hpp"

#include <cmath>

#include "families.hpp"

namespace normbench {
namespace {
// Neumaier's compensated sum: error <= 2u|s| + O(n u^2) sum|x| (u = 2^-64 for x87 long double).
struct CompensatedSum {
  long double sum = 0, comp = 0;
  void add(long double v) {
    const long double t = sum + v;
    comp += std::fabs(sum) >= std::fabs(v) ? (sum - t) + v : (v - t) + sum;
    sum = t;
  }
  long double value() const { return sum + comp; }
};
}  // namespace

ReferenceResult reference_forward(const Problem& p, const Buffers& b) {
  ReferenceResult out;
  if (!detail::check_problem_and_inputs(p, b, RunConfig{})) return out;
  const auto rows = static_cast<std::size_t>(p.rows), n = static_cast<std::size_t>(p.cols);
  out.y.resize(rows * n);
  out.mean.resize(rows);
  out.var.resize(rows);
  out.rstd.resize(rows);
  const DType pt = param_dtype(p.dtype);
  std::vector<long double> centred(n);
  if (p.residual_add) out.h.resize(rows * n);
  unsigned char rounded[8];
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t i = 0; i < n; ++i) centred[i] = load_as_long_double(p.dtype, b.x, r * n + i);
    if (p.residual_add)  // h = x + residual, rounded to the dtype as the kernel stores it
      for (std::size_t i = 0; i < n; ++i) {
        store_rounded(p.dtype, rounded, 0, centred[i] + load_as_long_double(p.dtype, b.residual, r * n + i));
        centred[i] = out.h[r * n + i] = load_as_long_double(p.dtype, rounded, 0);
      }
    long double mean = 0;
    if (p.norm == Norm::kLayerNorm) {
      CompensatedSum sum;
      for (long double v : centred) sum.add(v);
      const long double mean_hi = sum.value() / n;
      CompensatedSum residual;  // mean = mean_hi + mean_lo, kept unevaluated
      for (long double v : centred) residual.add(v - mean_hi);
      const long double mean_lo = residual.value() / n;
      for (long double& v : centred) v = (v - mean_hi) - mean_lo;
      mean = mean_hi + mean_lo;
    }
    CompensatedSum squares;
    for (long double v : centred) squares.add(v * v);
    const long double var = squares.value() / (p.variant.unbiased ? n - 1 : n);
    const long double eps = static_cast<long double>(p.eps);
    const long double rstd = p.variant.eps_outside_sqrt ? 1.0L / (std::sqrt(var) + eps) : 1.0L / std::sqrt(var + eps);
    out.mean[r] = mean;
    out.var[r] = var;
    out.rstd[r] = rstd;
    for (std::size_t i = 0; i < n; ++i) {
      long double v = centred[i] * rstd;
      if (b.gamma) v *= (p.variant.one_plus_gamma ? 1.0L : 0.0L) + load_as_long_double(pt, b.gamma, i);
      if (b.beta) v += load_as_long_double(pt, b.beta, i);
      out.y[r * n + i] = v;
    }
  }
  return out;
}

}  // namespace normbench
