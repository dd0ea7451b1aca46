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
  const Problem p = variant.apply_to(base);
  PreparedCase c;
  c.problem = p;
  c.x = std::move(x);
  c.has_gamma = variant.gamma;
  c.has_beta = variant.has_beta(p.norm);
  const DType pt = param_dtype(p.dtype);
  c.gamma.resize(static_cast<std::size_t>(param_count(p)) * dtype_size(pt));
  c.beta.resize(c.gamma.size());
  fill_params(pt, param_count(p), seed, c.gamma.data(), c.beta.data());
  if (p.norm == Norm::kBatchNorm) {
    c.running_mean.resize(static_cast<std::size_t>(channel_count(p)) * dtype_size(pt));
    c.running_var.resize(c.running_mean.size());
    Problem batch = p;  // inference normalizes with the statistics a training step would have seen
    batch.batchnorm.training = true;
    const ReferenceResult stats = p.batchnorm.training || stat_cols(p) < 2
                                      ? ReferenceResult{}
                                      : reference_forward(batch, c.inputs());
    for (std::int64_t ch = 0; ch < channel_count(p); ++ch) {
      const auto k = static_cast<std::size_t>(ch);
      store_rounded(pt, c.running_mean.data(), k, stats.mean.empty() ? 0.0 : static_cast<double>(stats.mean[k]));
      store_rounded(pt, c.running_var.data(), k, stats.var.empty() ? 1.0 : static_cast<double>(stats.var[k]));
    }
  }
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
  // BatchNorm's units are channels, scattered over the layout (unit_element).
  const std::int64_t len = stat_cols(p);
  const std::vector<double> values = generate(dist, p.dtype, units(p), len, seed);
  std::vector<unsigned char> x(values.size() * dtype_size(p.dtype));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto u = static_cast<std::int64_t>(i) / len, k = static_cast<std::int64_t>(i) % len;
    store_rounded(p.dtype, x.data(), static_cast<std::size_t>(unit_element(p, u, k)), values[i]);
  }
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
  std::vector<unsigned char> running_mean = c.running_mean, running_var = c.running_var;
  if (!running_mean.empty()) {
    b.running_mean = running_mean.data();
    b.running_var = running_var.data();
  }
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
