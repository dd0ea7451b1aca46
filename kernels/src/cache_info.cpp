// Cache sizes: sysfs first (what the kernel was told by CPUID/ACPI); sysconf is a fallback
// because glibc's answer can be wrong under hypervisors (one VM here: sysconf said 320 MiB of L3,
// sysfs and lscpu 32 MiB; another, a Zen 5 without sysfs cache entries, sysconf 508 MiB).
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cstring>

#include <fstream>
#include <string>

#include <fmt/format.h>

#include "normbench/normbench.hpp"

#include "families.hpp"

namespace normbench {

namespace {
// Size of the data or unified cache of CPU 0 at `level` from sysfs, 0 if not listed.
std::int64_t sysfs_cache_bytes(int level) {
  for (int index = 0; index < 16; ++index) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", index);
    std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size");
    if (!level_file) break;
    int l = 0;
    std::string type, size;
    level_file >> l;
    type_file >> type;
    size_file >> size;
    if (l != level || type == "Instruction" || size.empty()) continue;
    std::int64_t value = 0;
    std::size_t used = 0;
    try {
      value = std::stoll(size, &used);
    } catch (...) {
      return 0;
    }
    const char unit = used < size.size() ? size[used] : 'B';
    return unit == 'K' ? value << 10 : unit == 'M' ? value << 20 : unit == 'G' ? value << 30 : value;
  }
  return 0;
}

// An AMD core reaches only the L3 of its own core complex: 32 MiB on Zen 3 to Zen 5 (96 MiB with
// 3D V-Cache). CPUID 0x8000001D tells the size and sharing of each cache; a VM that leaves it
// empty (and has no sysfs entries) still reports the whole socket's L3 in 0x80000006, which glibc
// returns: 508 MiB on a 2-vCPU Zen 5 VM, where 32 MiB of outputs would then never be streamed.
constexpr std::int64_t kAmdCoreComplexL3Bytes = std::int64_t{32} << 20;

// CPUID's vendor string ("AuthenticAMD", "GenuineIntel"), empty where there is none.
std::string cpu_vendor() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return {};
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  return vendor;
#else
  return {};
#endif
}

bool amd_without_cache_topology() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (cpu_vendor() != "AuthenticAMD") return false;
  if (__get_cpuid_max(0x80000000u, nullptr) < 0x8000001Du) return true;
  __cpuid_count(0x8000001Du, 0, a, b, c, d);
  return (a & 0x1Fu) == 0;  // no cache described
#else
  return false;
#endif
}

std::int64_t sysconf_cache_bytes(int level) {
  const long v = sysconf(level == 1 ? _SC_LEVEL1_DCACHE_SIZE : level == 2 ? _SC_LEVEL2_CACHE_SIZE
                                                                           : _SC_LEVEL3_CACHE_SIZE);
  if (v <= 0) return 0;
  if (level == 3 && amd_without_cache_topology()) return std::min<std::int64_t>(v, kAmdCoreComplexL3Bytes);
  return v;
}
}  // namespace

std::int64_t data_cache_bytes(int level) {
  if (level < 1 || level > 3) return 0;
  const std::int64_t from_sysfs = sysfs_cache_bytes(level);
  return from_sysfs > 0 ? from_sysfs : sysconf_cache_bytes(level);
}

std::int64_t last_level_cache_bytes() {
  static const std::int64_t bytes = [] {
    for (int level = 3; level >= 1; --level)
      if (const std::int64_t b = data_cache_bytes(level); b > 0) return b;
    return std::int64_t{32} << 20;
  }();
  return bytes;
}

bool intel_cpu() {
  static const bool intel = cpu_vendor() == "GenuineIntel";
  return intel;
}

int intel_family6_model() {
  static const int model = [] {
#if defined(__x86_64__) || defined(__i386__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!intel_cpu() || !__get_cpuid(1, &a, &b, &c, &d) || ((a >> 8) & 0xFu) != 6) return 0;
    return static_cast<int>(((a >> 4) & 0xFu) | (((a >> 16) & 0xFu) << 4));
#else
    return 0;
#endif
  }();
  return model;
}

bool cached_dram_rows_cpu() { return intel_family6_model() == kSkylakeServerModel; }

std::int64_t max_store_rule_cache_bytes() {
  return intel_family6_model() == kIceLakeServerModel ? kIceLakeServerStoreRuleCacheBytes : kMaxStoreRuleCacheBytes;
}

std::int64_t store_rule_cache_bytes() { return std::min(last_level_cache_bytes(), max_store_rule_cache_bytes()); }

namespace {
constexpr std::int64_t kCacheLineBytes = 64;  // x86 (and most ARM cores)

// Bytes of one row of x (and of y).
std::int64_t row_bytes(const Problem& p) { return p.cols * static_cast<std::int64_t>(dtype_size(p.dtype)); }
}  // namespace

// On Skylake-server Xeons (cached_dram_rows_cpu), LayerNorm and RMSNorm rows of up to this many
// bytes keep cached stores in DRAM. On a Cascade Lake VM (2 vCPUs, 1 MiB L2, 35.75 MiB L3) the
// stream-scale copy ran as fast with non-temporal stores as with cached ones, but a row
// normalization, which reads each row twice (statistics, then the apply step from L2), ran faster
// cached: `threaded`, `--stores cached` against auto, 3 rounds in alternating processes, time as a
// share of the same run's ceiling, median: f32 LayerNorm 1 thread 0.83-0.91 on rows of 16-64 KiB
// (3 of 3 rounds faster), bf16 RMSNorm 0.78-0.88 on rows of 8-32 KiB, f32 RMSNorm 0.96-1.02, bf16
// LayerNorm 0.87-1.04; 2 threads f32 LayerNorm 0.86-1.02, bf16 RMSNorm 0.74-1.04. Longer rows, read
// from DRAM twice, stayed faster streaming (f32 128x65537 RMSNorm 1.07, 1x33554432 1.02-1.06).
// An Emerald Rapids VM (model 207) is the opposite: its non-temporal copy ran 1.3-2.3x as fast as
// the cached one in DRAM, and streaming, every rule above unchanged, took 0.40-0.85 of the cached
// time on f32 DRAM shapes, rows of 3 KiB to 128 MiB (performance log, "Non-temporal stores on the
// Emerald Rapids VM").
// Zen 4 and Zen 5 stream as before (the performance log, "Cached stores for rows of up to 64 KiB
// on Intel").
constexpr std::int64_t kIntelCachedRowBytes = std::int64_t{64} << 10;

bool auto_streaming_stores(const Problem& p, std::int64_t llc_bytes, bool cached_dram_rows) {
  const auto element_bytes = static_cast<std::int64_t>(dtype_size(p.dtype));
  if (p.norm != Norm::kBatchNorm && stat_cols(p) * element_bytes < kCacheLineBytes) return false;
  if (2 * p.rows * row_bytes(p) < llc_bytes) return false;
  const bool row_norm = p.norm == Norm::kLayerNorm || p.norm == Norm::kRMSNorm;
  return !(cached_dram_rows && row_norm && row_bytes(p) <= kIntelCachedRowBytes);
}

namespace detail {
bool streaming_stores(const Problem& p, const RunConfig& cfg) {
  switch (cfg.stores) {
    case StorePolicy::kCached: return false;
    case StorePolicy::kStreaming: return true;
    case StorePolicy::kAuto: break;
  }
  return auto_streaming_stores(p, store_rule_cache_bytes(), cached_dram_rows_cpu());
}

// The row length that separates short rows (pairs) from long ones (the LayerNorm rules below).
constexpr std::int64_t kShortRowBytes = 4096;
// See pipeline_short_rows in families.hpp.
constexpr std::int64_t kMinPipelinedLayerNormRows = 4;
constexpr std::int64_t kMinPipelinedRmsNormRows = 3;
constexpr std::int64_t kMaxPipelinedRowBytes = 2 * kShortRowBytes;
static_assert(kMinPipelinedLayerNormRows >= kMinRowsOfMultiRowRules && kMinPipelinedRmsNormRows >= kMinRowsOfMultiRowRules);

namespace {
// Bytes of gamma, of a LayerNorm row's gamma and beta together, and of the norm's own parameters
// (LayerNorm's gamma and beta, RMSNorm's gamma) (row_bytes is above).
std::int64_t gamma_bytes(const Problem& p) { return p.cols * static_cast<std::int64_t>(dtype_size(param_dtype(p.dtype))); }
std::int64_t layernorm_param_bytes(const Problem& p) { return 2 * gamma_bytes(p); }
std::int64_t norm_param_bytes(const Problem& p) { return centres(p.norm) ? layernorm_param_bytes(p) : gamma_bytes(p); }

std::int64_t l1_bytes() {
  static const std::int64_t l1 = data_cache_bytes(1) > 0 ? data_cache_bytes(1) : std::int64_t{32} << 10;
  return l1;
}

// Whether a row is longer than kShortRowBytes and its x and y and param_bytes of parameters
// overflow L1, so that its apply step re-reads the parameters from L2.
bool rows_overflow_l1(const Problem& p, std::int64_t param_bytes) {
  return row_bytes(p) > kShortRowBytes && 2 * row_bytes(p) + param_bytes > l1_bytes();
}
// The same for a LayerNorm row with gamma and beta.
bool layernorm_rows_overflow_l1(const Problem& p) {
  return centres(p.norm) && rows_overflow_l1(p, layernorm_param_bytes(p));
}

std::int64_t l2_bytes() {
  static const std::int64_t l2 = data_cache_bytes(2) > 0 ? data_cache_bytes(2) : std::int64_t{512} << 10;
  return l2;
}

bool rows_stay_cached(const Problem& p, std::int64_t rows) {
  return 2 * rows * row_bytes(p) < last_level_cache_bytes();
}
}  // namespace

bool interleave_short_rows(const Problem& p, std::int64_t rows) {
  return row_bytes(p) <= kShortRowBytes && 2 * rows * row_bytes(p) <= l2_bytes();
}

namespace {
// Whether the whole call's x and y (every thread's rows: the last-level cache is shared) take at
// most 3/8 of the last-level cache, where triples and pipelined rows written with cached stores
// still find the next rows there (see triple_short_layernorm_rows in families.hpp).
bool call_within_cached_share(const Problem& p) {
  return 8 * (2 * p.rows * row_bytes(p)) <= 3 * last_level_cache_bytes();
}

// Whether what the pipelined loop touches at once fits L1: the row being applied (x and y), the
// next row and the parameters (LayerNorm gamma and beta, RMSNorm gamma). Beyond L2 a loop that
// overflows L1 reads the next row from L3 while evicting its own lines (see pipeline_short_rows
// in families.hpp).
bool pipelined_rows_fit_l1(const Problem& p) {
  return 3 * row_bytes(p) + norm_param_bytes(p) <= l1_bytes();
}
}  // namespace

// A triple takes three rows.
constexpr std::int64_t kMinTripleRows = 3;
static_assert(kMinTripleRows >= kMinRowsOfMultiRowRules);

bool triple_short_layernorm_rows(const Problem& p, std::int64_t rows, bool stream) {
  if (!centres(p.norm) || rows < kMinTripleRows || row_bytes(p) > kShortRowBytes) return false;
  if (dtype_size(p.dtype) == 2) return stream || call_within_cached_share(p);
  return p.dtype == DType::kF32 && 2 * rows * row_bytes(p) <= l1_bytes();
}

bool pipeline_short_rows(const Problem& p, std::int64_t rows) {
  if (rows < (centres(p.norm) ? kMinPipelinedLayerNormRows : kMinPipelinedRmsNormRows) ||
      row_bytes(p) > kMaxPipelinedRowBytes)
    return false;
  if (p.dtype == DType::kF32)
    return call_within_cached_share(p) && (2 * rows * row_bytes(p) <= l2_bytes() || pipelined_rows_fit_l1(p));
  return dtype_size(p.dtype) == 2 && row_bytes(p) > kShortRowBytes && 2 * rows * row_bytes(p) <= l2_bytes();
}

// Two rows run as a pair instead (f32 2x4096: blocked 6% slower; 3x4096 7% faster).
constexpr std::int64_t kMinBlockedRows = 3;
static_assert(kMinBlockedRows >= kMinRowsOfMultiRowRules);

// Intel: at most this many blocks in a call, or blocks that fit L2 (see families.hpp).
constexpr std::int64_t kMaxBlocksBeyondL2 = 4;

namespace {
bool blocks_fit_intel_l2(const Problem& p, std::int64_t rows) {
  return rows <= kMaxBlocksBeyondL2 * kBlockRows || 3 * kBlockRows * row_bytes(p) <= l2_bytes();
}

// The block rule for rows whose apply step reads param_bytes of parameters.
bool block_long_rows(const Problem& p, std::int64_t rows, std::int64_t param_bytes) {
  return rows >= kMinBlockedRows && rows_overflow_l1(p, param_bytes) && rows_stay_cached(p, rows) &&
         (!intel_cpu() || blocks_fit_intel_l2(p, rows));
}
}  // namespace

bool block_long_layernorm_rows(const Problem& p, std::int64_t rows) {
  return centres(p.norm) && block_long_rows(p, rows, layernorm_param_bytes(p));
}

bool pipeline_blocked_layernorm_rows(const Problem& p, std::int64_t rows) {
  return intel_cpu() && p.dtype != DType::kF64 && rows >= kMinPipelinedLayerNormRows &&  // f32 compute: f32, bf16, f16
         2 * rows * row_bytes(p) > l2_bytes() && call_within_cached_share(p);
}

// LayerNorm's gamma and beta, or RMSNorm's gamma, counted as the apply step reads them: widened
// to f64, twice their f32 bytes.
bool block_long_f32_rows_in_f64(const Problem& p, std::int64_t rows) {
  return intel_cpu() && block_long_rows(p, rows, 2 * norm_param_bytes(p));
}

// Streaming from DRAM, pairs pay where one row's x and gamma and beta do not fit in L1 together, so
// that a single row's apply step re-reads the parameters from L2 (a pair reads them once for two
// rows). Zen 5 VM (48 KiB L1), interleaved A/B, 1 thread, 4 rounds x 3 repetitions, pairs against
// single rows: 2048x16384 f32 13% and bf16 15% faster; 2048x8192 bf16 7% faster but f32 3.5%
// slower; 4096-column rows, whose x and parameters fit its L1 (f32 48 KiB, bf16 40 KiB), 5-7%
// slower (bf16 2048x4096, 4096x4096, 8192x4096; f32 4096x4096, measured again below);
// 2048x5120 the same. On the Zen 4 VM (32 KiB L1) the 4096-column rows overflow it and pairs win
// (one build, this rule against pairs only from 128 KiB of parameters, toggled at run time, ABBA,
// 6 rounds, medians of the per-round time ratio): 1 thread f32 2048x4096 0.86, 2048x5120 0.92,
// 2048x8192 0.92, 4096x4096 0.92, 8192x4096 0.95; bf16 0.83-0.96 (8192x4096 1.00); f16 0.89-0.99
// (2048x4096 1.00); `threaded` at 2 threads 0.85-0.98 but f32 2048x5120 1.12 and f16 2048x5120
// 1.00 (rounds 0.73-1.78).
// A row whose x and parameters fill L1 exactly (f32 4096 columns on a 48 KiB L1) counts as
// overflowing it: a cyclic pass over exactly a cache's capacity misses as soon as anything else
// (the stack, the statistics' prefetches) takes a line of it.
// Zen 5 VM, one build toggled at run time, ABBA, 6 rounds, pinned, medians of the per-round ratio
// of the time to the in-run stream-scale ceiling's, pairs against single rows: f32 LayerNorm
// 16384x4096 0.91-0.96, 8192x4096 0.94-0.98, 2048x4096 0.90-0.93, 4096x4096 0.97-1.00 (two A/Bs,
// 1 thread); `threaded` 2 threads 0.91, 0.94, 0.95, 1.00; `highway-f64` 16384x4096 0.82,
// 8192x4096 0.86, 4096x4096 0.82, 2048x4096 0.86. f64 rows of 2048 columns fill it too:
// 16384x2048 0.89, 8192x2048 0.87, 4096x2048 1.01; `threaded` 2 threads 0.87-0.94. bf16
// 4096-column rows (40 KiB with their parameters) stay single: pairs read 0.96-1.12 of their time.
bool interleave_long_layernorm_rows(const Problem& p, std::int64_t rows) {
  return layernorm_rows_overflow_l1(p) &&
         (rows_stay_cached(p, rows) || row_bytes(p) + layernorm_param_bytes(p) >= l1_bytes());
}

// At most this much held, whatever the L2 (measured on the Emerald Rapids VM: see families.hpp).
constexpr std::int64_t kMaxPrefetchedLongRowsBytes = std::int64_t{3} << 19;  // 1.5 MiB
// f32 compute's half-rate prefetch of the next long row: at most this much held (see families.hpp).
constexpr std::int64_t kMaxHalfRateF32LongRowsBytes = std::int64_t{1} << 20;  // 1 MiB
namespace {
// Two rows and the norm's parameters (param_bytes) fit L2, and at most max_held bytes of them.
bool next_long_row_fits_l2(const Problem& p, std::int64_t param_bytes,
                           std::int64_t max_held = kMaxPrefetchedLongRowsBytes) {
  const std::int64_t held = 2 * row_bytes(p) + param_bytes;
  return 16 * held <= 17 * l2_bytes() && held <= max_held;
}
}  // namespace

bool prefetch_next_long_layernorm_row(const Problem& p) {
  return intel_cpu() && centres(p.norm) && next_long_row_fits_l2(p, layernorm_param_bytes(p));
}

bool half_rate_next_rows_in_f64() { return intel_cpu(); }

bool half_rate_next_long_row(const Problem& p, bool f64_compute) {
  return intel_cpu() &&
         next_long_row_fits_l2(p, norm_param_bytes(p), f64_compute ? kMaxPrefetchedLongRowsBytes : kMaxHalfRateF32LongRowsBytes);
}

bool prefetch_next_rows_in_rms_stats() { return !intel_cpu(); }

// Only where the row's parameters overflow L2 (every row then streams them from beyond it):
// with 1 MiB of gamma and beta (f32 LayerNorm 64x131072, no next-row prefetch) reading ahead had
// measured 1.07 (1 thread) and 1.13 (2 threads) of the time without it.
bool prefetch_long_rows_ahead(const Problem& p) {
  return intel_cpu() && norm_param_bytes(p) > l2_bytes();
}
}  // namespace detail

}  // namespace normbench
