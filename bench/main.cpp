// normbench: Google Benchmark harness over every registered implementation, with the
// machine's bandwidth ceiling measured beside each case and a self-describing CSV report.
#include <omp.h>
#include <regex.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <set>

#include <CLI/CLI.hpp>
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "cases.hpp"
#include "ceiling.hpp"
#include "normbench/cli.hpp"
#include "normbench/listing.hpp"
#include "normbench/normbench.hpp"
#include "normbench/report.hpp"
#include "normbench/thread_team.hpp"
#include "openmp_spin.hpp"
#include "peers.hpp"
#include "placed_bytes.hpp"
#include "reporter.hpp"
#include "shapes.hpp"

namespace normbench::bench {
namespace {

// The CPUs a team of `threads` OpenMP threads may run on, together (each thread's affinity
// mask, as OMP_PROC_BIND/OMP_PLACES, taskset or a container left it).
int cpus_of_team(int threads) {
  cpu_set_t all;
  CPU_ZERO(&all);
#pragma omp parallel num_threads(threads)
  {
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (sched_getaffinity(0, sizeof mine, &mine) == 0) {
#pragma omp critical
      CPU_OR(&all, &all, &mine);
    }
  }
  return CPU_COUNT(&all);
}

// A T-thread case whose threads share fewer than T CPUs measures time-slicing, not T threads:
// say so before the run rather than report it as thread scaling.
void warn_if_threads_share_cpus(const std::vector<int>& threads) {
  const int most = *std::max_element(threads.begin(), threads.end());
  if (most < 2) return;
  const int cpus = cpus_of_team(most);
  if (cpus >= most) return;
  std::cerr << fmt::format("[normbench] warning: {} OpenMP threads can run on only {} CPU(s) (the affinity mask, "
                           "OMP_PLACES/OMP_PROC_BIND or taskset): cases with more threads than that time-slice "
                           "them, and their rates are not thread scaling\n",
                           most, cpus);
}

std::int64_t physical_memory_bytes() {
  return static_cast<std::int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
}

// Buffers start on a cache line, as PyTorch's CPU allocator (c10::alloc_cpu, 64 bytes) and
// oneDNN place tensors; glibc's malloc gives 16 bytes, which split every 64-byte vector access.
template <class T, std::size_t kAlignBytes = 64>
struct AlignedAllocator {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = AlignedAllocator<U, kAlignBytes>;
  };
  static constexpr std::align_val_t kAlign{kAlignBytes};
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U, kAlignBytes>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, std::size_t) { ::operator delete(p, kAlign); }
  friend bool operator==(const AlignedAllocator&, const AlignedAllocator&) { return true; }
};

// --huge-pages: every buffer of 2 MiB or more on huge pages (PlacedBytes::assign in placed_bytes.hpp).
bool g_huge_pages = false;

// The bracketed word of /sys/kernel/mm/transparent_hugepage/enabled ("[madvise]" -> madvise),
// or "unavailable".
std::string thp_policy() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(f, line)) return "unavailable";
  const auto open = line.find('['), close = line.find(']');
  return open != std::string::npos && close != std::string::npos && close > open ? line.substr(open + 1, close - open - 1)
                                                                              : "unavailable";
}

// This process's anonymous memory backed by transparent huge pages, bytes (-1 if unknown).
std::int64_t anon_huge_page_bytes() {
  std::ifstream f("/proc/self/smaps_rollup");
  std::string key;
  std::int64_t kib = 0;
  while (f >> key) {
    if (key == "AnonHugePages:" && f >> kib) return kib * 1024;
    f.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return -1;
}

// Input data and outputs for one (dtype, shape); with --cold-cache, `copies` consecutive copies
// of x and y whose total exceeds twice the last-level cache, visited in turn.
struct Workspace {
  DType dtype;
  Shape shape;
  std::int64_t copies;
  PlacedBytes x, y;  // copies * rows * cols elements each
  PlacedBytes gamma, beta;
  PlacedBytes residual, h;  // residual-add cases only, allocated on first use
  PlacedBytes running_mean, running_var;  // BatchNorm: cols entries (>= channels), 0 and 1
  std::vector<float, AlignedAllocator<float>> ceiling_extra;
  std::size_t copy_bytes() const { return static_cast<std::size_t>(shape.rows * shape.cols) * dtype_size(dtype); }
  const void* x_copy(std::int64_t k) const { return x.data() + k * copy_bytes(); }
  void* y_copy(std::int64_t k) { return y.data() + k * copy_bytes(); }
  const void* r_copy(std::int64_t k) const { return residual.data() + k * copy_bytes(); }
  void* h_copy(std::int64_t k) { return h.data() + k * copy_bytes(); }
  void ensure_residual() {  // the residual is x shifted by one element: different values, same distribution
    if (!residual.empty()) return;
    const std::size_t esize = dtype_size(dtype);
    residual.assign(x.size(), kResidualPageOffset, g_huge_pages);
    std::memcpy(residual.data(), x.data() + esize, x.size() - esize);
    std::memcpy(residual.data() + x.size() - esize, x.data(), esize);
    h.assign(x.size(), kHPageOffset, g_huge_pages);
  }
};

std::int64_t cold_copies(DType t, Shape s) {
  const std::int64_t bytes = 2 * s.rows * s.cols * static_cast<std::int64_t>(dtype_size(t));
  return 2 * last_level_cache_bytes() / bytes + 1;
}

// --huge-pages: says so once if the kernel backed less than half of x and y (64 MiB or more) with
// huge pages (memory too fragmented, or THP limits), as those cases then ran on 4 KiB pages.
void warn_if_few_huge_pages(std::size_t xy_bytes) {
  static bool warned = false;
  if (!g_huge_pages || warned || xy_bytes < (std::size_t{64} << 20)) return;
  const std::int64_t huge = anon_huge_page_bytes();
  if (huge < 0 || static_cast<std::size_t>(huge) >= xy_bytes / 2) return;
  warned = true;
  std::cerr << fmt::format("[normbench] warning: --huge-pages: the kernel backed only {} MiB of x and y ({} MiB) with huge "
                           "pages; the report's huge_pages column says what was asked, not what was given\n",
                           huge >> 20, xy_bytes >> 20);
}

// Keeps only the most recent workspace: cases of one shape run back to back.
Workspace& workspace_for(DType t, Shape s, bool cold) {
  static std::unique_ptr<Workspace> ws;
  const std::int64_t copies = cold ? cold_copies(t, s) : 1;
  if (ws && ws->dtype == t && ws->shape == s && ws->copies == copies) return *ws;
  ws.reset();
  ws = std::make_unique<Workspace>(Workspace{t, s, copies, {}, {}, {}, {}, {}, {}, {}, {}, {}});
  // A 64K-value tile of N(0.5, 1) data, rounded to the dtype, repeated: realistic values
  // without spending seconds in the random generator for 512 MiB inputs.
  const std::size_t n = static_cast<std::size_t>(s.rows * s.cols) * copies, esize = dtype_size(t);
  const std::size_t tile = std::min<std::size_t>(n, 65536);
  std::vector<unsigned char> pattern(tile * esize);
  std::mt19937_64 rng(42);
  std::normal_distribution<double> normal(0.5, 1.0);
  for (std::size_t i = 0; i < tile; ++i) store_rounded(t, pattern.data(), i, normal(rng));
  ws->x.assign(n * esize, kXPageOffset, g_huge_pages);
  for (std::size_t i = 0; i < n; i += tile)
    std::memcpy(ws->x.data() + i * esize, pattern.data(), std::min(tile, n - i) * esize);
  ws->y.assign(n * esize, kYPageOffset, g_huge_pages);  // zeroed: touches every page before timing
  warn_if_few_huge_pages(2 * n * esize);
  const std::size_t psize = dtype_size(param_dtype(t));
  for (PlacedBytes* param : {&ws->gamma, &ws->beta, &ws->running_mean, &ws->running_var})
    param->assign(s.cols * psize, kParamPageOffset, g_huge_pages);
  for (std::int64_t i = 0; i < s.cols; ++i) {
    store_rounded(param_dtype(t), ws->gamma.data(), i, 1.0 + 0.001 * (i % 7));
    store_rounded(param_dtype(t), ws->beta.data(), i, 0.01 * (i % 5));
    store_rounded(param_dtype(t), ws->running_mean.data(), i, 0.0);
    store_rounded(param_dtype(t), ws->running_var.data(), i, 1.0);
  }
  return *ws;
}

// One call of a case's kernel per operator(), rotating through the workspace's copies.
// Throws Error if the implementation rejects the problem.
class NormCall {
 public:
  explicit NormCall(const Case& c)
      : c_(c),
        ws_(workspace_for(c.dtype, c.shape, c.cold_cache)),
        p_(c.problem()),
        cfg_{c.threads, c.stores},
        separate_(c.is_separate_add()),
        preset_(find_variant(separate_ ? "residual-add" : c.variant)),
        elements_(static_cast<std::size_t>(c.shape.rows * c.shape.cols)) {
    if (separate_ || p_.residual_add) ws_.ensure_residual();
    validate(*c_.impl, p_, buffers(0), cfg_);
  }

  void operator()() {
    if (separate_) add_rounded(c_.dtype, ws_.x_copy(k_), ws_.r_copy(k_), ws_.h_copy(k_), elements_);
    c_.impl->kernel(p_, buffers(k_), cfg_);
    benchmark::ClobberMemory();
    if (++k_ == ws_.copies) k_ = 0;
  }

 private:
  // The buffers of copy k: separate adds write h, then normalize h into y.
  Buffers buffers(std::int64_t k) const {
    Buffers b{separate_ ? ws_.h_copy(k) : ws_.x_copy(k), ws_.y_copy(k), preset_.gamma ? ws_.gamma.data() : nullptr,
              preset_.has_beta(c_.norm) ? ws_.beta.data() : nullptr};
    if (p_.residual_add) {
      b.residual = ws_.r_copy(k);
      b.h = ws_.h_copy(k);
    }
    if (p_.norm == Norm::kBatchNorm) {  // training updates them every iteration, as a training loop does
      b.running_mean = ws_.running_mean.data();
      b.running_var = ws_.running_var.data();
    }
    return b;
  }

  const Case& c_;
  Workspace& ws_;
  const Problem p_;
  const RunConfig cfg_;
  const bool separate_;
  const VariantPreset& preset_;
  const std::size_t elements_;
  std::int64_t k_ = 0;
};

void run_norm_case(benchmark::State& state, const Case& c) {
  std::optional<NormCall> call;
  try {
    call.emplace(c);
  } catch (const Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  const auto start = std::chrono::steady_clock::now();  // for the console's live fraction only
  for (auto _ : state) (*call)();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.SetBytesProcessed(state.iterations() * c.bytes_per_iter);
  state.SetItemsProcessed(state.iterations() * c.shape.rows * c.shape.cols);
  const double ceiling = ceiling_bytes_per_second(c.ceiling_name);
  if (ceiling > 0 && seconds > 0)  // the CSV recomputes it from medians
    state.counters["frac_of_ceiling"] = static_cast<double>(state.iterations() * c.bytes_per_iter) / seconds / ceiling;
}

// --hygiene-check: does a threaded case leave something behind (the team's workers still spinning)
// that slows the 1-thread case run next? An interleaved A/B outside Google Benchmark's loop, so
// that the machine's drift cancels: each round first runs, for kHygieneLeadSeconds, either the
// threaded case (A) or the probe itself (B), then times a fixed number of probe calls at once.
// Printed: the medians over the rounds and A/B (near 1: nothing left behind).
constexpr double kHygieneLeadSeconds = 0.01;
constexpr int kHygieneRoundsEach = 15;

void hygiene_check(const Case& probe_case, const Case& threaded_case) {
  using clock = std::chrono::steady_clock;
  NormCall probe(probe_case), threaded(threaded_case);  // same dtype and shape: one workspace
  const auto run_for = [](NormCall& call, double seconds) {
    const auto end = clock::now() + std::chrono::duration<double>(seconds);
    std::int64_t calls = 0;
    do {
      call();
      ++calls;
    } while (clock::now() < end);
    return calls;
  };
  const std::int64_t calls = run_for(probe, kHygieneLeadSeconds);  // the measured batch: ~ one lead long
  std::vector<double> after_threaded, after_itself;
  for (int round = 0; round < 2 * kHygieneRoundsEach; ++round) {
    const bool a = round % 2 == 0;
    run_for(a ? threaded : probe, kHygieneLeadSeconds);
    const auto start = clock::now();
    for (std::int64_t i = 0; i < calls; ++i) probe();
    const double ns = std::chrono::duration<double, std::nano>(clock::now() - start).count() / calls;
    (a ? after_threaded : after_itself).push_back(ns);
  }
  const double a = report::median(after_threaded), b = report::median(after_itself);
  std::cerr << fmt::format("[normbench] hygiene: {} median {:.1f} ns right after {}, {:.1f} ns right after itself "
                           "(ratio {:.3f}; {} interleaved rounds each)\n",
                           probe_case.name, a, threaded_case.name, b, a / b, kHygieneRoundsEach);
}

// Google Benchmark's loop over a ceiling: call(x, y) on the workspace's copies in turn; its float
// results are kept so that the reads they sum are not optimized away.
template <class Call>
void time_ceiling(benchmark::State& state, const Case& c, Workspace& ws, Call&& call) {
  float sink = 0;
  std::int64_t k = 0;
  for (auto _ : state) {
    sink += call(ws.x_copy(k), ws.y_copy(k));
    benchmark::ClobberMemory();
    if (++k == ws.copies) k = 0;
  }
  benchmark::DoNotOptimize(sink);
  state.SetBytesProcessed(state.iterations() * c.bytes_per_iter);  // the reporter records the rate
}

// The kernels' statistics chunk (kernels/src/chunked_stats.hpp's kStatsChunk): longer rows merge
// chunks. The row-phased ceiling prefetches as rows of one chunk do, and only such rows take
// LayerNorm's arithmetic ceiling, which does not merge chunks.
constexpr std::int64_t kStatsChunkCols = 32 * 1024;

// The row-phased ceiling of c.norm (ceiling.hpp) over the workspace's copies, with its gamma/beta.
void run_phased_ceiling_case(benchmark::State& state, const Case& c, Workspace& ws) {
  const std::size_t param_bytes = static_cast<std::size_t>(c.shape.cols) * dtype_size(param_dtype(c.dtype));
  PhasedRows rows{nullptr, nullptr, ws.copy_bytes() / sizeof(float), c.shape.rows,
                  reinterpret_cast<const float*>(ws.gamma.data()),
                  c.norm == Norm::kLayerNorm ? reinterpret_cast<const float*>(ws.beta.data()) : nullptr,
                  param_bytes / sizeof(float), dtype_size(param_dtype(c.dtype)) / dtype_size(c.dtype),
                  c.stores == StorePolicy::kStreaming};
  // As highway_rows-inl.h's kPrefetchInStatsBytes: rows of 8 KiB or more and of one statistics
  // chunk (32768 elements) also prefetch the next row while their statistics read it.
  const std::size_t row_bytes = static_cast<std::size_t>(c.shape.cols) * dtype_size(c.dtype);
  rows.prefetch_in_read = row_bytes >= 8 * 1024 && c.shape.cols <= kStatsChunkCols;
  // In pairs: against one row at a time (interleaved runs, f32, 1 thread) 128x4096 read 0.63-0.65 of
  // the stream-scale ceiling instead of 0.43-0.57, 5x768 0.48 instead of 0.40-0.43, LayerNorm
  // 2048x16384 0.77-0.88 instead of 0.66-0.86; 43x768 0.62-0.64 instead of 0.67-0.77.
  rows.pairs = true;
  rows.layernorm_arithmetic = c.arithmetic;
  time_ceiling(state, c, ws, [&](const void* x, void* y) {
    rows.x = static_cast<const float*>(x);
    rows.y = static_cast<float*>(y);
    return row_phased(rows, c.threads);
  });
}

void run_ceiling_case(benchmark::State& state, const Case& c) {
  Workspace& ws = workspace_for(c.dtype, c.shape, c.cold_cache);
  if (c.phased) return run_phased_ceiling_case(state, c, ws);
  // The ceiling moves the norm's bytes as f32: x and y of the same size, plus gamma/beta read once.
  const std::size_t floats = ws.copy_bytes() / sizeof(float);
  const std::size_t extra = 2 * ws.gamma.size() / sizeof(float);
  if (ws.ceiling_extra.size() != extra) ws.ceiling_extra.assign(extra, 1.0f);
  time_ceiling(state, c, ws, [&](const void* x, void* y) {
    return stream_scale(static_cast<const float*>(x), static_cast<float*>(y), floats, ws.ceiling_extra.data(), extra,
                        c.threads, c.stores == StorePolicy::kStreaming);
  });
}

std::vector<int> default_threads() {
  const int cores = std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  std::vector<int> t;
  for (int p = 1; p <= cores; p *= 2) t.push_back(p);
  if (t.back() != cores) t.push_back(cores);
  return t;
}

// Which names Google Benchmark's --benchmark_filter selects (for the progress total and to skip
// passes it selects nothing of), in Google Benchmark's syntax: a POSIX extended regular
// expression searched for anywhere in the name, negated by a leading '-'. (POSIX regcomp, not
// std::regex, whose instantiation draws GCC 12 -Wmaybe-uninitialized false positives under the
// sanitizers.) Throws Error for a malformed filter.
class FilterSelection {
 public:
  explicit FilterSelection(std::string filter) {
    if (filter.empty() || filter == "all" || filter == ".") return;
    if (filter[0] == '-') {
      negate_ = true;
      filter.erase(0, 1);
    }
    if (const int rc = regcomp(&re_, filter.c_str(), REG_EXTENDED | REG_NOSUB); rc != 0) {
      char message[256];
      regerror(rc, &re_, message, sizeof message);
      throw Error(message);
    }
    compiled_ = true;
  }
  FilterSelection(const FilterSelection&) = delete;
  FilterSelection& operator=(const FilterSelection&) = delete;
  ~FilterSelection() {
    if (compiled_) regfree(&re_);
  }
  bool selects(const std::string& name) const {
    return !compiled_ || (regexec(&re_, name.c_str(), 0, nullptr, 0) == 0) != negate_;
  }

 private:
  regex_t re_{};
  bool compiled_ = false, negate_ = false;
};

struct Options {
  std::string shape_set = "transformer";
  std::vector<std::string> shapes, norms, impls, dtypes = {"f32", "bf16"}, threads, variants;
  bool cold_cache = false, huge_pages = false, list = false, every_repetition = false, hygiene = false;
  std::string report_path, stores = "auto";
};

StorePolicy parse_store_policy(const std::string& s) {
  if (s == "auto") return StorePolicy::kAuto;
  if (s == "cached") return StorePolicy::kCached;
  if (s == "streaming") return StorePolicy::kStreaming;
  throw Error(fmt::format("--stores: '{}' is not one of auto, cached, streaming", s));
}

// Google Benchmark checks these two flags less than a report needs: a negative repetition count
// aborted inside it (std::length_error), 0 ran nothing and exited 0, and it accepts a negative or
// zero minimum time. Returns the one-line error, or nothing where the value is good.
std::optional<std::string> bad_benchmark_flag(std::string_view a) {
  constexpr std::string_view kReps = "--benchmark_repetitions=", kMinTime = "--benchmark_min_time=";
  if (a.rfind(kReps, 0) == 0) {
    const std::string_view v = a.substr(kReps.size());
    const std::optional<int> n = cli::parse_number<int>(v);
    if (!n || *n < 1)
      return fmt::format("--benchmark_repetitions: '{}' is not a repetition count of at least 1 (default 5; the "
                         "medians want 5 or more)", v);
  }
  if (a.rfind(kMinTime, 0) == 0) {
    const std::string_view v = a.substr(kMinTime.size());
    const std::optional<double> seconds = cli::parse_number<double>(v);
    if (!seconds || !(*seconds > 0) || !std::isfinite(*seconds))
      return fmt::format("--benchmark_min_time: '{}' is not a positive number of seconds (default 0.1)", v);
  }
  return std::nullopt;
}

int run(int argc, char** argv) {
  peers::register_all();

  // Google Benchmark's own flags pass through untouched; everything else is ours.
  std::vector<char*> gb_args{argv[0]}, own_args{argv[0]};
  bool has_reps = false, has_min_time = false, has_interleaving = false, interleaved = true;
  std::string filter, out_path, out_format = "json";
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.rfind("--benchmark_", 0) == 0 || a.rfind("--v=", 0) == 0) {
      if (const auto error = bad_benchmark_flag(a)) {
        std::cerr << "normbench: " << *error << "\n";
        return 2;
      }
      has_reps |= a.rfind("--benchmark_repetitions", 0) == 0;
      has_min_time |= a.rfind("--benchmark_min_time", 0) == 0;
      if (a.rfind("--benchmark_enable_random_interleaving", 0) == 0) {
        has_interleaving = true;
        const std::string_view v = a.substr(std::min(a.size(), a.find('=') + 1));
        interleaved = !(v == "false" || v == "0" || v == "no" || v == "f" || v == "n");
      }
      if (a.rfind("--benchmark_filter=", 0) == 0) filter = std::string(a.substr(19));
      // Google Benchmark would rewrite --benchmark_out at each of our passes: ours spans them.
      if (a.rfind("--benchmark_out=", 0) == 0) {
        out_path = std::string(a.substr(16));
        continue;
      }
      if (a.rfind("--benchmark_out_format=", 0) == 0) {
        out_format = std::string(a.substr(23));
        continue;
      }
      // We need every repetition for the CSV; aggregates-only becomes a console choice of ours.
      if (a.rfind("--benchmark_display_aggregates_only", 0) == 0 ||
          a.rfind("--benchmark_report_aggregates_only", 0) == 0)
        continue;
      gb_args.push_back(argv[i]);
    } else {
      own_args.push_back(argv[i]);
    }
  }

  Options o;
  CLI::App app{"normbench: throughput of every registered normalization implementation against the\n"
               "machine's bandwidth ceiling, measured in the same run. Writes a CSV report (see reports/README.md)."};
  app.add_option("--shapes", o.shape_set, "Shape set(s): quick, transformer, cache-sweep, odd, cnn, full (comma list)")
      ->capture_default_str();
  app.add_option("--shape", o.shapes, "Explicit shape RxC, NxCxS (GroupNorm/BatchNorm input; for LayerNorm/RMSNorm normalized_shape (C, S)) or NxSxC:nlc (channels last, BatchNorm only) (repeatable; replaces --shapes)");
  app.add_option("--norm", o.norms, "Norms to run (layernorm, rmsnorm, groupnorm, batchnorm; comma list; default all)");
  app.add_option("--impl", o.impls, "Implementations to run (comma list; default all; see --list)");
  app.add_option("--variant", o.variants,
                 "Variants (standard, eps-outside, unbiased, rms-shift, param-free, gemma, storage, residual-add, "
                 "inference (BatchNorm), residual-add-separate; comma list; default all). Each runs where it applies, for implementations "
                 "that support variants; residual-add-separate (add_rounded, then the norm) at 1 thread only");
  app.add_option("--dtype", o.dtypes, "dtypes of x/y (f32, f64, bf16, f16; comma list)")->capture_default_str();
  app.add_option("--threads", o.threads, "Thread counts (comma list; default 1, powers of two up to the cores, the cores)");
  app.add_flag("--cold-cache", o.cold_cache, "Rotate through copies of the buffers larger than the last-level cache");
  app.add_flag("--huge-pages", o.huge_pages,
               "Back x and y (2 MiB or more) with transparent huge pages (madvise MADV_HUGEPAGE), ceilings and "
               "kernels alike; without it the system's THP policy decides (report columns huge_pages, thp_policy)");
  app.add_option("--stores", o.stores,
                 "How the highway family writes y: auto (non-temporal stores when y is at least half the last-level "
                 "cache, counted up to 64 MiB (32 MiB on Ice Lake-SP, model 106), and rows span a cache line or "
                 "more, but on Skylake-server Xeons (model 85: Cascade Lake) not for LayerNorm and RMSNorm rows "
                 "of up to 64 KiB), cached, streaming")
      ->capture_default_str();
  app.add_option("--report", o.report_path, "CSV report path (default reports/out/bench-<host>-<UTC time>.csv)");
  app.add_flag("--list", o.list, "Print the implementation registry as CSV and exit");
  app.add_flag("--every-repetition", o.every_repetition, "Show every repetition on the console, not only aggregates");
  app.add_flag("--hygiene-check", o.hygiene,
               "After the cases: time the first 1-thread highway case right after a threaded case of its shape and "
               "right after itself, interleaved, and print both medians (spinning workers would slow the first)");
  app.footer(
      "Google Benchmark flags pass through: --benchmark_filter=REGEX, --benchmark_repetitions=N (default here 5),\n"
      "--benchmark_min_time=SECONDS (default here 0.1), --benchmark_out=FILE, --benchmark_format=..., etc.\n"
      "Cases run in one pass per shape and dtype; within a pass their repetitions are interleaved at random\n"
      "(--benchmark_enable_random_interleaving, default here true; false runs each case's repetitions together).\n"
      "Names: norm/implementation/dtype/ROWSxCOLS/threads:T; ceilings: ceiling/stream-scale/dtype/ROWSxCOLS/threads:T\n"
      "(ordinary stores: frac_of_ceiling) and ceiling/stream-scale-nt/... (non-temporal stores: frac_of_nt_ceiling);\n"
      "beside LayerNorm and RMSNorm cases ceiling/row-phased-NORM/... (the norm's traffic in a row's order), and beside\n"
      "one-row f32 LayerNorm at 1 thread ceiling/row-phased-arithmetic-layernorm/... (that traffic and LayerNorm's\n"
      "arithmetic). See reports/README.md.");
  try {
    app.parse(static_cast<int>(own_args.size()), own_args.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "normbench: " << e.what() << " (try --help)\n";
    return 2;
  }

  if (o.list) {
    std::cout << listing_csv();
    for (const std::string& s : peers::status()) std::cout << "# " << s << "\n";
    return 0;
  }

  // Everything is checked before any benchmark runs.
  std::vector<Shape> shapes;
  std::vector<Norm> norms;
  std::vector<std::string> variants;
  std::vector<const Implementation*> impls;
  std::vector<DType> dtypes;
  std::vector<int> threads;
  report::MachineInfo machine;
  std::string report_path;
  StorePolicy stores = StorePolicy::kAuto;
  std::string policy;  // the system's transparent-huge-page policy, read once
  try {
    stores = parse_store_policy(o.stores);
    policy = thp_policy();
    if (o.huge_pages && (policy == "never" || policy == "unavailable"))
      throw Error(fmt::format("--huge-pages: transparent huge pages are {} on this system "
                              "(/sys/kernel/mm/transparent_hugepage/enabled)",
                              policy == "never" ? "disabled" : "not available"));
    g_huge_pages = o.huge_pages;
    if (o.shapes.empty())
      for (const std::string& set : cli::split_list({o.shape_set}))
        for (const Shape& s : shape_set(set))
          if (std::find(shapes.begin(), shapes.end(), s) == shapes.end()) shapes.push_back(s);
    for (const std::string& s : cli::split_list(o.shapes)) shapes.push_back(parse_shape(s));
    for (const std::string& n : cli::split_list(o.norms)) norms.push_back(parse_norm(n));
    if (norms.empty()) norms.assign(std::begin(kAllNorms), std::end(kAllNorms));
    for (const std::string& v : cli::split_list(o.variants)) {
      if (v != kSeparateAdd) find_variant(v);  // throws, naming the known ones
      variants.push_back(v);
    }
    if (variants.empty()) {
      for (const VariantPreset& v : variant_presets()) variants.emplace_back(v.name);
      variants.emplace_back(kSeparateAdd);
    }
    for (const std::string& i : cli::split_list(o.impls)) impls.push_back(&find_implementation(i));
    if (impls.empty())
      for (const Implementation& impl : registry()) impls.push_back(&impl);
    for (const std::string& d : cli::split_list(o.dtypes)) dtypes.push_back(parse_dtype(d));
    if (dtypes.empty()) throw Error("--dtype: no dtype given");
    threads = cli::parse_thread_counts(o.threads, kMaxThreads);
    if (threads.empty()) threads = default_threads();
    warn_if_threads_share_cpus(threads);
    const std::int64_t budget = physical_memory_bytes() * 8 / 10;
    for (const Shape& s : shapes)
      for (DType t : dtypes) {
        const std::int64_t bytes = 2 * s.rows * s.cols * static_cast<std::int64_t>(dtype_size(t));
        const std::int64_t copies = o.cold_cache ? cold_copies(t, s) : 1;
        if (bytes > budget || bytes * copies > budget)
          throw Error(fmt::format("shape {} in {} needs {:.1f} GiB for x and y, more than 80% of this machine's memory",
                                  shape_name(s), dtype_name(t), bytes * copies / double(1 << 30)));
      }
    machine = report::collect_machine_info();
    report_path = o.report_path.empty() ? report::default_report_path("bench", machine) : o.report_path;
    report::check_writable(report_path);
  } catch (const Error& e) {
    std::cerr << "normbench: " << e.what() << "\n";
    return 2;
  }

  // Register: per shape and dtype and thread count, the ceiling first, then every case.
  std::vector<Case> cases;
  std::set<std::string> shape_skips;  // why a supported norm had no case on a shape (said if nothing runs)
  for (const Shape& s : shapes)
    for (DType t : dtypes)
      for (int th : threads) {
        const std::int64_t xy = 2 * s.rows * s.cols * static_cast<std::int64_t>(dtype_size(t));
        const std::string ceiling = fmt::format("ceiling/stream-scale/{}/{}/threads:{}", dtype_name(t), shape_name(s), th);
        const std::string nt_ceiling =
            fmt::format("ceiling/stream-scale-nt/{}/{}/threads:{}", dtype_name(t), shape_name(s), th);
        bool any = false;
        std::set<Norm> phased;  // norms whose row-phased ceiling this shape, dtype and thread count has
        for (Norm n : norms)
          for (const std::string& variant : variants)
          for (const Implementation* impl : impls) {
            if (!impl->supports(n, t)) continue;
            if (th > 1 && !impl->uses_threads) continue;  // threads only mean something to threaded kernels
            const bool separate = variant == kSeparateAdd;
            const VariantPreset& preset = find_variant(separate ? "residual-add" : variant);
            if (!preset.applies(n, t)) continue;
            if (variant != "standard" && !impl->supports_variants) continue;
            if (separate && th > 1) continue;  // add_rounded is one thread
            if (preset.variant.unbiased && s.cols < 2) continue;
            if (!cli::shape_applies(n, s)) {  // channels last is BatchNorm's
              shape_skips.insert(fmt::format("{}: the channels-last layout applies to batchnorm only, not {}",
                                             shape_name(s), norm_name(n)));
              continue;
            }
            const Problem shape_problem = cli::make_problem(n, t, s, default_eps(n));
            if (n == Norm::kBatchNorm && !preset.batchnorm_inference && stat_cols(shape_problem) < 2) {
              // training on one value per channel: torch raises, so do we
              shape_skips.insert(fmt::format("{}: batchnorm training needs more than 1 value per channel (N*L = {}; "
                                             "give the shape as NxCxS)", shape_name(s), stat_cols(shape_problem)));
              continue;
            }
            const std::int64_t params = ((preset.gamma ? 1 : 0) + (preset.has_beta(n) ? 1 : 0)) *
                                        param_count(shape_problem) *
                                        static_cast<std::int64_t>(dtype_size(param_dtype(t)));
            // residual add: read x and r, write h and y, whether fused or not.
            const std::int64_t data = preset.residual_add ? 2 * xy : xy;
            if (!any) {
              const std::int64_t both = 2 * s.cols * static_cast<std::int64_t>(dtype_size(param_dtype(t)));
              cases.push_back(Case{ceiling, nullptr, n, t, s, th, o.cold_cache, xy + both, xy + both, ceiling,
                                   nt_ceiling, StorePolicy::kCached});
              cases.push_back(Case{nt_ceiling, nullptr, n, t, s, th, o.cold_cache, xy + both, xy + both, ceiling,
                                   nt_ceiling, StorePolicy::kStreaming});
              any = true;
            }
            if ((n == Norm::kLayerNorm || n == Norm::kRMSNorm) && phased.insert(n).second) {
              // The traffic of the standard form (LayerNorm: gamma and beta; RMSNorm: gamma), stored
              // as `highway` stores this shape's y (or as --stores says).
              const std::int64_t standard_params = (n == Norm::kLayerNorm ? 2 : 1) * param_count(shape_problem) *
                                                   static_cast<std::int64_t>(dtype_size(param_dtype(t)));
              const bool streaming = uses_streaming_stores(find_implementation("highway"), shape_problem, RunConfig{th, stores});
              Case phased_case{fmt::format("ceiling/row-phased-{}/{}/{}/threads:{}", norm_name(n), dtype_name(t),
                                           shape_name(s), th),
                               nullptr, n, t, s, th, o.cold_cache, xy + standard_params, xy + standard_params, ceiling,
                               nt_ceiling, streaming ? StorePolicy::kStreaming : StorePolicy::kCached};
              phased_case.phased = true;
              cases.push_back(std::move(phased_case));
              // One row of f32 LayerNorm in one statistics chunk at 1 thread: also the ceiling with
              // LayerNorm's arithmetic, which no kernel can overlap with another row's there.
              if (n == Norm::kLayerNorm && t == DType::kF32 && s.rows == 1 && th == 1 && s.channels == 0 &&
                  s.cols <= kStatsChunkCols) {
                Case arithmetic_case = cases.back();
                arithmetic_case.name = fmt::format("ceiling/row-phased-arithmetic-{}/{}/{}/threads:{}", norm_name(n),
                                                   dtype_name(t), shape_name(s), th);
                arithmetic_case.arithmetic = true;
                cases.push_back(std::move(arithmetic_case));
              }
            }
            const std::string norm_tag =
                variant == "standard" ? std::string(norm_name(n)) : fmt::format("{}+{}", norm_name(n), variant);
            cases.push_back(Case{fmt::format("{}/{}/{}/{}/threads:{}", norm_tag, impl->name, dtype_name(t), shape_name(s), th),
                                 impl, n, t, s, th, o.cold_cache, data + params, data + params, ceiling, nt_ceiling, stores,
                                 variant});
          }
      }
  for (Case& c : cases) {
    c.huge_pages = o.huge_pages;
    c.thp_policy = policy;
  }
  if (cases.empty()) {
    std::string why = "no implementation supports the chosen norms and dtypes";
    if (!shape_skips.empty()) {
      why.clear();
      for (const std::string& skip : shape_skips) why += (why.empty() ? "" : "; ") + skip;
    }
    std::cerr << "normbench: the selection is empty (" << why << ")\n";
    return 2;
  }
  // Passes: one per shape and dtype, in order (their cases share one workspace, built once).
  // Within a pass Google Benchmark interleaves the repetitions of its cases at random, so the
  // ratios a report is read for (a kernel against its ceiling, against a peer, 2 threads against
  // 1) compare medians taken over the same stretch of time on a machine whose speed drifts.
  std::vector<std::vector<Case>> passes;
  std::map<std::pair<std::string, int>, std::size_t> pass_of_shape;
  for (const Case& c : cases) {
    const auto key = std::pair{shape_name(c.shape), static_cast<int>(c.dtype)};
    const auto [it, added] = pass_of_shape.emplace(key, passes.size());
    if (added) passes.emplace_back();
    passes[it->second].push_back(c);
  }

  static std::string reps_flag = "--benchmark_repetitions=5", min_time_flag = "--benchmark_min_time=0.1",
                     interleave_flag = "--benchmark_enable_random_interleaving=true";
  if (!has_reps) gb_args.push_back(reps_flag.data());
  if (!has_min_time) gb_args.push_back(min_time_flag.data());
  if (!has_interleaving) gb_args.push_back(interleave_flag.data());
  int gb_argc = static_cast<int>(gb_args.size());
  benchmark::Initialize(&gb_argc, gb_args.data());
  if (benchmark::ReportUnrecognizedArguments(gb_argc, gb_args.data())) return 2;

  std::optional<FilterSelection> selection;
  try {
    selection.emplace(filter);
  } catch (const Error& e) {
    std::cerr << "normbench: --benchmark_filter is not a valid regular expression: " << e.what() << "\n";
    return 2;
  }
  const auto expected = static_cast<std::size_t>(
      std::count_if(cases.begin(), cases.end(), [&](const Case& c) { return selection->selects(c.name); }));
  if (expected == 0) {  // a mistyped filter must not pass as a run that measured nothing
    std::cerr << fmt::format("normbench: --benchmark_filter '{}' matches none of the {} selected cases (names look "
                             "like layernorm/highway/f32/64x768/threads:1; see --help)\n",
                             filter, cases.size());
    return 2;
  }
  std::unique_ptr<benchmark::BenchmarkReporter> file_reporter;
  std::ofstream out_file;
  if (!out_path.empty()) {
    if (out_format == "json")
      file_reporter = std::make_unique<benchmark::JSONReporter>();
    else if (out_format == "console")
      file_reporter = std::make_unique<benchmark::ConsoleReporter>(benchmark::ConsoleReporter::OO_None);
    else {  // Google Benchmark's deprecated csv too: normbench's own CSV is --report
      std::cerr << fmt::format("normbench: --benchmark_out_format: '{}' is not one of json, console (normbench's "
                               "own CSV report is --report)\n", out_format);
      return 2;
    }
    out_file.open(out_path);
    if (!out_file) {
      std::cerr << fmt::format("normbench: --benchmark_out: cannot write {}\n", out_path);
      return 2;
    }
    file_reporter->SetOutputStream(&out_file);
    file_reporter->SetErrorStream(&out_file);
  }
  std::cerr << fmt::format("[normbench] {} cases in {} passes (one per shape and dtype{}), report: {}\n", expected,
                           passes.size(),
                           interleaved ? "; repetitions interleaved at random within a pass" : "; cases one after another",
                           report_path);
  NormbenchReporter reporter(cases, expected, machine, o.every_repetition);
  reporter.set_file_reporter(file_reporter.get());
  // Ctrl-C or SIGTERM: the pass running finishes (its cases' repetitions are interleaved, so a pass
  // cut short would leave each of its cases partial), no further pass starts, and the report keeps
  // the passes that ran: a full run takes 10-25 minutes.
  cli::stop_on_signal("\n[normbench] stopping after the pass running (at most a minute or two); the report keeps the "
                      "passes that finished. Once more to stop at once, without a report.\n");
  const auto pass_selected = [&](const std::vector<Case>& pass) {
    return std::any_of(pass.begin(), pass.end(), [&](const Case& c) { return selection->selects(c.name); });
  };
  std::size_t passes_started = 0;
  for (const std::vector<Case>& pass : passes) {
    if (cli::stop_signal() != 0) break;
    benchmark::ClearRegisteredBenchmarks();
    for (const Case& c : pass)
      benchmark::RegisterBenchmark(c.name.c_str(), [c](benchmark::State& st) {
        if (c.is_ceiling()) {
          run_ceiling_case(st, c);
        } else {
          run_norm_case(st, c);
        }
      })->UseRealTime()->Unit(benchmark::kMicrosecond);
    if (!pass_selected(pass)) continue;  // Google Benchmark would complain of an empty match
    ++passes_started;
    benchmark::RunSpecifiedBenchmarks(&reporter);
  }
  reporter.finish();
  benchmark::Shutdown();
  const int signal_received = cli::stop_signal();
  if (signal_received != 0) {
    const auto selected_passes = static_cast<std::size_t>(std::count_if(passes.begin(), passes.end(), pass_selected));
    std::cerr << fmt::format("[normbench] {}: stopped after {} of {} passes; the {} not run are not in the report{}\n",
                             strsignal(signal_received), passes_started, selected_passes,
                             selected_passes - passes_started, o.hygiene ? ", and the hygiene check did not run" : "");
  }
  if (o.hygiene && signal_received == 0) {
    // The partner: the first LayerNorm/RMSNorm threaded case that really runs on several threads;
    // the probe: the 1-thread highway case of its norm, dtype and shape.
    const auto partner = std::find_if(cases.begin(), cases.end(), [](const Case& c) {
      return !c.is_ceiling() && c.impl->name == "threaded" && c.variant == "standard" &&
             (c.norm == Norm::kLayerNorm || c.norm == Norm::kRMSNorm) &&
             threads_used(*c.impl, c.problem(), RunConfig{c.threads, c.stores}) >= 2;
    });
    const auto probe = partner == cases.end() ? cases.end() : std::find_if(cases.begin(), cases.end(), [&](const Case& c) {
      return !c.is_ceiling() && c.threads == 1 && c.impl->name == "highway" && c.variant == "standard" &&
             c.norm == partner->norm && c.dtype == partner->dtype && c.shape == partner->shape;
    });
    if (probe == cases.end()) {
      std::cerr << fmt::format("[normbench] hygiene: no LayerNorm/RMSNorm threaded case that runs on 2 or more threads "
                               "(2+ rows of {}+ elements in all, or a row of 2+ chunks) with a 1-thread highway case "
                               "of its shape (--impl highway,threaded, --threads 1,2); nothing to compare\n",
                               2 * kMinElementsPerThread);
    } else {
      try {
        hygiene_check(*probe, *partner);
      } catch (const Error& e) {
        std::cerr << "[normbench] hygiene: " << e.what() << "\n";
      }
    }
  }
  try {
    const std::size_t rows = reporter.write_csv(report_path);
    if (rows == 0)
      std::cerr << "[normbench] nothing ran, no report written\n";
    else
      std::cerr << fmt::format("[normbench] wrote {} rows to {}\n", rows, report_path);
  } catch (const Error& e) {
    std::cerr << "normbench: " << e.what() << "\n";
    return 1;
  }
  return cli::stop_exit_code();
}

}  // namespace
}  // namespace normbench::bench

int main(int argc, char** argv) {
  normbench::bench::ensure_bounded_openmp_spin(argv);
  return normbench::bench::run(argc, argv);
}
