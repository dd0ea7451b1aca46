#include "distributions.hpp"

#include <cmath>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "normbench/error.hpp"

namespace normbench::accuracy {

std::vector<double> offset_kappas() {
  std::vector<double> k;
  for (int e = 0; e <= 8; ++e) k.push_back(std::pow(10.0, e));
  return k;
}

std::string DistCase::label() const {
  return std::isnan(kappa_target) ? dist : fmt::format("{} k={:.0e}", dist, kappa_target);
}

std::vector<DistCase> expand(const std::vector<std::string>& names) {
  std::vector<DistCase> out;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const std::string& n : names) {
    bool known = false;
    for (std::string_view d : kDistributions) known |= d == n;
    if (!known)
      throw Error(fmt::format("unknown distribution '{}' (expected normal, uniform, offset, outliers, heavy, "
                              "constant, range or special)", n));
    if (n == "offset")
      for (double k : offset_kappas()) out.push_back({n, k});
    else
      out.push_back({n, nan});
  }
  return out;
}

namespace {
std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

// log10 of the magnitudes `range` draws from, per dtype: most of the finite range, including
// subnormals and values whose squares overflow the accumulator.
std::pair<double, double> range_exponents(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kBF16: return {-40.0, 30.0};  // subnormal below 1.2e-38; x^2 overflows f32 above 1.8e19
    case DType::kF16: return {-7.5, 4.8};     // subnormal below 6.1e-5; max 65504
    case DType::kF64: return {-310.0, 300.0}; // subnormal below 2.2e-308; x^2 overflows f64 above 1.3e154
  }
  return {0, 0};
}
}  // namespace

std::vector<double> generate(const DistCase& c, DType t, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  const std::string key = fmt::format("{}/{}/{}/{}x{}", c.label(), dtype_name(t), seed, rows, cols);
  std::mt19937_64 rng(fnv1a(key));
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> x(static_cast<std::size_t>(rows * cols));
  const auto at = [&](std::int64_t r, std::int64_t i) -> double& { return x[static_cast<std::size_t>(r * cols + i)]; };
  const double inf = std::numeric_limits<double>::infinity();

  if (c.dist == "normal") {
    for (double& v : x) v = normal(rng);
  } else if (c.dist == "uniform") {
    for (double& v : x) v = 2 * unit(rng) - 1;
  } else if (c.dist == "offset") {
    // mean m and unit spread: kappa = sqrt(1 + n mean^2 / S) ~ sqrt(1 + m^2) for large n.
    const double m = std::sqrt(c.kappa_target * c.kappa_target - 1);
    for (double& v : x) v = m + normal(rng);
  } else if (c.dist == "outliers") {
    // LLM-like activations: a few fixed channels 100-10,000x larger than the rest.
    std::vector<double> scale(static_cast<std::size_t>(cols), 1.0);
    const std::int64_t count = std::max<std::int64_t>(1, cols / 256);
    for (std::int64_t k = 0; k < count; ++k)
      scale[static_cast<std::size_t>(rng() % cols)] = std::pow(10.0, 2 + 2 * unit(rng));
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t i = 0; i < cols; ++i) at(r, i) = normal(rng) * scale[static_cast<std::size_t>(i)];
  } else if (c.dist == "heavy") {
    // Student-t with 2 degrees of freedom: z / sqrt(chi2_2 / 2), and chi2_2 / 2 ~ Exp(1).
    std::exponential_distribution<double> expo(1.0);
    for (double& v : x) v = normal(rng) / std::sqrt(expo(rng));
  } else if (c.dist == "constant") {
    // Even rows constant (variance 0); odd rows two neighbouring values of the dtype, so the rows
    // differ only in the last bit.
    for (std::int64_t r = 0; r < rows; ++r) {
      const double base = static_cast<double>(round_to_dtype(t, normal(rng)));
      const double next = static_cast<double>(round_to_dtype(t, base + static_cast<double>(ulp_of(t, base))));
      for (std::int64_t i = 0; i < cols; ++i) at(r, i) = (r % 2 == 0 || (rng() & 1)) ? base : next;
    }
  } else if (c.dist == "range") {
    const auto [lo, hi] = range_exponents(t);
    for (double& v : x) v = ((rng() & 1) ? 1 : -1) * std::pow(10.0, lo + (hi - lo) * unit(rng));
  } else if (c.dist == "special") {
    // Row 0: a NaN; row 1: +Inf; row 2: -Inf; row 3: +Inf and -Inf; further rows clean.
    for (double& v : x) v = normal(rng);
    const double specials[][2] = {{std::nan(""), std::nan("")}, {inf, inf}, {-inf, -inf}, {inf, -inf}};
    for (std::int64_t r = 0; r < std::min<std::int64_t>(rows, 4); ++r) {
      at(r, static_cast<std::int64_t>(rng() % cols)) = specials[r][0];
      at(r, static_cast<std::int64_t>(rng() % cols)) = specials[r][1];
    }
  } else {
    throw Error(fmt::format("unknown distribution '{}'", c.dist));
  }
  return x;
}

}  // namespace normbench::accuracy
