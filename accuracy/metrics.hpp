// Error of one implementation's output against the long-double reference (conventions in
// reports/README.md, "Accuracy report").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "normbench/normbench.hpp"
#include "normbench/reference.hpp"

namespace normbench::accuracy {

struct CaseMetrics {
  double normwise_ulp_max = 0;    // max over rows: max|y - ref| / ulp_T(max|ref|)
  double ulp_max = 0;             // max over elements: |y - ref| / ulp_T(round_T(ref))
  double ulp_mean = 0;
  double rel_err_max = 0;         // max |y - ref| / |ref| over ref != 0
  double abs_err_max = 0;
  double frac_correctly_rounded = 0;  // y == round_T(ref)
  double mean_rel_err_max = 0;    // LayerNorm: |mean - ref| / |ref mean| (absolute if ref mean = 0); NaN for RMSNorm
  double rstd_rel_err_max = 0;
  double var_rel_err_max = 0;     // from rstd: |(1/rstd^2 - eps) - var| / var, rows with var > 0
  double nmse = 0;                // sum (y - ref)^2 / sum ref^2 (llama.cpp's test-backend-ops)
  std::int64_t nonfinite_mismatches = 0;
  double kappa_max = 0;           // largest condition number of a row (1 for RMSNorm)
  double bound = 0;               // largest first-order relative bound on the variance over rows
  bool within_bound = true;       // every row's var_rel_err <= 2 * bound + resolution floor
  double worst_row_excess = 0;    // var_rel_err / (2 * bound + floor) of the worst row
  double drift_normwise_ulp_max = 0;  // normwise error against the standard form's reference
  double drift_nmse = 0;              // NMSE against the standard form's reference
};

// x, gamma, beta as handed to the kernel (in b); y/mean/rstd are the kernel's outputs.
CaseMetrics measure(const Implementation& impl, const Problem& p, const Buffers& in, const void* y,
                    const float* mean, const float* rstd, const ReferenceResult& ref);

// The console's account of the cases outside their bound (lines that name each case). Those with
// a finite variance error come first: a kernel less accurate than its algorithm promises. Then
// those whose output is non-finite where the reference is finite: an overflowed accumulator (the
// `range` distribution does this to every implementation) or a negative variance. At most `shown`
// lines, so that thousands of overflows cannot hide a finite excess. "" when both are empty.
std::string exceeded_bound_summary(const std::vector<std::string>& finite_error,
                                   const std::vector<std::string>& nonfinite_output, std::size_t shown = 40);

}  // namespace normbench::accuracy
