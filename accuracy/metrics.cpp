#include "metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace normbench::accuracy {

CaseMetrics measure(const Implementation& impl, const Problem& p, const Buffers& in, const void* y,
                    const float* mean, const float* rstd, const ReferenceResult& ref) {
  (void)in;
  CaseMetrics m;
  const DType t = p.dtype;
  const long double u = accumulator_unit_roundoff(impl, t);
  const long double u_f32 = unit_roundoff(DType::kF32);
  long double ulp_sum = 0, err2 = 0, ref2 = 0;
  std::int64_t counted = 0, correct = 0;
  const bool layernorm = centres(p.norm);
  // Units: rows, GroupNorm's row-and-group blocks (contiguous runs of `len` elements), or
  // BatchNorm's channels (strided; unit_element says where).
  const std::int64_t n_units = units(p), len = stat_cols(p);
  m.mean_rel_err_max = layernorm ? 0 : std::numeric_limits<double>::quiet_NaN();
  for (std::int64_t r = 0; r < n_units; ++r) {
    long double row_err = 0, row_ref = 0;
    bool row_finite = true;   // reference and output both finite everywhere
    bool ref_finite = true;   // reference finite everywhere
    for (std::int64_t i = 0; i < len; ++i) {
      const auto k = static_cast<std::size_t>(unit_element(p, r, i));
      const long double got = load_as_long_double(t, y, k), want = ref.y[k];
      ref_finite = ref_finite && std::isfinite(want);
      if (std::isfinite(got) != std::isfinite(want) || std::isnan(got) != std::isnan(want)) {
        ++m.nonfinite_mismatches;
        row_finite = false;
        continue;
      }
      if (!std::isfinite(want)) {
        row_finite = false;
        continue;
      }
      const long double rounded = round_to_dtype(t, want);
      const long double err = std::fabs(got - want);
      if (std::isfinite(rounded)) {
        const long double ulp_err = err / ulp_of(t, rounded);
        m.ulp_max = std::max(m.ulp_max, static_cast<double>(ulp_err));
        ulp_sum += ulp_err;
      }
      ++counted;
      correct += got == rounded;
      if (want != 0) m.rel_err_max = std::max(m.rel_err_max, static_cast<double>(err / std::fabs(want)));
      m.abs_err_max = std::max(m.abs_err_max, static_cast<double>(err));
      err2 += err * err;
      ref2 += want * want;
      row_err = std::max(row_err, err);
      row_ref = std::max(row_ref, std::fabs(want));
    }
    if (counted > 0)
      m.normwise_ulp_max = std::max(m.normwise_ulp_max, static_cast<double>(row_err / ulp_of(t, row_ref)));

    // Statistics, on rows where they are defined (finite reference, variance > 0).
    const long double var = ref.var[r];
    if (!ref_finite || !std::isfinite(var)) continue;
    long double bound = 0, allowed = 0, kappa = 1;
    if (var > 0) {
      kappa = layernorm ? std::sqrt(1 + ref.mean[r] * ref.mean[r] / var) : 1.0L;
      bound = layernorm ? variance_error_bound(impl.variance_algorithm, static_cast<double>(len),
                                               static_cast<double>(kappa), static_cast<double>(u))
                        : len * u;  // RMSNorm: a sum of non-negative terms
      // rstd arrives in f32, so var_hat resolves the variance only to ~4 u_f32 (var + eps) / var.
      allowed = 2 * bound + 4 * u_f32 * (var + p.eps) / var + 4 * u;
      m.kappa_max = std::max(m.kappa_max, static_cast<double>(kappa));
      m.bound = std::max(m.bound, static_cast<double>(bound));
    }
    if (!row_finite) {  // finite reference, non-finite output (an overflowed accumulator): failed outright
      m.var_rel_err_max = m.worst_row_excess = std::numeric_limits<double>::infinity();
      m.within_bound = false;
      continue;
    }
    if (layernorm) {
      const long double mu = ref.mean[r];
      const long double dm = std::fabs(mean[r] - mu);
      m.mean_rel_err_max = std::max(m.mean_rel_err_max, static_cast<double>(mu != 0 ? dm / std::fabs(mu) : dm));
    }
    m.rstd_rel_err_max = std::max(m.rstd_rel_err_max, static_cast<double>(std::fabs(rstd[r] - ref.rstd[r]) / ref.rstd[r]));
    if (var <= 0) continue;  // constant row: the variance has no relative error to speak of
    const long double inv_rstd = 1.0L / static_cast<long double>(rstd[r]);
    const long double var_hat = p.variant.eps_outside_sqrt ? (inv_rstd - p.eps) * (inv_rstd - p.eps)
                                                           : inv_rstd * inv_rstd - p.eps;
    const long double var_err = std::isfinite(var_hat) ? std::fabs(var_hat - var) / var
                                                       : std::numeric_limits<long double>::infinity();
    m.var_rel_err_max = std::max(m.var_rel_err_max, static_cast<double>(var_err));
    m.worst_row_excess = std::max(m.worst_row_excess, static_cast<double>(var_err / allowed));
    if (!(var_err <= allowed)) m.within_bound = false;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (m.kappa_max == 0) m.kappa_max = m.bound = nan;  // no row with a variance to judge
  if (std::isnan(m.kappa_max) && m.var_rel_err_max == 0) m.var_rel_err_max = nan;
  if (counted == 0) m.normwise_ulp_max = m.ulp_max = m.rel_err_max = m.abs_err_max = nan;  // nothing finite to compare
  m.ulp_mean = counted ? static_cast<double>(ulp_sum / counted) : std::numeric_limits<double>::quiet_NaN();
  m.frac_correctly_rounded = counted ? static_cast<double>(correct) / counted : std::numeric_limits<double>::quiet_NaN();
  m.nmse = ref2 > 0 ? static_cast<double>(err2 / ref2) : (err2 > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  return m;
}

std::string exceeded_bound_summary(const std::vector<std::string>& finite_error,
                                   const std::vector<std::string>& nonfinite_output, std::size_t shown) {
  const std::size_t total = finite_error.size() + nonfinite_output.size();
  if (total == 0) return "";
  std::string out = fmt::format(
      "!!! {} case(s) EXCEED their algorithm's theoretical variance bound: {} with a finite variance error, {} with a "
      "non-finite output where the reference is finite (an overflowed accumulator or a negative variance)\n",
      total, finite_error.size(), nonfinite_output.size());
  std::size_t listed = 0;
  for (const auto* lines : {&finite_error, &nonfinite_output})
    for (std::size_t i = 0; i < lines->size() && listed < shown; ++i, ++listed) out += "!!!   " + (*lines)[i] + "\n";
  if (total > listed) out += fmt::format("!!!   ... and {} more (see the CSV)\n", total - listed);
  return out;
}

}  // namespace normbench::accuracy
