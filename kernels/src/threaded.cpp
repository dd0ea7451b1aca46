// threaded: the highway kernel over the threads of thread_team.hpp, bitwise identical to
// `highway` for every thread count.
//  - Many rows: contiguous blocks of rows per thread; each row computed whole by one thread.
//  - Fewer rows than threads and long rows (decode shapes, benchdnn's 1 x 33,554,432): each row's
//    fixed chunks (chunked_stats.hpp) are reduced in parallel, merged in chunk order with the same
//    function `highway` uses, then applied in parallel.
#include <algorithm>
#include <barrier>
#include <vector>

#include "normbench/thread_team.hpp"

#include "batchnorm.hpp"
#include "chunked_stats.hpp"
#include "families.hpp"

namespace normbench::detail {
static_assert(kMaxTeamThreads >= kMaxThreads, "a team call runs every thread count a RunConfig allows");
namespace {
template <class C>
void merge_row(const Problem& p, const double* mean, const double* m2, std::int64_t chunks, double& out_mean,
               double& out_rstd) {
  ChunkAccumulator<C> acc;
  for (std::int64_t k = 0; k < chunks; ++k) {
    const C count = static_cast<C>(std::min(p.cols - k * kStatsChunk, kStatsChunk));
    if (centres(p.norm))
      acc.add_layernorm(count, static_cast<C>(mean[k]), static_cast<C>(m2[k]));
    else
      acc.add_rmsnorm(static_cast<C>(m2[k]));
  }
  out_mean = acc.mean;
  out_rstd = row_rstd(acc.m2, p.cols, p);
}

// One team call for all rows. Thread t owns chunks [k_begin, k_end) of every row (cut by
// chunk count: the chunks are equal but the last) and applies the same columns, which its own
// cache still holds. Per row: its chunks' statistics, one barrier, then every thread merges all
// chunks in order (the same bits everywhere, no second barrier) and applies. The chunk results
// alternate between two buffers by row parity: a thread may start row r + 1 while another still
// merges row r, but not row r + 2 (that needs the barrier of row r + 1).
void split_long_rows(const Problem& p, const Buffers& b_in, int threads, bool stream) {
  const std::int64_t chunks = chunk_count(p.cols);
  std::vector<double> stats(4 * chunks);  // [parity][mean | m2][chunk]
  Buffers b = b_in;  // with residual_add, the row of h is the input of the norm
  if (p.residual_add) b.x = b_in.h;
  std::barrier row_stats_done(threads);
  run_on_team(threads, [&](const std::int64_t t, const std::int64_t n) {  // n: threads, or 1 where the team is busy
    const std::int64_t k_begin = chunks * t / n, k_end = chunks * (t + 1) / n;
    const std::int64_t col_begin = k_begin * kStatsChunk, col_end = std::min(p.cols, k_end * kStatsChunk);
    for (std::int64_t r = 0; r < p.rows; ++r) {
      double* mean = stats.data() + (r % 2) * 2 * chunks;
      double* m2 = mean + chunks;
      if (p.residual_add && col_begin < col_end) highway_add_range(p, b_in, r, col_begin, col_end);
      for (std::int64_t k = k_begin; k < k_end; ++k) highway_chunk_stats(p, b, r, k, &mean[k], &m2[k], stream);
      if (n > 1) row_stats_done.arrive_and_wait();
      double row_mean, rstd;
      if (p.dtype == DType::kF64)
        merge_row<double>(p, mean, m2, chunks, row_mean, rstd);
      else
        merge_row<float>(p, mean, m2, chunks, row_mean, rstd);
      if (t == 0) {
        if (b.mean) b.mean[r] = static_cast<float>(row_mean);
        if (b.rstd) b.rstd[r] = static_cast<float>(rstd);
      }
      if (col_begin < col_end) highway_apply_range(p, b, r, col_begin, col_end, row_mean, rstd, stream);
    }
  });
}

// Runs fn(begin, end) over [0, count) cut into contiguous ranges, one per thread: at most
// cfg.threads, at most count, and at most one per kMinElementsPerThread elements of p. With one
// thread there is no team call at all: a 1-thread run costs what highway costs.
struct SplitOverThreads {
  int threads;
  SplitOverThreads(const Problem& p, const RunConfig& cfg)
      : threads(static_cast<int>(std::min(static_cast<std::int64_t>(cfg.threads),
                                           std::max<std::int64_t>(1, p.rows * p.cols / kMinElementsPerThread)))) {}
  // Threads that a cut of count parts runs on.
  int threads_for(std::int64_t count) const {
    return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(threads, count)));
  }
  template <class Fn>
  void operator()(std::int64_t count, const Fn& fn) const {
    const int nt = threads_for(count);
    if (nt <= 1) return fn(std::int64_t{0}, count);
    run_on_team(nt, [&](const std::int64_t t, const std::int64_t n) { fn(count * t / n, count * (t + 1) / n); });
  }
};

// How threaded_forward cuts a problem, and into how many parts at most (threaded_threads_used).
enum class Cut : std::uint8_t {
  kBatchNorm,   // batchnorm.hpp's driver: channels (channels first) or positions (channels last)
  kGroupUnits,  // GroupNorm with groups or spatial positions: (row, group) units, each whole
  kLongRows,    // fewer rows than threads, rows of 2+ chunks: each row's chunks in parallel
  kRows,        // contiguous blocks of whole rows
};

// A row is split across threads only where each thread gets this many of its elements (two
// statistics chunks): on the Zen 5 VM a split 1x65537 row took longer at 2 threads than at 1
// (f32 RMSNorm 8.9-10.0 us against 4.9-7.4, LayerNorm 10.3-10.8 against 9.3-11.7), as did
// 1x98304 (RMSNorm 14.3 against 13.3), while 1x131072 gained (RMSNorm 12.1-14.8 us against
// 17.7-21.3, LayerNorm 18.8-19.2 against 25.4-28.9); 7 repetitions a case, two or three runs.
// Either way the results are the same bits: the serial path merges the same chunks in order.
constexpr std::int64_t kMinLongRowElementsPerThread = 2 * kStatsChunk;

int long_row_threads(const Problem& p, const RunConfig& cfg) {
  return static_cast<int>(std::min(static_cast<std::int64_t>(cfg.threads), p.cols / kMinLongRowElementsPerThread));
}

Cut cut_of(const Problem& p, const RunConfig& cfg) {
  if (p.norm == Norm::kBatchNorm) return Cut::kBatchNorm;
  if (p.norm == Norm::kGroupNorm && (group_count(p) > 1 || spatial_size(p) > 1)) return Cut::kGroupUnits;
  if (cfg.threads > 1 && p.rows < cfg.threads && long_row_threads(p, cfg) >= 2) return Cut::kLongRows;
  return Cut::kRows;
}
}  // namespace

void threaded_forward(const Problem& p, const Buffers& b, const RunConfig& cfg) {
  const SplitOverThreads split(p, cfg);
  // Work for one thread (every cut below gives it one thread: no long row is this short) is
  // highway's own call, without the cut's bookkeeping: decode rows at 2 threads had taken 2-6 ns
  // (3-6%) longer than `highway` (f32 1x768 and 1x1024, 7 repetitions, three runs), now 1-2 ns.
  if (split.threads <= 1) return highway_forward(p, b, cfg);
  const bool stream = streaming_stores(p, cfg);
  switch (cut_of(p, cfg)) {
    case Cut::kBatchNorm:
      return highway_batchnorm(p, b, stream, false, split);
    case Cut::kGroupUnits:
      return split(units(p), [&](std::int64_t begin, std::int64_t end) { highway_group_units(p, b, begin, end, stream); });
    case Cut::kLongRows:
      return split_long_rows(p, b, long_row_threads(p, cfg), stream);
    case Cut::kRows:
      return split(p.rows, [&](std::int64_t begin, std::int64_t end) { highway_rows(p, b, begin, end, stream); });
  }
}

int threaded_threads_used(const Problem& p, const RunConfig& cfg) {
  const SplitOverThreads split(p, cfg);
  switch (cut_of(p, cfg)) {
    case Cut::kBatchNorm:  // its largest parallel_for: every channel, or every position
      return split.threads_for(channels_innermost(p) ? stat_cols(p) : channel_count(p));
    case Cut::kGroupUnits:
      return split.threads_for(units(p));
    case Cut::kLongRows:
      return long_row_threads(p, cfg);
    case Cut::kRows:
      return split.threads_for(p.rows);
  }
  return 1;
}

}  // namespace normbench::detail
