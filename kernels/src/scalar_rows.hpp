// Row driver shared by the scalar families: they differ only in how a row's statistics are
// computed (the Stats policy); reading, the apply step and rounding are identical, so any
// accuracy difference the harness shows comes from the statistics alone.
#pragma once

#include <cmath>
#include <type_traits>

#include "chunked_stats.hpp"
#include "normbench/normbench.hpp"

namespace normbench::detail {

// Accumulator: f64 for f64 storage, f32 otherwise.
template <class T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
inline T narrow(Acc<T> v) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) return v;
  else return from_f32<T>(v);
}

template <class A>
struct RowStats {
  A mean;      // 0 for RMSNorm
  A variance;  // biased variance (LayerNorm) or mean square (RMSNorm)
};

// mean(x^2) by a sequential sum: RMSNorm's statistic in both the naive and the fused family
// (with a single statistic, "two-pass" and "single-pass" coincide).
template <class T>
RowStats<Acc<T>> mean_square_sequential(const T* x, std::int64_t n) {
  using A = Acc<T>;
  A sumsq = 0;
  for (std::int64_t i = 0; i < n; ++i) sumsq += widen(x[i]) * widen(x[i]);
  return {A(0), sumsq / static_cast<A>(n)};
}

// The storage-dtype rounding of one intermediate (Variant::storage_compute); identity for f32/f64.
template <class T>
inline Acc<T> round_to_storage(Acc<T> v) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) return v;
  else return widen(from_f32<T>(v));
}

// h = x + r for one row, correctly rounded (the f32 sum of two bf16/f16 values rounds to the
// same dtype value as the exact sum), so every family's h equals normbench::add_rounded's.
template <class T>
inline void add_row(const T* x, const T* r, T* h, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) h[i] = narrow<T>(widen(x[i]) + widen(r[i]));
}

// Stats must provide: template <class T> static RowStats<Acc<T>> layernorm(const T*, int64_t)
//                     template <class T> static RowStats<Acc<T>> rmsnorm(const T*, int64_t)
template <class Stats, class T>
void scalar_rows_typed(const Problem& p, const Buffers& b) {
  using A = Acc<T>;
  const std::int64_t n = p.cols;
  const auto* gamma = static_cast<const A*>(b.gamma);
  const auto* beta = static_cast<const A*>(b.beta);
  const Variant& var = p.variant;
  const bool storage = var.storage_compute;
  // Unbiased: the biased variance times n/(n-1), one rounding more than dividing M2 by n-1.
  const A unbias = var.unbiased ? static_cast<A>(n) / static_cast<A>(n - 1) : A(1);
  for (std::int64_t r = 0; r < p.rows; ++r) {
    const T* x = static_cast<const T*>(b.x) + r * n;
    T* y = static_cast<T*>(b.y) + r * n;
    if (p.residual_add) {  // the row of h is the input of the norm
      T* h = static_cast<T*>(b.h) + r * n;
      add_row(x, static_cast<const T*>(b.residual) + r * n, h, n);
      x = h;
    }
    const RowStats<A> s = p.norm == Norm::kLayerNorm ? Stats::layernorm(x, n) : Stats::rmsnorm(x, n);
    A mean = s.mean, rstd = rstd_from_variance(var.unbiased ? s.variance * unbias : s.variance, p);
    if (b.mean) b.mean[r] = static_cast<float>(mean);
    if (b.rstd) b.rstd[r] = static_cast<float>(rstd);
    if (storage) {
      mean = round_to_storage<T>(mean);
      rstd = round_to_storage<T>(rstd);
    }
    const auto round = [storage](A v) { return storage ? round_to_storage<T>(v) : v; };
    for (std::int64_t i = 0; i < n; ++i) {  // reads x[i] before writing y[i]: in place is safe
      A v = round(round(widen(x[i]) - mean) * rstd);
      if (gamma) v = round(v * (var.one_plus_gamma ? round(A(1) + round(gamma[i])) : round(gamma[i])));
      if (beta) v = round(v + round(beta[i]));
      y[i] = narrow<T>(v);
    }
  }
}

template <class Stats>
void scalar_rows(const Problem& p, const Buffers& b) {
  switch (p.dtype) {
    case DType::kF32: return scalar_rows_typed<Stats, float>(p, b);
    case DType::kF64: return scalar_rows_typed<Stats, double>(p, b);
    case DType::kBF16: return scalar_rows_typed<Stats, bf16>(p, b);
    case DType::kF16: return scalar_rows_typed<Stats, f16>(p, b);
  }
}

}  // namespace normbench::detail
