#pragma once
#include <string>

namespace normbench {
// The registry as CSV: implementation, family, norms, dtypes, accumulator, variance_algorithm,
// deterministic_across_threads, uses_threads, target (the SIMD target that runs here), description.
std::string listing_csv();
}  // namespace normbench
