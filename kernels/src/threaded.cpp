// threaded: rows split into one contiguous block per OpenMP thread, each block running the
// highway kernel. A row is always computed whole by one thread with the same code, so the
// output is bitwise identical to `highway` for every thread count.
#include <algorithm>

#include <omp.h>

#include "families.hpp"

namespace normbench::detail {
namespace {
// Below this many elements per thread, waking a thread costs more than it saves
// (a futex wake is ~5-20 us; 32K f32 elements move 256 KiB, ~10 us at L2 bandwidth).
constexpr std::int64_t kMinElementsPerThread = 32 * 1024;
}  // namespace

void threaded_forward(const Problem& p, const Buffers& b, const RunConfig& cfg) {
  const std::int64_t by_size = std::max<std::int64_t>(1, p.rows * p.cols / kMinElementsPerThread);
  const int threads = static_cast<int>(std::min({static_cast<std::int64_t>(cfg.threads), p.rows, by_size}));
  if (threads <= 1) {  // no parallel region at all: a 1-thread run costs what highway costs
    highway_rows(p, b, 0, p.rows);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    highway_rows(p, b, p.rows * t / nt, p.rows * (t + 1) / nt);
  }
}

}  // namespace normbench::detail
