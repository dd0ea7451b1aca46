// The long-double reference: what every implementation is measured against.
//
// Computed from the rounded inputs the kernel actually receives (read exactly from the
// kernel's dtype). Two-pass with Neumaier-compensated sums; the mean is kept as an unevaluated
// pair hi + lo so that x - mean does not inherit the rounding error of a large mean (the error
// of y stays O(u_ld) independent of the condition number). Checked against MPFR in the tests.
#pragma once

#include <vector>

#include "normbench/normbench.hpp"

namespace normbench {

struct ReferenceResult {
  std::vector<long double> y;     // rows*cols, unrounded
  std::vector<long double> mean;  // units(p): per row, or per row and group (0 for RMSNorm)
  std::vector<long double> var;   // units(p): variance (biased unless unbiased) or mean square (RMSNorm)
  std::vector<long double> rstd;  // units(p): 1/sqrt(var + eps), or 1/(sqrt(var) + eps) for eps-outside
  std::vector<long double> h;     // residual_add: x + residual rounded to the dtype (else empty)
  // BatchNorm training with running statistics: their updated values, unrounded (else empty).
  std::vector<long double> running_mean, running_var;
};

// Validates like forward() (no output buffer needed; b.y, b.mean, b.rstd and b.h are ignored).
// Follows Problem::variant (unbiased: var = M2/(n-1), reported in `var`; eps outside the sqrt;
// 1 + gamma) except storage_compute: its reference is the exact standard form, so its error shows
// what the upcast buys. residual_add: the norm of x + residual rounded to the dtype.
// BatchNorm: units are channels (unit_element says where their values are); inference reads
// the running statistics (mean, var report them); b.running_* are read, never written.
ReferenceResult reference_forward(const Problem& p, const Buffers& b);

}  // namespace normbench
