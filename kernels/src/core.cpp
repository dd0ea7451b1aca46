// Names, validation and the registry.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "families.hpp"
#include "normbench/normbench.hpp"

namespace normbench {

std::string_view norm_name(Norm n) {
  switch (n) {
    case Norm::kLayerNorm: return "layernorm";
    case Norm::kRMSNorm: return "rmsnorm";
    case Norm::kGroupNorm: return "groupnorm";
    case Norm::kBatchNorm: return "batchnorm";
  }
  return "invalid";
}

Norm parse_norm(std::string_view name) {
  for (Norm n : kAllNorms)
    if (norm_name(n) == name) return n;
  throw Error(fmt::format("unknown norm '{}' (expected layernorm, rmsnorm, groupnorm or batchnorm)", name));
}

std::string_view layout_name(const Problem& p) {
  if (p.norm == Norm::kGroupNorm) return "ncl";
  if (p.norm != Norm::kBatchNorm) return "rows";
  if (spatial_size(p) == 1) return "nc";
  return p.batchnorm.channels_last ? "nlc" : "ncl";
}

double default_eps(Norm n) { return n == Norm::kRMSNorm ? 1e-6 : 1e-5; }

std::string_view variance_algorithm_name(VarianceAlgorithm a) {
  switch (a) {
    case VarianceAlgorithm::kTwoPass: return "two-pass";
    case VarianceAlgorithm::kWelford: return "welford";
    case VarianceAlgorithm::kTextbook: return "textbook";
  }
  return "invalid";
}

double variance_error_bound(VarianceAlgorithm a, double n, double kappa, double u, bool pairwise) {
  const double N = pairwise ? std::max(1.0, std::log2(n)) : n;
  switch (a) {
    case VarianceAlgorithm::kTwoPass: return N * u + N * N * kappa * kappa * u * u;
    case VarianceAlgorithm::kWelford: return N * kappa * u;
    // E[x^2] - E[x]^2 loses N u of mean^2 + var in sum x^2 and 2N u of mean^2 in the squared mean.
    case VarianceAlgorithm::kTextbook: return 3 * N * kappa * kappa * u;
  }
  throw Error(fmt::format("invalid variance algorithm {}", static_cast<int>(a)));
}

double accumulator_unit_roundoff(const Implementation& impl, DType t) {
  return unit_roundoff(t == DType::kF64 || impl.accumulates_in_f64 ? DType::kF64 : DType::kF32);
}

bool Implementation::supports(Norm n, DType t) const {
  return std::find(norms.begin(), norms.end(), n) != norms.end() &&
         std::find(dtypes.begin(), dtypes.end(), t) != dtypes.end();
}

namespace {

std::string scalar_target() { return "scalar"; }

std::vector<Implementation>& mutable_registry() {
  static std::vector<Implementation> impls = [] {
    const std::vector<Norm> norms(std::begin(kAllNorms), std::end(kAllNorms));
    const std::vector<DType> dtypes(std::begin(kAllDTypes), std::end(kAllDTypes));
    const std::string_view acc = "f32 (f64 for f64)";
    return std::vector<Implementation>{
        {.name = "naive", .family = "naive",
         .description = "scalar two-pass: mean, then sum of squared deviations, then apply",
         .norms = norms, .dtypes = dtypes, .accumulator = acc,
         .variance_algorithm = VarianceAlgorithm::kTwoPass,
         .supports_variants = true, .target = scalar_target, .kernel = detail::naive_forward},
        {.name = "welford", .family = "welford",
         .description = "scalar one-pass Welford/West update of (count, mean, M2)",
         .norms = norms, .dtypes = dtypes, .accumulator = acc,
         .variance_algorithm = VarianceAlgorithm::kWelford,
         .supports_variants = true, .target = scalar_target, .kernel = detail::welford_forward},
        {.name = "fused", .family = "fused",
         .description = "scalar single pass of sum x and sum x^2, var = E[x^2] - E[x]^2",
         .norms = norms, .dtypes = dtypes, .accumulator = acc,
         .variance_algorithm = VarianceAlgorithm::kTextbook,
         .supports_variants = true, .target = scalar_target, .kernel = detail::fused_forward},
        {.name = "highway", .family = "highway",
         .description = "Highway SIMD, dynamic dispatch; corrected two-pass (shifted sum, then centred sums)",
         .norms = norms, .dtypes = dtypes, .accumulator = acc,
         .variance_algorithm = VarianceAlgorithm::kTwoPass, .highway_dispatch = true, .honours_store_policy = true,
         .supports_variants = true, .target = detail::highway_target, .kernel = detail::highway_forward},
        {.name = "highway-f64", .family = "highway",
         .description = "accuracy-first Highway: statistics, centring and apply in f64 for every dtype, one rounding",
         .norms = norms, .dtypes = dtypes, .accumulator = "f64",
         .variance_algorithm = VarianceAlgorithm::kTwoPass, .highway_dispatch = true, .accumulates_in_f64 = true,
         .honours_store_policy = true, .supports_variants = true,
         .target = detail::highway_target, .kernel = detail::highway_f64_forward},
        {.name = "threaded", .family = "threaded",
         .description = "rows (or a long row's chunks) split over normbench's worker team, each part running the "
                        "highway kernel; bitwise equal to highway",
         .norms = norms, .dtypes = dtypes, .accumulator = acc,
         .variance_algorithm = VarianceAlgorithm::kTwoPass, .uses_threads = true, .highway_dispatch = true,
         .honours_store_policy = true, .supports_variants = true, .target = detail::highway_target,
         .kernel = detail::threaded_forward, .threads_used = detail::threaded_threads_used},
    };
  }();
  return impls;
}

}  // namespace

bool uses_streaming_stores(const Implementation& impl, const Problem& p, const RunConfig& cfg) {
  return impl.honours_store_policy && detail::streaming_stores(p, cfg);
}

int threads_used(const Implementation& impl, const Problem& p, const RunConfig& cfg) {
  if (!impl.uses_threads) return 1;
  return impl.threads_used ? impl.threads_used(p, cfg) : std::max(1, cfg.threads);
}

namespace detail {
// align is an element size, a power of two: a mask, not `%`. A 64-bit division costs 35-88 cycles
// on Skylake-SP/Cascade Lake, and this runs four times or more a call (performance log, "Per-call
// divisions on a Cascade Lake VM").
void check_aligned(const void* p, std::size_t align, const char* what) {
  if ((reinterpret_cast<std::uintptr_t>(p) & (align - 1)) != 0)
    throw Error(fmt::format("{} is not aligned to its element size ({} bytes)", what, align));
}
bool ranges_overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  const auto pa = reinterpret_cast<std::uintptr_t>(a), pb = reinterpret_cast<std::uintptr_t>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}
bool ranges_overlap(const void* a, const void* b, std::size_t bytes) { return ranges_overlap(a, bytes, b, bytes); }
bool partially_overlaps(const void* a, const void* b, std::size_t bytes) {
  return a != b && ranges_overlap(a, b, bytes);
}
}  // namespace detail

namespace {
using detail::check_aligned;
using detail::partially_overlaps;
using detail::ranges_overlap;
}  // namespace

std::span<const Implementation> registry() { return mutable_registry(); }

void register_implementation(Implementation impl) {
  if (impl.kernel == nullptr || impl.target == nullptr)
    throw Error(fmt::format("implementation '{}' needs a kernel and a target function", impl.name));
  for (const Implementation& existing : mutable_registry())
    if (existing.name == impl.name) throw Error(fmt::format("implementation '{}' is already registered", impl.name));
  mutable_registry().push_back(std::move(impl));
}

const Implementation& find_implementation(std::string_view name) {
  std::string known;
  for (const Implementation& impl : registry()) {
    if (impl.name == name) return impl;
    known += known.empty() ? "" : ", ";
    known += impl.name;
  }
  throw Error(fmt::format("unknown implementation '{}' (known: {})", name, known));
}

namespace detail {

bool check_problem_and_inputs(const Problem& p, const Buffers& b, const RunConfig& cfg) {
  if (norm_name(p.norm) == "invalid")
    throw Error(fmt::format("invalid norm value {}", static_cast<int>(p.norm)));
  if (dtype_name(p.dtype) == "invalid")
    throw Error(fmt::format("invalid dtype value {}", static_cast<int>(p.dtype)));
  if (p.cols <= 0) throw Error(fmt::format("cols must be at least 1 (got {})", p.cols));
  if (p.rows < 0) throw Error(fmt::format("rows must be non-negative (got {})", p.rows));
  if (std::isnan(p.eps) || p.eps < 0 || std::isinf(p.eps))
    throw Error(fmt::format("eps must be a finite number >= 0 (got {})", p.eps));
  if (p.norm == Norm::kGroupNorm) {
    if (p.groups < 1) throw Error(fmt::format("groupnorm: groups must be at least 1 (got {})", p.groups));
    if (p.channels < 0) throw Error(fmt::format("groupnorm: channels must be >= 0 (got {})", p.channels));
    const std::int64_t c = channel_count(p);
    if (p.cols % c != 0)
      throw Error(fmt::format("groupnorm: {} elements per sample are not {} channels times a spatial size "
                              "(the layout does not match the shape)", p.cols, c));
    if (c % p.groups != 0)
      throw Error(fmt::format("groupnorm: {} groups do not divide {} channels", p.groups, c));
    if (p.variant != Variant{} || p.residual_add)
      throw Error("groupnorm: only the standard form (with or without gamma/beta) is defined");
  } else if (p.norm == Norm::kBatchNorm) {
    if (p.groups != 1) throw Error(fmt::format("batchnorm: groups must be 1 (got {})", p.groups));
    if (p.channels < 0) throw Error(fmt::format("batchnorm: channels must be >= 0 (got {})", p.channels));
    const std::int64_t c = channel_count(p);
    if (p.cols % c != 0)
      throw Error(fmt::format("batchnorm: {} elements per sample are not {} channels times a length "
                              "(the layout does not match the shape)", p.cols, c));
    if (p.variant != Variant{} || p.residual_add)
      throw Error("batchnorm: only the standard form (with or without gamma/beta) is defined");
    const double m = p.batchnorm.momentum;
    if (!(m >= 0 && m <= 1)) throw Error(fmt::format("batchnorm: momentum must be in [0, 1] (got {})", m));
    if (p.batchnorm.training && p.rows > 0 && stat_cols(p) < 2)
      throw Error(fmt::format("batchnorm: expected more than 1 value per channel when training (N*L = {}), "
                              "as PyTorch says", stat_cols(p)));
  } else if (p.groups != 1 || p.channels != 0) {
    throw Error(fmt::format("groups and channels apply to groupnorm and batchnorm only, not {}", norm_name(p.norm)));
  }
  if (p.norm != Norm::kBatchNorm && !(p.batchnorm == BatchNormOptions{}))
    throw Error(fmt::format("batchnorm options (training, momentum, channels_last layout) do not apply to {}",
                            norm_name(p.norm)));
  const Variant& v = p.variant;
  if ((v.eps_outside_sqrt || v.unbiased) && p.norm != Norm::kLayerNorm)
    throw Error(fmt::format("the {} variant applies to LayerNorm only, not {}",
                            v.unbiased ? "unbiased-variance" : "eps-outside-sqrt", norm_name(p.norm)));
  if (v.unbiased && p.cols < 2)
    throw Error(fmt::format("unbiased variance needs at least 2 elements per row (cols = {})", p.cols));
  if (v.storage_compute && p.dtype != DType::kBF16 && p.dtype != DType::kF16)
    throw Error(fmt::format("storage-dtype compute applies to bf16 and f16, not {} (it would equal the standard form)",
                            dtype_name(p.dtype)));
  if (cfg.threads < 1 || cfg.threads > kMaxThreads)
    throw Error(fmt::format("threads must be in [1, {}] (got {})", kMaxThreads, cfg.threads));
  std::int64_t elements = 0, bytes = 0;
  if (__builtin_mul_overflow(p.rows, p.cols, &elements) ||
      __builtin_mul_overflow(elements, static_cast<std::int64_t>(dtype_size(p.dtype)), &bytes))
    throw Error(fmt::format("rows*cols = {}*{} overflows the addressable size", p.rows, p.cols));
  if (p.rows == 0) return false;
  if (b.x == nullptr) throw Error("x is null");
  check_aligned(b.x, dtype_size(p.dtype), "x");
  const std::size_t param_size = dtype_size(param_dtype(p.dtype));
  if (b.gamma) check_aligned(b.gamma, param_size, "gamma");
  if (b.beta) check_aligned(b.beta, param_size, "beta");
  const auto check_count = [&](const void* ptr, std::int64_t count, const char* what) {
    if (ptr && count >= 0 && count != param_count(p))
      throw Error(fmt::format("{} has {} elements, expected {} ({})", what, count, param_count(p),
                              per_channel_params(p) ? "one per channel" : "one per column"));
  };
  check_count(b.gamma, b.gamma_elements, "gamma");
  check_count(b.beta, b.beta_elements, "beta");
  if (p.norm == Norm::kBatchNorm) {
    if ((b.running_mean == nullptr) != (b.running_var == nullptr))
      throw Error("batchnorm: running_mean and running_var must be given together");
    if (!p.batchnorm.training && b.running_mean == nullptr)
      throw Error("batchnorm: inference (training = false) needs running_mean and running_var");
    if (b.running_mean) {
      check_aligned(b.running_mean, param_size, "running_mean");
      check_aligned(b.running_var, param_size, "running_var");
      check_count(b.running_mean, b.running_elements, "running_mean");
      const std::size_t running_bytes = static_cast<std::size_t>(channel_count(p)) * param_size;
      if (ranges_overlap(b.running_mean, b.running_var, running_bytes))
        throw Error("batchnorm: running_mean and running_var overlap");
    }
  } else if (b.running_mean || b.running_var) {
    throw Error(fmt::format("running statistics apply to batchnorm only, not {}", norm_name(p.norm)));
  }
  if (p.residual_add) {
    if (b.residual == nullptr) throw Error("residual_add: residual is null");
    check_aligned(b.residual, dtype_size(p.dtype), "residual");
    const std::size_t bytes = static_cast<std::size_t>(elements) * dtype_size(p.dtype);
    if (partially_overlaps(b.residual, b.x, bytes)) throw Error("residual partially overlaps x");
  }
  return true;
}

}  // namespace detail

void validate(const Implementation& impl, const Problem& p, const Buffers& b,
              const RunConfig& cfg) {
  if (impl.kernel == nullptr) throw Error(fmt::format("implementation '{}' has no kernel", impl.name));
  const bool has_work = detail::check_problem_and_inputs(p, b, cfg);
  if (!impl.supports(p.norm, p.dtype))
    throw Error(fmt::format("implementation '{}' does not support {} with dtype {}", impl.name,
                            norm_name(p.norm), dtype_name(p.dtype)));
  if (!impl.supports_variants && (p.variant != Variant{} || p.residual_add))
    throw Error(fmt::format("implementation '{}' supports only the standard form (no variants, no residual add)",
                            impl.name));
  if (!has_work) return;
  if (b.y == nullptr) throw Error("y is null");
  check_aligned(b.y, dtype_size(p.dtype), "y");
  const std::size_t bytes = static_cast<std::size_t>(p.rows * p.cols) * dtype_size(p.dtype);
  if (partially_overlaps(b.y, b.x, bytes))
    throw Error("y partially overlaps x (only y == x, in place, is supported)");
  if (p.residual_add) {
    if (b.h == nullptr) throw Error("residual_add: h (the output x + residual) is null");
    check_aligned(b.h, dtype_size(p.dtype), "h");
    // residual does not partially overlap x (checked above), so h == x or h == residual passes both.
    if (partially_overlaps(b.h, b.x, bytes) || partially_overlaps(b.h, b.residual, bytes))
      throw Error("h partially overlaps x or residual (h may be x or residual itself)");
    if (ranges_overlap(b.y, b.h, bytes) || (b.y != b.x && ranges_overlap(b.y, b.residual, bytes)))
      throw Error("y overlaps h or residual (y may only be x itself)");
  }
  if (b.mean) check_aligned(b.mean, alignof(float), "mean");
  if (b.rstd) check_aligned(b.rstd, alignof(float), "rstd");
}

void forward(const Implementation& impl, const Problem& p, const Buffers& b,
             const RunConfig& cfg) {
  validate(impl, p, b, cfg);
  if (p.rows == 0) return;
  impl.kernel(p, b, cfg);
}

}  // namespace normbench
