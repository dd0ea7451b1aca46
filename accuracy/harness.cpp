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

PreparedCase prepare(const Problem& p, std::vector<unsigned char> x, std::uint64_t seed) {
  PreparedCase c{p, std::move(x), {}, {}, {}};
  const DType pt = param_dtype(p.dtype);
  c.gamma.resize(static_cast<std::size_t>(p.cols) * dtype_size(pt));
  c.beta.resize(c.gamma.size());
  fill_params(pt, p.cols, seed, c.gamma.data(), c.beta.data());
  c.reference = reference_forward(p, c.inputs());
  return c;
}

PreparedCase prepare(const Problem& p, const DistCase& dist, std::uint64_t seed) {
  const std::vector<double> values = generate(dist, p.dtype, p.rows, p.cols, seed);
  std::vector<unsigned char> x(values.size() * dtype_size(p.dtype));
  for (std::size_t i = 0; i < values.size(); ++i) store_rounded(p.dtype, x.data(), i, values[i]);
  return prepare(p, std::move(x), seed);
}

CaseMetrics run_case(const Implementation& impl, const PreparedCase& c, int threads,
                     std::vector<unsigned char>* y_out) {
  const Problem& p = c.problem;
  std::vector<unsigned char> y(c.x.size());
  std::vector<float> mean(static_cast<std::size_t>(p.rows)), rstd(static_cast<std::size_t>(p.rows));
  Buffers b = c.inputs();
  b.y = y.data();
  b.mean = mean.data();
  b.rstd = rstd.data();
  forward(impl, p, b, RunConfig{threads});
  const CaseMetrics m = measure(impl, p, c.inputs(), y.data(), mean.data(), rstd.data(), c.reference);
  if (y_out) *y_out = std::move(y);
  return m;
}

}  // namespace normbench::accuracy
