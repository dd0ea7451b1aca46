#include "harness.hpp"

#include <random>

namespace normbench::accuracy {

void fill_params(DType pt, std::int64_t cols, std::uint64_t seed, void* gamma, void* beta) {
  std::mt19937_64 rng(seed * 7919 + static_cast<std::uint64_t>(cols));
  std::normal_distribution<double> normal(0.0, 1.0);
  for (std::int64_t i = 0; i < cols; ++i) {
    store_rounded(pt, gamma, static_cast<std::size_t>(i), 1 + 0.1 * normal(rng));
    store_rounded(pt, beta, static_cast<std::size_t>(i), 0.1 * normal(rng));
  }
}

Problem standard_form(const Problem& p) {
  Problem s = p;
  s.variant = Variant{};
  s.variant.one_plus_gamma = p.variant.one_plus_gamma;
  return s;
}

PreparedCase prepare(const Problem& base, std::vector<unsigned char> x, std::uint64_t seed,
                     const VariantPreset& variant) {
  Problem p = base;
  p.variant = variant.variant;
  p.residual_add = variant.residual_add;
  PreparedCase c{p, std::move(x), {}, {}, {}, variant.gamma, variant_has_beta(variant, p.norm), {}, {}};
  const DType pt = param_dtype(p.dtype);
  c.gamma.resize(static_cast<std::size_t>(param_count(p)) * dtype_size(pt));
  c.beta.resize(c.gamma.size());
  fill_params(pt, param_count(p), seed, c.gamma.data(), c.beta.data());
  if (p.residual_add) {
    c.residual.resize(c.x.size());
    std::mt19937_64 rng(seed * 104729 + 17);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (std::size_t i = 0; i < static_cast<std::size_t>(p.rows * p.cols); ++i)
      store_rounded(p.dtype, c.residual.data(), i, normal(rng));
  }
  c.reference = reference_forward(p, c.inputs());
  const Problem standard = standard_form(p);
  if (!(standard.variant == p.variant)) c.standard_reference = reference_forward(standard, c.inputs());
  return c;
}

PreparedCase prepare(const Problem& p, const DistCase& dist, std::uint64_t seed, const VariantPreset& variant) {
  // Per unit (row, or GroupNorm group): the offset rows get their condition number per unit.
  const std::vector<double> values = generate(dist, p.dtype, units(p), stat_cols(p), seed);
  std::vector<unsigned char> x(values.size() * dtype_size(p.dtype));
  for (std::size_t i = 0; i < values.size(); ++i) store_rounded(p.dtype, x.data(), i, values[i]);
  return prepare(p, std::move(x), seed, variant);
}

CaseMetrics run_case(const Implementation& impl, const PreparedCase& c, int threads,
                     std::vector<unsigned char>* y_out) {
  const Problem& p = c.problem;
  std::vector<unsigned char> y(c.x.size()), h(p.residual_add ? c.x.size() : 0);
  std::vector<float> mean(static_cast<std::size_t>(units(p))), rstd(static_cast<std::size_t>(units(p)));
  Buffers b = c.inputs();
  b.y = y.data();
  b.mean = mean.data();
  b.rstd = rstd.data();
  b.h = h.data();
  forward(impl, p, b, RunConfig{threads});
  CaseMetrics m = measure(impl, p, c.inputs(), y.data(), mean.data(), rstd.data(), c.reference);
  m.drift_normwise_ulp_max = m.normwise_ulp_max;
  m.drift_nmse = m.nmse;
  if (!c.standard_reference.y.empty()) {
    const CaseMetrics drift =
        measure(impl, standard_form(p), c.inputs(), y.data(), mean.data(), rstd.data(), c.standard_reference);
    m.drift_normwise_ulp_max = drift.normwise_ulp_max;
    m.drift_nmse = drift.nmse;
  }
  if (y_out) *y_out = std::move(y);
  return m;
}

}  // namespace normbench::accuracy
