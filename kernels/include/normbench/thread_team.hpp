// A team of worker threads for the `threaded` kernels and the benchmark's ceilings, in place of
// an OpenMP parallel region.
//
// Why not OpenMP: on the 2-vCPU Zen 4 VM an empty 2-thread `#pragma omp parallel` cost 0.56-0.64
// us a call, with any OMP_WAIT_POLICY, OMP_PROC_BIND or GOMP_SPINCOUNT. L2-resident shapes take
// 4.5-14 us a call at 2 threads, so that cost alone held their 2-thread speedup 0.05-0.16x lower.
// Here one store to a cache line that every worker watches starts a call, and each worker
// reports its end in a line of its own: at 2 threads the worker starts about 0.1 us after the
// call, and the caller returns about 0.1 us after the last thread ends; on 16 Xeon cores all 15
// workers start together about 0.5 us after the call (reports/baselines/PERFORMANCE-LOG.md, "A
// worker team instead of OpenMP regions", "Where a 16-thread call's time goes").
//
// Workers spin a bounded time after each call (kSpinMicroseconds), then sleep on a futex
// (std::atomic::wait): a case's back-to-back calls find them awake, and a following 1-thread
// case, or libgomp's own workers (oneDNN's), get the CPUs back soon after. A spin without bound
// starved libgomp's worker sharing its CPU: OpenMP calls in the same process ran 20-90x slower.
//
// With OMP_PROC_BIND set (to anything but false), worker t is pinned to OpenMP place t modulo the
// place count, as libgomp's `close` binding places a team whose first thread is on place 0.
#pragma once

#include <sched.h>

#include <cstdint>
#include <type_traits>

namespace normbench {

// The most threads one call runs on: the caller and up to kMaxTeamThreads - 1 workers.
inline constexpr int kMaxTeamThreads = 1024;

// Calls task(ctx, t, n) for t in [0, n) on n threads, the calling thread being t = 0, and returns
// when every call has returned. n is `threads` (clamped to [1, kMaxTeamThreads]), or 1 where the
// team is busy (another thread's call, or a call from inside a task): the task runs on the caller
// alone. Callers cut their work by the n they are given, as OpenMP code cuts by
// omp_get_num_threads(). The task must not throw.
void run_on_team(int threads, void (*task)(void* ctx, int t, int n), void* ctx);

// The same, for any callable fn(int t, int n). An exception leaving fn terminates the program, as
// one leaving an OpenMP parallel region does.
template <class Fn>
void run_on_team(int threads, Fn&& fn) {
  run_on_team(
      threads, [](void* ctx, int t, int n) noexcept { (*static_cast<std::remove_reference_t<Fn>*>(ctx))(t, n); },
      const_cast<void*>(static_cast<const void*>(&fn)));
}

// How long a worker spins for the next call before it sleeps.
inline constexpr std::int64_t kSpinMicroseconds = 200;
// A spin (a worker's for the next call, the caller's for the workers' ends) that has lasted this
// long yields the CPU between its checks. Where the scheduler has put the thread it waits for on
// its own CPU, that thread then runs: with the caller and a worker on one CPU each 2-thread call
// had taken 2 x kSpinMicroseconds (414 us, normbench-team-times after an OpenMP runner). The
// waits of a call's start and of an even split's end are far shorter and never yield.
inline constexpr std::int64_t kYieldAfterMicroseconds = 20;

// Workers the team has started so far (they are started on first use, and stay).
int team_workers_started();

// Adds the CPUs of OpenMP place `place` (omp_get_place_proc_ids) to `cpus`: where the team pins
// worker t, and where normbench's re-execution gives the process back its places.
void add_openmp_place_cpus(int place, cpu_set_t& cpus);

}  // namespace normbench
