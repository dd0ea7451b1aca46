// Row driver shared by the scalar families: they differ only in how a row's statistics are
// computed (the Stats policy); reading, the apply step and rounding are identical, so any
// accuracy difference the harness shows comes from the statistics alone.
#pragma once

#include <cmath>
#include <type_traits>
#include <utility>

#include "batchnorm.hpp"

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

// The element type of an indexable X: a row pointer `const T*`, or a ChannelView.
template <class X>
using ElementOf = std::remove_cvref_t<decltype(std::declval<X>()[0])>;

// Channel c of a BatchNorm input as an indexable sequence of its N*L values (position i = n*L + l):
// `run` contiguous values every `stride` elements.
template <class T>
struct ChannelView {
  const T* base;
  std::int64_t run, stride;
  T operator[](std::int64_t i) const { return run == 1 ? base[i * stride] : base[(i / run) * stride + i % run]; }
};

template <class T>
ChannelView<T> channel_view(const Problem& p, const T* x, std::int64_t c) {
  if (channels_innermost(p)) return {x + c, 1, channel_count(p)};
  return {x + c * spatial_size(p), spatial_size(p), p.cols};
}

template <class A>
struct RowStats {
  A mean;      // 0 for RMSNorm
  A variance;  // biased variance (LayerNorm) or mean square (RMSNorm)
};

// mean(x^2) by a sequential sum: RMSNorm's statistic in both the naive and the fused family
// (with a single statistic, "two-pass" and "single-pass" coincide).
template <class X, class T = ElementOf<X>>
RowStats<Acc<T>> mean_square_sequential(X x, std::int64_t n) {
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
  // Units: a row, or GroupNorm's (row, group) of `len` contiguous elements, `hw` of them per
  // gamma/beta value (GroupNorm's spatial size; 1 otherwise), channels from group * per_group.
  const std::int64_t groups = group_count(p), len = stat_cols(p), hw = spatial_size(p), per_group = len / hw;
  const A unbias = var.unbiased ? static_cast<A>(len) / static_cast<A>(len - 1) : A(1);
  for (std::int64_t r = 0; r < p.rows; ++r) {
    const T* x_row = static_cast<const T*>(b.x) + r * n;
    T* y_row = static_cast<T*>(b.y) + r * n;
    if (p.residual_add) {  // the row of h is the input of the norm
      T* h = static_cast<T*>(b.h) + r * n;
      add_row(x_row, static_cast<const T*>(b.residual) + r * n, h, n);
      x_row = h;
    }
    for (std::int64_t g = 0; g < groups; ++g) {
      const T* x = x_row + g * len;
      T* y = y_row + g * len;
      const std::int64_t u = r * groups + g;
      const RowStats<A> s = centres(p.norm) ? Stats::layernorm(x, len) : Stats::rmsnorm(x, len);
      A mean = s.mean, rstd = rstd_from_variance(var.unbiased ? s.variance * unbias : s.variance, p);
      if (b.mean) b.mean[u] = static_cast<float>(mean);
      if (b.rstd) b.rstd[u] = static_cast<float>(rstd);
      if (storage) {
        mean = round_to_storage<T>(mean);
        rstd = round_to_storage<T>(rstd);
      }
      const auto round = [storage](A v) { return storage ? round_to_storage<T>(v) : v; };
      for (std::int64_t c = 0; c < per_group; ++c) {
        const std::int64_t channel = g * per_group + c;
        const A gc = gamma ? (var.one_plus_gamma ? round(A(1) + round(gamma[channel])) : round(gamma[channel])) : A(1);
        const A bc = beta ? round(beta[channel]) : A(0);
        for (std::int64_t i = c * hw; i < (c + 1) * hw; ++i) {  // reads x[i] before writing y[i]: in place is safe
          A v = round(round(widen(x[i]) - mean) * rstd);
          if (gamma) v = round(v * gc);
          if (beta) v = round(v + bc);
          y[i] = narrow<T>(v);
        }
      }
    }
  }
}

// BatchNorm, channel by channel: the family's statistics over the channel's N*L strided values
// (training) or the running statistics (inference), then the same apply step as the rows.
template <class Stats, class T>
void scalar_batchnorm_typed(const Problem& p, const Buffers& b) {
  using A = Acc<T>;
  const auto* gamma = static_cast<const A*>(b.gamma);
  const auto* beta = static_cast<const A*>(b.beta);
  const std::int64_t n = stat_cols(p);
  const auto* x = static_cast<const T*>(b.x);
  auto* y = static_cast<T*>(b.y);
  for (std::int64_t c = 0; c < channel_count(p); ++c) {
    A mean, rstd;
    if (p.batchnorm.training) {
      const RowStats<A> s = Stats::layernorm(channel_view(p, x, c), n);
      mean = s.mean;
      rstd = rstd_from_variance(s.variance, p);
      update_running_stats(p, b, c, mean, static_cast<double>(s.variance) * static_cast<double>(n));
    } else {
      running_mean_rstd(p, b, c, mean, rstd);
    }
    if (b.mean) b.mean[c] = static_cast<float>(mean);
    if (b.rstd) b.rstd[c] = static_cast<float>(rstd);
    for (std::int64_t i = 0; i < n; ++i) {  // reads x before writing y: in place is safe
      const std::int64_t k = unit_element(p, c, i);
      A v = (widen(x[k]) - mean) * rstd;
      if (gamma) v = v * gamma[c];
      if (beta) v = v + beta[c];
      y[k] = narrow<T>(v);
    }
  }
}

template <class Stats>
void scalar_rows(const Problem& p, const Buffers& b) {
  if (p.norm == Norm::kBatchNorm) {
    switch (p.dtype) {
      case DType::kF32: return scalar_batchnorm_typed<Stats, float>(p, b);
      case DType::kF64: return scalar_batchnorm_typed<Stats, double>(p, b);
      case DType::kBF16: return scalar_batchnorm_typed<Stats, bf16>(p, b);
      case DType::kF16: return scalar_batchnorm_typed<Stats, f16>(p, b);
    }
  }
  switch (p.dtype) {
    case DType::kF32: return scalar_rows_typed<Stats, float>(p, b);
    case DType::kF64: return scalar_rows_typed<Stats, double>(p, b);
    case DType::kBF16: return scalar_rows_typed<Stats, bf16>(p, b);
    case DType::kF16: return scalar_rows_typed<Stats, f16>(p, b);
  }
}

}  // namespace normbench::detail
