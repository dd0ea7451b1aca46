// normbench: forward normalization kernels, one registry of implementations.
//
// A Problem says *what* to normalize; an Implementation says *how*. The benchmark, the accuracy
// harness, the tests and the listings all iterate over registry(), so a new kernel appears in
// all of them without touching the harnesses.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "normbench/dtype.hpp"
#include "normbench/error.hpp"

namespace normbench {

enum class Norm : std::uint8_t { kLayerNorm, kRMSNorm, kGroupNorm };
inline constexpr Norm kAllNorms[] = {Norm::kLayerNorm, Norm::kRMSNorm, Norm::kGroupNorm};
std::string_view norm_name(Norm n);  // "layernorm", "rmsnorm", "groupnorm"
// Whether the norm subtracts a mean (LayerNorm, GroupNorm) or not (RMSNorm).
inline bool centres(Norm n) { return n != Norm::kRMSNorm; }
Norm parse_norm(std::string_view name);  // throws Error

// Default eps per norm (torch.nn.LayerNorm and GroupNorm 1e-5; RMSNorm as in Llama, 1e-6).
double default_eps(Norm n);

// Options of LayerNorm / RMSNorm beyond torch's standard form (all false: the standard form).
// Named combinations with their formulas and users are in variant_presets().
struct Variant {
  bool eps_outside_sqrt = false;  // LayerNorm: y = (x - mean) / (sqrt(var) + eps)
  bool unbiased = false;          // LayerNorm: var = M2 / (cols - 1) (torch.var's default); cols >= 2
  bool one_plus_gamma = false;    // gamma applied as (1 + gamma) (Gemma's RMSNorm)
  // bf16/f16 only: no upcast. Statistics are still accumulated in f32 (as torch's reductions do),
  // but mean and rstd, and every elementwise step (x - mean, * rstd, * gamma, + beta, 1 + gamma)
  // are rounded to the storage dtype, as torch ops applied directly to bf16 tensors do.
  bool storage_compute = false;
  bool operator==(const Variant&) const = default;
};

// What to normalize. LayerNorm/RMSNorm: `rows` independent normalizations, each over the
// `cols` contiguous trailing elements of its row (row-major, row stride = cols). A
// normalized_shape of several trailing axes, e.g. (T, D), is cols = T*D with gamma/beta of T*D.
// residual_add: h = x + residual (rounded to the dtype) is written to Buffers::h and y = norm(h),
// in one pass (pre-norm Transformer blocks).
// GroupNorm (torch.nn.GroupNorm): x is (N = rows, C = channels, cols/C spatial positions),
// row-major (NCHW with HW flattened); statistics per sample and group of C/groups consecutive
// channels, over (C/groups)*HW contiguous elements; gamma/beta per channel (C elements).
// groups = C is InstanceNorm; groups = 1 is LayerNorm over (C, H, W) with per-channel affine.
// channels = 0 means channels = cols (one spatial position: the (N, C) input). Other norms
// require groups = 1 and channels = 0.
struct Problem {
  Norm norm = Norm::kLayerNorm;
  DType dtype = DType::kF32;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  double eps = 1e-5;
  Variant variant{};
  bool residual_add = false;
  std::int64_t groups = 1;
  std::int64_t channels = 0;
};

// The independent normalizations of a problem: rows * groups "units", each over stat_cols(p)
// contiguous elements (unit u covers elements [u * stat_cols, (u + 1) * stat_cols)); per-unit
// outputs (Buffers::mean/rstd) have units(p) entries; gamma/beta have param_count(p).
inline std::int64_t group_count(const Problem& p) { return p.norm == Norm::kGroupNorm ? p.groups : 1; }
inline std::int64_t units(const Problem& p) { return p.rows * group_count(p); }
inline std::int64_t stat_cols(const Problem& p) { return p.cols / group_count(p); }
inline std::int64_t channel_count(const Problem& p) {
  return p.norm == Norm::kGroupNorm && p.channels > 0 ? p.channels : p.cols;
}
inline std::int64_t param_count(const Problem& p) { return p.norm == Norm::kGroupNorm ? channel_count(p) : p.cols; }
// Elements sharing one gamma/beta value: GroupNorm's spatial size, 1 otherwise.
inline std::int64_t spatial_size(const Problem& p) { return p.cols / channel_count(p); }

// Data of one call. x/y have the problem's dtype; gamma/beta have the parameter dtype
// (f64 when dtype is f64, f32 otherwise) and param_count(p) elements (`cols`, or GroupNorm's
// channels), and are optional.
// mean/rstd, when given, receive units(p) statistics in f32 (one per row, or per row and group);
// RMSNorm writes mean = 0. y == x (in place) is allowed; other overlaps are not.
// With Problem::residual_add: residual (dtype of x) is added to x and the sum written to h
// (rows*cols, dtype of x); h may be x or residual itself (vLLM's in-place fused_add_rms_norm),
// y must not overlap h or residual.
struct Buffers {
  const void* x = nullptr;
  void* y = nullptr;
  const void* gamma = nullptr;
  const void* beta = nullptr;
  float* mean = nullptr;
  float* rstd = nullptr;
  const void* residual = nullptr;
  void* h = nullptr;
};

// A named variant: what the accuracy harness and the benchmark iterate over besides the norms.
struct VariantPreset {
  std::string_view name;     // "standard", "eps-outside", ... (command lines, reports)
  std::string_view formula;  // one line, for listings and the README
  std::string_view used_by;  // which well-known model or framework writes it
  std::vector<Norm> norms;   // the norms it applies to
  bool storage_dtypes_only;  // only meaningful for bf16/f16
  Variant variant;
  bool residual_add;
  bool gamma, beta;          // which parameters it passes (standard: LayerNorm both, RMSNorm gamma)
  bool applies(Norm n, DType t) const;
};
// "standard" first; the gamma/beta of "standard" depend on the norm (see find_variant_for).
std::span<const VariantPreset> variant_presets();
// Throws Error listing the known names when `name` is unknown.
const VariantPreset& find_variant(std::string_view name);
// The parameters a preset passes for norm n: "standard" RMSNorm has gamma only, LayerNorm both.
bool variant_has_beta(const VariantPreset& v, Norm n);

// h = x + residual elementwise, correctly rounded to t (Highway, dispatched): the "separate add"
// that residual_add fuses; every family's h equals it bit for bit.
void add_rounded(DType t, const void* x, const void* residual, void* h, std::size_t n);

// How the highway family writes y. Non-temporal (streaming) stores bypass the caches: for outputs
// larger than the last-level cache they save the read-for-ownership of every y line and leave x
// in the cache; for small outputs they are slower (y must come back from memory if read again).
enum class StorePolicy : std::uint8_t {
  kAuto,       // streaming when the output is at least half the last-level cache (x + y no longer fit)
  kCached,     // ordinary stores
  kStreaming,  // non-temporal stores (after peeling to the vector alignment)
};

struct RunConfig {
  int threads = 1;  // used by implementations with uses_threads; others ignore it
  StorePolicy stores = StorePolicy::kAuto;  // used by the highway family; others ignore it
};

// Bytes of CPU 0's level-1 data / level-2 / level-3 cache (sysfs, else sysconf; 0 if unknown),
// and of its last level (32 MiB if nothing answers).
std::int64_t data_cache_bytes(int level);
std::int64_t last_level_cache_bytes();

inline constexpr int kMaxThreads = 1024;

// Parameter dtype for a given x/y dtype.
inline DType param_dtype(DType t) { return t == DType::kF64 ? DType::kF64 : DType::kF32; }

// How an implementation computes the variance; selects its theoretical error bound.
enum class VarianceAlgorithm : std::uint8_t {
  kTwoPass,   // mean, then sum of squared deviations (also the corrected two-pass)
  kWelford,   // streaming (count, mean, M2) update
  kTextbook,  // E[x^2] - E[x]^2 from one pass of sum x and sum x^2
};
std::string_view variance_algorithm_name(VarianceAlgorithm a);  // "two-pass", "welford", "textbook"

// First-order bound on the relative error of the computed sum of squared deviations
// (Chan, Golub & LeVeque 1983), for n values with condition number kappa = sqrt(1 + n mean^2/S),
// accumulated with unit roundoff u: two-pass N u + N^2 kappa^2 u^2, Welford N kappa u, textbook
// N kappa^2 u. With pairwise=true, N is replaced by log2 N (blocked/pairwise summation).
double variance_error_bound(VarianceAlgorithm a, double n, double kappa, double u, bool pairwise = false);

using ForwardFn = void (*)(const Problem&, const Buffers&, const RunConfig&);

struct Implementation {
  std::string_view name;         // unique, used on command lines and in reports
  std::string_view family;       // naive | welford | fused | highway | threaded | ...
  std::string_view description;  // one line
  std::vector<Norm> norms;
  std::vector<DType> dtypes;
  std::string_view accumulator;  // e.g. "f32 (f64 for f64)"
  VarianceAlgorithm variance_algorithm = VarianceAlgorithm::kTwoPass;
  bool deterministic_across_threads = true;
  bool uses_threads = false;
  bool highway_dispatch = false;  // dispatches through Highway: tests run it on every target
  bool accumulates_in_f64 = false;  // f64 statistics for every dtype (else f32, f64 only for f64)
  bool honours_store_policy = false;  // RunConfig::stores selects its stores (else always cached)
  bool supports_variants = false;  // honours Problem::variant and residual_add (else standard form only)
  std::string (*target)() = nullptr;  // SIMD target that runs here ("scalar" for scalar code)
  ForwardFn kernel = nullptr;         // unchecked; call normbench::forward instead

  bool supports(Norm n, DType t) const;
};

// Unit roundoff of the arithmetic `impl` uses for data of dtype t (2^-24 or 2^-53).
double accumulator_unit_roundoff(const Implementation& impl, DType t);

// All registered implementations, in a stable order: the built-in families, then any added
// with register_implementation (peer backends such as oneDNN).
std::span<const Implementation> registry();
// Adds an implementation; call at start-up, before iterating registry() (spans taken earlier
// are invalidated). Throws Error if the name is taken or the kernel is missing.
void register_implementation(Implementation impl);
// Throws Error listing the known names when `name` is unknown.
const Implementation& find_implementation(std::string_view name);

// Whether impl writes y with non-temporal stores for this call.
bool uses_streaming_stores(const Implementation& impl, const Problem& p, const RunConfig& cfg = {});

// Checks a call without running it; throws Error naming the first problem found.
void validate(const Implementation& impl, const Problem& p, const Buffers& b,
              const RunConfig& cfg = {});
// Validates, then runs. rows == 0 is a no-op (buffers may then be null).
void forward(const Implementation& impl, const Problem& p, const Buffers& b,
             const RunConfig& cfg = {});

}  // namespace normbench
