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

enum class Norm : std::uint8_t { kLayerNorm, kRMSNorm, kGroupNorm, kBatchNorm };
inline constexpr Norm kAllNorms[] = {Norm::kLayerNorm, Norm::kRMSNorm, Norm::kGroupNorm, Norm::kBatchNorm};
std::string_view norm_name(Norm n);  // "layernorm", "rmsnorm", "groupnorm", "batchnorm"
// Whether the norm subtracts a mean (LayerNorm, GroupNorm, BatchNorm) or not (RMSNorm).
inline bool centres(Norm n) { return n != Norm::kRMSNorm; }
Norm parse_norm(std::string_view name);  // throws Error

// Default eps per norm (torch.nn.LayerNorm, GroupNorm and BatchNorm 1e-5; RMSNorm as in Llama, 1e-6).
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

// BatchNorm's mode and layout (torch.nn.BatchNorm1d/2d semantics).
struct BatchNormOptions {
  // Training: statistics of the batch (biased variance), and the running statistics, when given,
  // updated as running = (1 - momentum) * running + momentum * batch, with the unbiased batch
  // variance for running_var. Inference: normalizes with the running statistics (required).
  bool training = true;
  double momentum = 0.1;  // in [0, 1]
  // Layout of x: false (N, C, L) with L = cols / channels contiguous positions per channel
  // (NCHW); true (N, L, C), channels contiguous (NHWC, channels_last). With L = 1, (N, C), both
  // are the same.
  bool channels_last = false;
  bool operator==(const BatchNormOptions&) const = default;
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
// BatchNorm: x is (N = rows, C = channels, L = cols/C) or, channels_last, (N, L, C); statistics
// per channel over the N*L values of that channel; gamma/beta (and running statistics) per channel.
// channels = 0 means channels = cols (one spatial position: the (N, C) input). LayerNorm and
// RMSNorm require groups = 1 and channels = 0; BatchNorm requires groups = 1.
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
  BatchNormOptions batchnorm{};
};

// The independent normalizations of a problem, "units", each over stat_cols(p) elements:
// rows * groups of them (LayerNorm, RMSNorm, GroupNorm: unit u covers the contiguous elements
// [u * stat_cols, (u + 1) * stat_cols)), or BatchNorm's channels (N*L strided elements each;
// unit_element says where). Per-unit outputs (Buffers::mean/rstd) have units(p) entries;
// gamma/beta have param_count(p).
inline bool per_channel_params(const Problem& p) { return p.norm == Norm::kGroupNorm || p.norm == Norm::kBatchNorm; }
inline std::int64_t channel_count(const Problem& p) {
  return per_channel_params(p) && p.channels > 0 ? p.channels : p.cols;
}
inline std::int64_t group_count(const Problem& p) { return p.norm == Norm::kGroupNorm ? p.groups : 1; }
// Elements sharing one gamma/beta value per sample: the spatial size L (GroupNorm, BatchNorm), 1 otherwise.
inline std::int64_t spatial_size(const Problem& p) { return p.cols / channel_count(p); }
inline std::int64_t units(const Problem& p) {
  return p.norm == Norm::kBatchNorm ? channel_count(p) : p.rows * group_count(p);
}
inline std::int64_t stat_cols(const Problem& p) {
  return p.norm == Norm::kBatchNorm ? p.rows * spatial_size(p) : p.cols / group_count(p);
}
inline std::int64_t param_count(const Problem& p) { return per_channel_params(p) ? channel_count(p) : p.cols; }
// BatchNorm reads x as (N, L, C): channels_last, or (N, C) where both layouts coincide.
inline bool channels_innermost(const Problem& p) {
  return p.norm == Norm::kBatchNorm && (p.batchnorm.channels_last || spatial_size(p) == 1);
}
// Flat index into x/y of element i (0 <= i < stat_cols) of unit u.
inline std::int64_t unit_element(const Problem& p, std::int64_t u, std::int64_t i) {
  if (p.norm != Norm::kBatchNorm) return u * stat_cols(p) + i;
  if (channels_innermost(p)) return i * channel_count(p) + u;  // position i = n * L + l
  const std::int64_t l = spatial_size(p);
  return (i / l) * p.cols + u * l + i % l;
}
// The layout of x in reports: "rows" (LayerNorm, RMSNorm), "ncl" (GroupNorm; BatchNorm channels
// first), "nlc" (BatchNorm channels last) or "nc" (BatchNorm over (N, C)).
std::string_view layout_name(const Problem& p);

// Index into gamma/beta of element i of unit u: its column (LayerNorm, RMSNorm) or its channel.
inline std::int64_t unit_param(const Problem& p, std::int64_t u, std::int64_t i) {
  if (p.norm == Norm::kBatchNorm) return u;
  if (p.norm == Norm::kGroupNorm) return (u % p.groups) * (channel_count(p) / p.groups) + i / spatial_size(p);
  return i;
}

// Data of one call. x/y have the problem's dtype; gamma/beta have the parameter dtype
// (f64 when dtype is f64, f32 otherwise) and param_count(p) elements (`cols`, or GroupNorm's
// channels), and are optional.
// mean/rstd, when given, receive units(p) statistics in f32 (one per row, per row and group, or
// BatchNorm's per channel: the batch's in training, the running ones used in inference);
// RMSNorm writes mean = 0. y == x (in place) is allowed; other overlaps are not.
// With Problem::residual_add: residual (dtype of x) is added to x and the sum written to h
// (rows*cols, dtype of x); h may be x or residual itself (vLLM's in-place fused_add_rms_norm),
// y must not overlap h or residual.
// BatchNorm: running_mean/running_var (parameter dtype, channels elements) are read in inference
// and updated in training (both or neither); they are written only after every check passed.
struct Buffers {
  const void* x = nullptr;
  void* y = nullptr;
  const void* gamma = nullptr;
  const void* beta = nullptr;
  float* mean = nullptr;
  float* rstd = nullptr;
  const void* residual = nullptr;
  void* h = nullptr;
  void* running_mean = nullptr;
  void* running_var = nullptr;
  // Element counts of gamma, beta and the running statistics when the caller knows them (-1: not
  // given); a count other than param_count(p) is rejected before anything is written.
  std::int64_t gamma_elements = -1, beta_elements = -1, running_elements = -1;
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
  bool gamma;                 // whether it passes gamma
  bool beta;                  // whether it passes beta to LayerNorm, GroupNorm and BatchNorm
  bool rmsnorm_beta = false;  // ... and to RMSNorm (standard RMSNorm has no shift; rms-shift does)
  bool batchnorm_inference = false;  // BatchNorm with the running statistics (else a training step)
  bool applies(Norm n, DType t) const;
  bool has_beta(Norm n) const { return n == Norm::kRMSNorm ? rmsnorm_beta : beta; }
  // p with this preset's options (variant, residual add, BatchNorm mode).
  Problem apply_to(Problem p) const;
};
// "standard" first.
std::span<const VariantPreset> variant_presets();
// Throws Error listing the known names when `name` is unknown.
const VariantPreset& find_variant(std::string_view name);

// h = x + residual elementwise, correctly rounded to t (Highway, dispatched): the "separate add"
// that residual_add fuses; every family's h equals it bit for bit.
void add_rounded(DType t, const void* x, const void* residual, void* h, std::size_t n);

// How the highway family writes y. Non-temporal (streaming) stores bypass the caches: for outputs
// larger than the last-level cache they save the read-for-ownership of every y line and leave x
// in the cache; for small outputs they are slower (y must come back from memory if read again).
enum class StorePolicy : std::uint8_t {
  kAuto,       // streaming when the output is at least half the last-level cache (x + y no longer fit)
               // and rows (GroupNorm units) span at least a cache line
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
// Whether CPU 0's vendor is Intel (CPUID "GenuineIntel"); some of the kernels' rules depend on it.
bool intel_cpu();
// The model of an Intel family-6 CPU (CPUID leaf 1, extended model included), 0 on any other CPU.
int intel_family6_model();
// Skylake-SP, Cascade Lake and Cooper Lake Xeons: one server core and mesh generation, one model.
inline constexpr int kSkylakeServerModel = 85;
// Whether the store rule keeps LayerNorm and RMSNorm rows of up to 64 KiB cached however large the
// output: measured faster so on a Cascade Lake VM, and slower on an Emerald Rapids VM, so only on
// Skylake-server models (see kernels/src/cache_info.cpp).
bool cached_dram_rows_cpu();
// The store rule counts at most this much of the last-level cache. A 2-vCPU VM on an Emerald
// Rapids socket reports the socket's whole 300 MiB L3, shared with every other core; there its
// kernels ran faster streaming from 64 MiB of x and y (performance log, "Non-temporal stores on
// the Emerald Rapids VM"). AMD's core complexes (32 MiB) and a Cascade Lake's 35.75 MiB lie below.
inline constexpr std::int64_t kMaxStoreRuleCacheBytes = std::int64_t{64} << 20;
// Ice Lake-SP Xeons (family 6, model 106): the store rule counts at most 32 MiB of their L3. A
// 2-vCPU VM on one reported 48 MiB, yet its f32 LayerNorm and RMSNorm calls with 32 and 40 MiB
// of x and y (y a third of the L3 or more) took 0.44-0.71 of the cached time streaming, 1 and 2
// threads (performance log, "Streaming stores from 32 MiB on the Ice Lake VM").
inline constexpr int kIceLakeServerModel = 106;
inline constexpr std::int64_t kIceLakeServerStoreRuleCacheBytes = std::int64_t{32} << 20;
// The most the store rule counts on this CPU: kIceLakeServerStoreRuleCacheBytes on Ice Lake-SP,
// else kMaxStoreRuleCacheBytes.
std::int64_t max_store_rule_cache_bytes();
// min(last_level_cache_bytes(), max_store_rule_cache_bytes()): the llc_bytes this machine's rule uses.
std::int64_t store_rule_cache_bytes();
// StorePolicy::kAuto's choice for p on a CPU with llc_bytes of last-level cache
// (cached_dram_rows: cached_dram_rows_cpu()): non-temporal stores when y alone is at least half
// the last-level cache and rows span a cache line or more, except, with cached_dram_rows,
// LayerNorm and RMSNorm rows of up to 64 KiB (see kernels/src/cache_info.cpp).
// uses_streaming_stores() gives this machine's answer.
bool auto_streaming_stores(const Problem& p, std::int64_t llc_bytes, bool cached_dram_rows);

inline constexpr int kMaxThreads = 1024;

// `threaded` gives each thread at least this many elements, and the benchmark's bandwidth ceiling
// splits its copy the same way, so both pay for a parallel region at the same sizes. Below it,
// waking a thread costs more than it saves: a parallel region costs ~0.6 us with the benchmark's
// bounded spin, 8K f32 elements are ~1.5 us of L2-resident work (interleaved A/B against 32K:
// 85x768 RMSNorm at 2 threads 26% faster, 22x768 and 43x768 unchanged).
inline constexpr std::int64_t kMinElementsPerThread = 8 * 1024;

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
// 3 N kappa^2 u (Chan et al. give N kappa^2 u without the constant: mean^2's rounding counts twice). With pairwise=true, N is replaced by log2 N (blocked/pairwise summation).
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
  // Threads a call runs on (see threads_used); null: cfg.threads where uses_threads, else 1.
  int (*threads_used)(const Problem&, const RunConfig&) = nullptr;

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

// Threads impl runs this call on: 1 for implementations without threads; for `threaded`, fewer
// than cfg.threads where the work does not split that far (fewer rows, units, chunks or positions
// than threads, or fewer than kMinElementsPerThread elements each), computed by the same code
// that cuts the work.
int threads_used(const Implementation& impl, const Problem& p, const RunConfig& cfg = {});

// Checks a call without running it; throws Error naming the first problem found.
void validate(const Implementation& impl, const Problem& p, const Buffers& b,
              const RunConfig& cfg = {});
// Validates, then runs. rows == 0 is a no-op (buffers may then be null).
void forward(const Implementation& impl, const Problem& p, const Buffers& b,
             const RunConfig& cfg = {});

}  // namespace normbench
