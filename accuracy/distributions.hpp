// Seeded, reproducible input distributions for the accuracy harness. Values are generated in
// f64 and then rounded to the dtype under test by the caller (the reference reads the rounded
// values), so every dtype sees the same underlying data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "normbench/dtype.hpp"

namespace normbench::accuracy {

inline constexpr std::string_view kDistributions[] = {"normal",   "uniform",  "offset", "outliers",
                                                       "heavy",    "constant", "range",  "special"};
// Condition numbers of the `offset` sweep: 1, 10, ..., 1e8.
std::vector<double> offset_kappas();

// One generated case: a distribution, and for `offset` the target condition number.
struct DistCase {
  std::string dist;
  double kappa_target;  // NaN unless dist == "offset"
  std::string label() const;  // "normal", "offset k=1e+04"
};

// Expands names into cases (offset -> one case per kappa); throws Error for an unknown name.
std::vector<DistCase> expand(const std::vector<std::string>& names);

// rows*cols values of the case, for data that will be stored as dtype t (`range` spans t's
// range). Deterministic in (seed, case, t, rows, cols).
std::vector<double> generate(const DistCase& c, DType t, std::int64_t rows, std::int64_t cols, std::uint64_t seed);

}  // namespace normbench::accuracy
