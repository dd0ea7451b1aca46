// naive: the textbook two-pass algorithm, scalar, sequential sums.
// Variance error (Chan, Golub & LeVeque): N*u + N^2*kappa^2*u^2.
#include "families.hpp"
#include "scalar_rows.hpp"

namespace normbench::detail {
namespace {
struct TwoPass {
  template <class X, class T = ElementOf<X>>
  static RowStats<Acc<T>> layernorm(X x, std::int64_t n) {
    using A = Acc<T>;
    A sum = 0;
    for (std::int64_t i = 0; i < n; ++i) sum += widen(x[i]);
    const A mean = sum / static_cast<A>(n);
    A ssd = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const A d = widen(x[i]) - mean;
      ssd += d * d;
    }
    return {mean, ssd / static_cast<A>(n)};
  }
  template <class X, class T = ElementOf<X>>
  static RowStats<Acc<T>> rmsnorm(X x, std::int64_t n) {
    return mean_square_sequential(x, n);
  }
};
}  // namespace

void naive_forward(const Problem& p, const Buffers& b, const RunConfig&) {
  scalar_rows<TwoPass>(p, b);
}
}  // namespace normbench::detail
