// The worker team behind `threaded` and the benchmark's ceilings (thread_team.hpp): every thread
// of a call runs once and at the same time, the call returns after its last thread, no call loses
// or repeats work, a busy team runs the caller alone, idle workers sleep (those left out of smaller
// calls too), and workers sit where OMP_PROC_BIND places them.
#include "normbench/thread_team.hpp"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <omp.h>

#include "affinity.hpp"

namespace normbench::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Each of a call's n threads arrives, then waits (up to 10 s) for all n: a team that ran them one
// after another would never see them all.
TEST(ThreadTeam, EveryThreadOfACallRunsOnceAndAtTheSameTime) {
  for (int threads : {2, 3, 4, 8}) {
    SCOPED_TRACE(threads);
    std::vector<std::atomic<int>> calls(threads);
    std::atomic<int> arrived{0}, saw_all{0}, wrong_n{0};
    run_on_team(threads, [&](int t, int n) {
      if (n != threads) ++wrong_n;
      ++calls[static_cast<std::size_t>(t)];
      ++arrived;
      const auto deadline = Clock::now() + std::chrono::seconds(10);
      while (arrived.load() < n && Clock::now() < deadline) std::this_thread::yield();
      if (arrived.load() == n) ++saw_all;
    });
    EXPECT_EQ(wrong_n.load(), 0);
    for (int t = 0; t < threads; ++t) EXPECT_EQ(calls[static_cast<std::size_t>(t)].load(), 1) << "thread " << t;
    EXPECT_EQ(saw_all.load(), threads);
  }
  EXPECT_GE(team_workers_started(), 7);
}

// The caller returns only once every thread's task has returned, whichever thread ends last, and
// sees what each wrote.
TEST(ThreadTeam, TheCallReturnsAfterItsLastThreadEnds) {
  // Each thread writes the number of its call when it ends (atomics, outliving the calls: a late
  // thread of a broken team writes a stale number instead of touching freed memory).
  static std::atomic<int> finished_call[8];
  int call = 0;
  for (int threads : {2, 3, 8}) {
    for (int last = 0; last < threads; ++last) {
      SCOPED_TRACE(::testing::Message() << threads << " threads, thread " << last << " ends last");
      ++call;
      run_on_team(threads, [&, call](int t, int) {
        if (t == last) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        finished_call[t].store(call);
      });
      for (int t = 0; t < threads; ++t) EXPECT_EQ(finished_call[t].load(), call) << "thread " << t;
    }
  }
}

// Back-to-back calls of changing sizes, as a benchmark makes them: thread t runs in exactly the
// calls that have more than t threads, and its writes are seen by the caller afterwards.
TEST(ThreadTeam, ManyCallsOfChangingSizeLoseAndRepeatNoWork) {
  constexpr int kCalls = 20000, kMost = 4;
  std::vector<std::int64_t> runs(kMost, 0);  // each element written by one thread only, per call
  std::vector<std::int64_t> expected(kMost, 0);
  for (int c = 0; c < kCalls; ++c) {
    const int threads = 1 + (c * 7 + c / 3) % kMost;
    for (int t = 0; t < threads; ++t) ++expected[static_cast<std::size_t>(t)];
    run_on_team(threads, [&](int t, int) { ++runs[static_cast<std::size_t>(t)]; });
  }
  EXPECT_EQ(runs, expected);
}

// A call made while the team is busy (from inside a task, or from another thread meanwhile) runs
// on its caller alone, told n = 1, and its work is still done whole.
TEST(ThreadTeam, ABusyTeamRunsTheCallerAlone) {
  std::atomic<int> inner_n{0}, inner_t{-1};
  run_on_team(2, [&](int t, int) {
    if (t == 0) run_on_team(2, [&](int it, int in) { inner_t = it, inner_n = in; });
  });
  EXPECT_EQ(inner_n.load(), 1);
  EXPECT_EQ(inner_t.load(), 0);

  // Two callers at once: each call sums 0..999 by the cut it is given.
  std::atomic<int> wrong_sums{0};
  const auto caller = [&] {
    for (int c = 0; c < 3000; ++c) {
      std::vector<std::int64_t> partial(2, 0);
      run_on_team(2, [&](int t, int n) {
        for (std::int64_t i = 1000 * t / n; i < 1000 * (t + 1) / n; ++i) partial[static_cast<std::size_t>(t)] += i;
      });
      if (partial[0] + partial[1] != 999 * 1000 / 2) ++wrong_sums;
    }
  };
  std::thread other(caller);
  caller();
  other.join();
  EXPECT_EQ(wrong_sums.load(), 0);
}

// CPU time used so far by the process (CLOCK_PROCESS_CPUTIME_ID) or by one thread
// (pthread_getcpuclockid).
double cpu_seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Where the scheduler has put the caller and a worker on one CPU, a 2-thread call does not cost
// two whole spins: each thread spun out its wait (kSpinMicroseconds) while the thread it waited
// for could not run, 414 us a call in normbench-team-times. Spins now yield after
// kYieldAfterMicroseconds. The worker, created by this thread, inherits its one-CPU mask.
TEST(ThreadTeam, CallerAndWorkerOnOneCpuDoNotSpinOutEachOthersWaits) {
  if (team_workers_started() > 0) GTEST_SKIP() << "the team's worker already runs on every CPU (ctest runs this alone)";
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2 || omp_get_num_procs() < 2) GTEST_SKIP() << "needs 2 CPUs (on one, calls do not spin)";
  cpu_set_t all, one;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof all, &all), 0);
  CPU_ZERO(&one);
  CPU_SET(cpus[0], &one);
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
  std::atomic<int> parts{0};
  for (int call = 0; call < 5; ++call) run_on_team(2, [&](int, int) { ++parts; });  // the worker starts
  std::vector<double> us;
  for (int call = 0; call < 31; ++call) {
    const auto begin = Clock::now();
    run_on_team(2, [&](int, int) { ++parts; });
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - begin).count());
  }
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof all, &all), 0);
  EXPECT_EQ(parts.load(), 2 * 36);
  std::sort(us.begin(), us.end());
  EXPECT_LT(us[us.size() / 2], static_cast<double>(kSpinMicroseconds)) << "median of 31 calls, us";
}

// Workers spin kSpinMicroseconds after a call, then sleep: over 300 ms of idling the process uses
// far less than 300 ms of CPU. A worker that spun without bound would use all of it.
TEST(ThreadTeam, IdleWorkersSleep) {
  run_on_team(2, [](int, int) {});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the spin ends, and libgomp's
  const double before = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LT(cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - before, 0.03);
}

// Calls that leave some workers out (fewer threads than the last call) do not keep those workers
// awake: they spin kSpinMicroseconds after their own last call, then sleep, while 2-thread calls
// go on back to back. Every worker watches one line that changes with each call; a worker that
// restarted its spin on every change would burn its CPU through all of them.
TEST(ThreadTeam, WorkersLeftOutOfSmallerCallsSleep) {
  constexpr int kThreads = 4;
  if (omp_get_num_procs() < kThreads)
    GTEST_SKIP() << "needs " << kThreads << " CPUs: with fewer, a " << kThreads
                 << "-thread call does not spin at all (more threads than CPUs)";
  std::vector<clockid_t> clocks(kThreads);
  std::atomic<int> clock_errors{0};
  run_on_team(kThreads, [&](int t, int) {
    if (pthread_getcpuclockid(pthread_self(), &clocks[static_cast<std::size_t>(t)]) != 0) ++clock_errors;
  });
  ASSERT_EQ(clock_errors.load(), 0);
  const auto calls_for = [](std::chrono::milliseconds how_long) {
    const auto end = Clock::now() + how_long;
    while (Clock::now() < end) run_on_team(2, [](int, int) {});
  };
  calls_for(std::chrono::milliseconds(50));  // well past the left-out workers' spin
  std::vector<double> before(kThreads);
  for (int t = 2; t < kThreads; ++t) before[static_cast<std::size_t>(t)] = cpu_seconds(clocks[static_cast<std::size_t>(t)]);
  calls_for(std::chrono::milliseconds(300));
  for (int t = 2; t < kThreads; ++t) {
    SCOPED_TRACE(t);
    EXPECT_LT(cpu_seconds(clocks[static_cast<std::size_t>(t)]) - before[static_cast<std::size_t>(t)], 0.03);
  }
}

// Under OMP_PROC_BIND (ctest runs this test once more with OMP_PROC_BIND=close), worker t sits on
// OpenMP place t modulo the places, as libgomp's close binding puts team thread t. Without it,
// workers keep the caller's CPUs.
TEST(ThreadTeam, WorkersSitWhereOpenMpWouldPlaceThem) {
  constexpr int kThreads = 3;
  std::vector<std::vector<int>> cpus(kThreads);
  run_on_team(kThreads, [&](int t, int) { cpus[static_cast<std::size_t>(t)] = allowed_cpus(); });
  const bool bound = omp_get_proc_bind() != omp_proc_bind_false;
  const std::vector<int> caller = allowed_cpus();
  for (int t = 1; t < kThreads; ++t) {
    SCOPED_TRACE(t);
    if (!bound) {
      EXPECT_EQ(cpus[static_cast<std::size_t>(t)], caller);
      continue;
    }
    const int place = t % omp_get_num_places();
    std::vector<int> ids(static_cast<std::size_t>(omp_get_place_num_procs(place)));
    omp_get_place_proc_ids(place, ids.data());
    EXPECT_EQ(cpus[static_cast<std::size_t>(t)], ids);
  }
}

}  // namespace
}  // namespace normbench::testing
