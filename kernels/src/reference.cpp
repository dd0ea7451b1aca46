#include "normbench/reference.hpp"

#include <algorithm>
#include <cmath>
#include <span>

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

// Centres the values of one unit in place around their mean, kept as the unevaluated pair
// hi + lo so that x - mean does not inherit the rounding of a large mean; returns the mean.
long double centre(std::span<long double> values) {
  const auto len = static_cast<long double>(values.size());
  CompensatedSum sum;
  for (long double v : values) sum.add(v);
  const long double mean_hi = sum.value() / len;
  CompensatedSum residual;
  for (long double v : values) residual.add(v - mean_hi);
  const long double mean_lo = residual.value() / len;
  for (long double& v : values) v = (v - mean_hi) - mean_lo;
  return mean_hi + mean_lo;
}

long double sum_of_squares(std::span<const long double> values) {
  CompensatedSum squares;
  for (long double v : values) squares.add(v * v);
  return squares.value();
}

// BatchNorm: per channel, the same compensated two-pass over the channel's N*L values (training)
// or the running statistics (inference); the running statistics' update in long double.
ReferenceResult batchnorm_reference(const Problem& p, const Buffers& b) {
  ReferenceResult out;
  const auto channels = static_cast<std::size_t>(units(p)), len = static_cast<std::size_t>(stat_cols(p));
  const DType pt = param_dtype(p.dtype);
  out.y.resize(static_cast<std::size_t>(p.rows * p.cols));
  out.mean.resize(channels);
  out.var.resize(channels);
  out.rstd.resize(channels);
  std::vector<long double> centred(len);
  const long double eps = static_cast<long double>(p.eps);
  const auto at = [&](std::size_t c, std::size_t i) {
    return static_cast<std::size_t>(unit_element(p, static_cast<std::int64_t>(c), static_cast<std::int64_t>(i)));
  };
  for (std::size_t c = 0; c < channels; ++c) {
    for (std::size_t i = 0; i < len; ++i) centred[i] = load_as_long_double(p.dtype, b.x, at(c, i));
    long double mean = 0, var = 0;
    if (p.batchnorm.training) {
      mean = centre(centred);
      const long double m2 = sum_of_squares(centred);
      var = m2 / len;
      if (b.running_mean) {
        const long double m = p.batchnorm.momentum;
        out.running_mean.push_back(m * mean + (1 - m) * load_as_long_double(pt, b.running_mean, c));
        out.running_var.push_back(m * (m2 / (len - 1)) + (1 - m) * load_as_long_double(pt, b.running_var, c));
      }
    } else {
      mean = load_as_long_double(pt, b.running_mean, c);
      var = load_as_long_double(pt, b.running_var, c);
      for (long double& v : centred) v -= mean;
    }
    const long double rstd = 1.0L / std::sqrt(std::max(var, 0.0L) + eps);
    out.mean[c] = mean;
    out.var[c] = var;
    out.rstd[c] = rstd;
    for (std::size_t i = 0; i < len; ++i) {
      long double v = centred[i] * rstd;
      if (b.gamma) v *= load_as_long_double(pt, b.gamma, c);
      if (b.beta) v += load_as_long_double(pt, b.beta, c);
      out.y[at(c, i)] = v;
    }
  }
  return out;
}
}  // namespace

ReferenceResult reference_forward(const Problem& p, const Buffers& b) {
  ReferenceResult out;
  if (!detail::check_problem_and_inputs(p, b, RunConfig{})) return out;
  if (p.norm == Norm::kBatchNorm) return batchnorm_reference(p, b);
  const auto rows = static_cast<std::size_t>(p.rows), n = static_cast<std::size_t>(p.cols);
  out.y.resize(rows * n);
  const auto groups = static_cast<std::size_t>(group_count(p)), len = static_cast<std::size_t>(stat_cols(p));
  out.mean.resize(rows * groups);
  out.var.resize(rows * groups);
  out.rstd.resize(rows * groups);
  const DType pt = param_dtype(p.dtype);
  std::vector<long double> values(n);
  if (p.residual_add) out.h.resize(rows * n);
  unsigned char rounded[8];
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t i = 0; i < n; ++i) values[i] = load_as_long_double(p.dtype, b.x, r * n + i);
    if (p.residual_add)  // h = x + residual, rounded to the dtype as the kernel stores it
      for (std::size_t i = 0; i < n; ++i) {
        store_rounded(p.dtype, rounded, 0, values[i] + load_as_long_double(p.dtype, b.residual, r * n + i));
        values[i] = out.h[r * n + i] = load_as_long_double(p.dtype, rounded, 0);
      }
    for (std::size_t g = 0; g < groups; ++g) {  // one unit: a row, or a GroupNorm group
      const std::span<long double> centred(values.data() + g * len, len);
      const long double mean = centres(p.norm) ? centre(centred) : 0.0L;
      const long double var = sum_of_squares(centred) / (p.variant.unbiased ? len - 1 : len);
      const long double eps = static_cast<long double>(p.eps);
      const long double rstd = p.variant.eps_outside_sqrt ? 1.0L / (std::sqrt(var) + eps) : 1.0L / std::sqrt(var + eps);
      const std::size_t u = r * groups + g;
      out.mean[u] = mean;
      out.var[u] = var;
      out.rstd[u] = rstd;
      for (std::size_t i = 0; i < len; ++i) {
        const auto param = static_cast<std::size_t>(unit_param(p, static_cast<std::int64_t>(r * groups + g),
                                                                 static_cast<std::int64_t>(i)));
        long double v = centred[i] * rstd;
        if (b.gamma) v *= (p.variant.one_plus_gamma ? 1.0L : 0.0L) + load_as_long_double(pt, b.gamma, param);
        if (b.beta) v += load_as_long_double(pt, b.beta, param);
        out.y[r * n + g * len + i] = v;
      }
    }
  }
  return out;
}

}  // namespace normbench
