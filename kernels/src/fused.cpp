// fused: one pass accumulating sum(x) and sum(x^2); var = E[x^2] - E[x]^2.
// The fast textbook formula, kept as it is so the accuracy harness can show where it breaks:
// its variance error grows like N*kappa^2*u and is total once kappa^2 * u > 1.
// The only guard is the clamp of a negative variance to 0 (as PyTorch does), which keeps
// rstd finite rather than hiding the cancellation.
#include <algorithm>

#include "families.hpp"
#include "scalar_rows.hpp"

namespace normbench::detail {
namespace {
struct SumAndSumOfSquares {
  template <class X, class T = ElementOf<X>>
  static RowStats<Acc<T>> layernorm(X x, std::int64_t n) {
    using A = Acc<T>;
    A sum = 0, sumsq = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const A v = widen(x[i]);
      sum += v;
      sumsq += v * v;
    }
    const A mean = sum / static_cast<A>(n);
    const A var = sumsq / static_cast<A>(n) - mean * mean;
    return {mean, var < 0 ? A(0) : var};  // clamps a negative variance; NaN (overflow) stays NaN
  }
  template <class X, class T = ElementOf<X>>
  static RowStats<Acc<T>> rmsnorm(X x, std::int64_t n) {
    return mean_square_sequential(x, n);
  }
};
}  // namespace

void fused_forward(const Problem& p, const Buffers& b, const RunConfig&) {
  scalar_rows<SumAndSumOfSquares>(p, b);
}
}  // namespace normbench::detail
