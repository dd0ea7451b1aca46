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

// The variant and its parameters: problem.variant / residual_add come from the preset, and the
// preset decides whether gamma and beta are passed.
struct PreparedCase {
  Problem problem;
  std::vector<unsigned char> x, gamma, beta;  // x in the problem's dtype; gamma/beta in its parameter dtype
  std::vector<unsigned char> residual;        // residual_add: N(0, 1) in the problem's dtype
  bool has_gamma = true, has_beta = true;
  // BatchNorm: running mean and variance (parameter dtype) before the call; torch's initial 0 and
  // 1 in training (the update is exercised), the batch's own statistics in inference.
  std::vector<unsigned char> running_mean, running_var;
  ReferenceResult reference;           // of the variant itself
  ReferenceResult standard_reference;  // of the standard form of the same inputs (empty when identical)
  Buffers inputs() const {
    Buffers b{x.data(), nullptr, has_gamma ? gamma.data() : nullptr, has_beta ? beta.data() : nullptr};
    if (problem.residual_add) b.residual = residual.data();
    if (!running_mean.empty()) {  // read-only here (the reference); run_case hands kernels copies
      b.running_mean = const_cast<unsigned char*>(running_mean.data());
      b.running_var = const_cast<unsigned char*>(running_var.data());
    }
    return b;
  }
};

// The standard form a variant is compared with for its drift: the variant's formula options
// cleared, except Gemma's 1 + w (a reparameterization, not an approximation) and the residual add.
Problem standard_form(const Problem& p);

// Learned-looking parameters: gamma ~ 1 + 0.1 N(0,1), beta ~ 0.1 N(0,1), seeded by (seed, cols).
void fill_params(DType param_dtype, std::int64_t cols, std::uint64_t seed, void* gamma, void* beta);

// Generated inputs of a distribution case, rounded to the problem's dtype, and their reference.
PreparedCase prepare(const Problem& p, const DistCase& dist, std::uint64_t seed,
                     const VariantPreset& variant = variant_presets()[0]);
// The same for data the caller provides (rows*cols elements already in the problem's dtype, in
// the problem's layout).
PreparedCase prepare(const Problem& p, std::vector<unsigned char> x, std::uint64_t seed,
                     const VariantPreset& variant = variant_presets()[0]);

// Runs `impl` on the case and measures it (drift_* against the standard form); y_out (optional)
// receives the output.
CaseMetrics run_case(const Implementation& impl, const PreparedCase& c, int threads,
                     std::vector<unsigned char>* y_out = nullptr);

}  // namespace normbench::accuracy
