// One accuracy case end to end: inputs generated (or given), the reference, and the metrics of an
// implementation's output. Shared by normbench-accuracy and the tests.
#pragma once

#include <cstdint>
#include <vector>

#include "distributions.hpp"
#include "metrics.hpp"
#include "normbench/normbench.hpp"
#include "normbench/reference.hpp"

namespace normbench::accuracy {

struct PreparedCase {
  Problem problem;
  std::vector<unsigned char> x, gamma, beta;  // x in the problem's dtype; gamma/beta in its parameter dtype
  ReferenceResult reference;
  Buffers inputs() const { return Buffers{x.data(), nullptr, gamma.data(), beta.data()}; }
};

// Learned-looking parameters: gamma ~ 1 + 0.1 N(0,1), beta ~ 0.1 N(0,1), seeded by (seed, cols).
void fill_params(DType param_dtype, std::int64_t cols, std::uint64_t seed, void* gamma, void* beta);

// Generated inputs of a distribution case, rounded to the problem's dtype, and their reference.
PreparedCase prepare(const Problem& p, const DistCase& dist, std::uint64_t seed);
// The same for data the caller provides (rows*cols elements already in the problem's dtype).
PreparedCase prepare(const Problem& p, std::vector<unsigned char> x, std::uint64_t seed);

// Runs `impl` on the case and measures it; y_out (optional) receives the output.
CaseMetrics run_case(const Implementation& impl, const PreparedCase& c, int threads,
                     std::vector<unsigned char>* y_out = nullptr);

}  // namespace normbench::accuracy
