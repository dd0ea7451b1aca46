// welford: one streaming pass with the Welford/West update of (count, mean, M2).
// Variance error bound: N*kappa*u. Exact for constant rows (every delta is 0).
#include "families.hpp"
#include "scalar_rows.hpp"

namespace normbench::detail {
namespace {
struct Welford {
  template <class X, class T = ElementOf<X>>
  static RowStats<Acc<T>> layernorm(X x, std::int64_t n) {
    using A = Acc<T>;
    A mean = 0, m2 = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const A v = widen(x[i]);
      const A delta = v - mean;
      mean += delta / static_cast<A>(i + 1);
      m2 += delta * (v - mean);
    }
    return {mean, m2 / static_cast<A>(n)};
  }
  // The same running-mean update applied to x^2 (never forms a large sum).
  template <class X, class T = ElementOf<X>>
  static RowStats<Acc<T>> rmsnorm(X x, std::int64_t n) {
    using A = Acc<T>;
    A ms = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const A v = widen(x[i]);
      ms += (v * v - ms) / static_cast<A>(i + 1);
    }
    return {A(0), ms};
  }
};
}  // namespace

void welford_forward(const Problem& p, const Buffers& b, const RunConfig&) {
  scalar_rows<Welford>(p, b);
}
}  // namespace normbench::detail
