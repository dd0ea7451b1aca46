// normbench-team-times: where a multithreaded call's time goes. For each thread count it makes
// many back-to-back calls that cut a LayerNorm or RMSNorm problem by rows over the threads, as
// `threaded` does, and reports medians over the calls of: each worker's start after the call
// began, the longest thread's work, and the caller's return after the last thread ended. The
// calls run on normbench's worker team (thread_team.hpp) or on OpenMP parallel regions, so the
// cost of starting and joining threads can be told from the work, and the two compared.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "normbench/cli.hpp"
#include "normbench/normbench.hpp"
#include "normbench/report.hpp"
#include "normbench/thread_team.hpp"
#include "openmp_spin.hpp"
#include "placed_bytes.hpp"

namespace normbench::bench {
namespace {

using Clock = std::chrono::steady_clock;
using report::median;

double ns_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::nano>(b - a).count();
}

struct Options {
  std::string shape = "64x768";
  std::string norm = "layernorm";
  std::vector<std::string> threads, runners = {"team", "openmp"};
  int calls = 20000;
  bool empty = false;
};

// One thread's start and end of its part of a call, in a cache line of its own.
struct alignas(64) ThreadTimes {
  Clock::time_point start, end;
};

struct CallTimes {
  double total = 0, last_start = 0, longest_work = 0, return_after_last_end = 0;
  std::vector<double> start_by_worker;  // worker t = 1 .. n-1
  std::vector<double> work_by_thread;   // thread t = 0 .. n-1 (0: the caller): which one is slow
};

class CallTimer {
 public:
  CallTimer(Norm norm, const cli::Shape& shape, bool empty) : empty_(empty) {
    problem_.norm = norm;
    problem_.dtype = DType::kF32;
    problem_.rows = shape.rows;
    problem_.cols = shape.cols;
    // Placed as normbench places them (placed_bytes.hpp), so that `longest work` times what a
    // `threaded` case of normbench times: left to malloc, x and y started 16 bytes into a page,
    // splitting every 64-byte vector across two lines, and gamma wherever the heap put it.
    const auto n = static_cast<std::size_t>(shape.rows * shape.cols), cols = static_cast<std::size_t>(shape.cols);
    x_.assign(n * sizeof(float), kXPageOffset, false);
    y_.assign(n * sizeof(float), kYPageOffset, false);
    gamma_.assign(cols * sizeof(float), kParamPageOffset, false);
    beta_.assign(cols * sizeof(float), kParamPageOffset, false);
    for (std::size_t i = 0; i < n; ++i) floats(x_)[i] = static_cast<float>((i * 7919) % 1000) / 500.0f;
    std::fill_n(floats(gamma_), cols, 1.1f);
    std::fill_n(floats(beta_), cols, 0.1f);
  }

  // `calls` timed calls on `threads` threads after a tenth as many untimed ones (workers started,
  // caches warm).
  CallTimes measure(const std::string& runner, int threads, int calls) {
    times_.assign(static_cast<std::size_t>(threads), {});
    std::vector<std::vector<double>> start(static_cast<std::size_t>(threads)), work(start.size());
    std::vector<double> total, last_start, longest_work, return_after;
    for (int call = -calls / 10; call < calls; ++call) {
      const auto begin = Clock::now();
      if (runner == "team") {
        run_on_team(threads, [&](int t, int n) { part(t, n); });
      } else {
#pragma omp parallel num_threads(threads)
        part(omp_get_thread_num(), omp_get_num_threads());
      }
      const auto end = Clock::now();
      if (call < 0) continue;
      double latest_start = 0, longest = 0;
      Clock::time_point last_end = times_[0].end;
      for (std::size_t t = 0; t < times_.size(); ++t) {
        const double s = ns_between(begin, times_[t].start);
        start[t].push_back(s);
        latest_start = std::max(latest_start, s);
        work[t].push_back(ns_between(times_[t].start, times_[t].end));
        longest = std::max(longest, work[t].back());
        last_end = std::max(last_end, times_[t].end);
      }
      total.push_back(ns_between(begin, end));
      last_start.push_back(latest_start);
      longest_work.push_back(longest);
      return_after.push_back(ns_between(last_end, end));
    }
    CallTimes r{median(total), median(last_start), median(longest_work), median(return_after), {}, {}};
    for (std::size_t t = 1; t < start.size(); ++t) r.start_by_worker.push_back(median(start[t]));
    for (const std::vector<double>& w : work) r.work_by_thread.push_back(median(w));
    return r;
  }

 private:
  // Thread t of n: its block of rows, as `threaded` cuts them.
  void part(int t, int n) {
    ThreadTimes& mine = times_[static_cast<std::size_t>(t)];
    mine.start = Clock::now();
    const std::int64_t first = problem_.rows * t / n, last = problem_.rows * (t + 1) / n;
    if (!empty_ && last > first) {
      Problem p = problem_;
      p.rows = last - first;
      Buffers b;
      b.x = floats(x_) + first * problem_.cols;
      b.y = floats(y_) + first * problem_.cols;
      b.gamma = floats(gamma_);
      if (problem_.norm == Norm::kLayerNorm) b.beta = floats(beta_);
      forward(find_implementation("highway"), p, b, RunConfig{1});
    }
    mine.end = Clock::now();
  }

  static float* floats(PlacedBytes& bytes) { return reinterpret_cast<float*>(bytes.data()); }

  bool empty_;
  Problem problem_;
  PlacedBytes x_, y_, gamma_, beta_;  // f32
  std::vector<ThreadTimes> times_;
};

int run(int argc, char** argv) {
  Options o;
  CLI::App app{
      "normbench-team-times: where a multithreaded call's time goes. Many back-to-back calls cut one\n"
      "f32 problem by rows over the threads (as `threaded` does); printed per runner and thread count,\n"
      "medians over the calls in ns: the call, the last thread's start, the longest thread's work,\n"
      "the caller's return after the last thread ended, each worker's start after the call began, and\n"
      "each thread's work (which one is slow)."};
  app.add_option("--shape", o.shape, "Problem RxC (rows x cols)")->capture_default_str();
  app.add_option("--norm", o.norm, "layernorm or rmsnorm")->capture_default_str();
  app.add_option("--threads", o.threads, "Thread counts (comma list; default 2 and the cores)");
  app.add_option("--runner", o.runners, "team (normbench's worker team), openmp (parallel regions); comma list")
      ->capture_default_str();
  app.add_option("--calls", o.calls, "Timed calls per runner and thread count")->capture_default_str();
  app.add_flag("--empty", o.empty, "Threads do no work: the bare start and join");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {  // one line and exit 2, as for every other bad input
    std::cerr << "normbench-team-times: " << e.what() << " (try --help)\n";
    return 2;
  }
  try {
    const cli::Shape shape = cli::parse_shape(o.shape);
    if (shape.channels != 0 || shape.channels_last)
      throw Error(fmt::format("--shape: '{}' is not RxC", o.shape));
    Norm norm{};
    if (o.norm == "layernorm") norm = Norm::kLayerNorm;
    else if (o.norm == "rmsnorm") norm = Norm::kRMSNorm;
    else throw Error(fmt::format("--norm: '{}' is not layernorm or rmsnorm", o.norm));
    if (o.calls < 1 || o.calls > 10'000'000) throw Error(fmt::format("--calls: {} is not in [1, 10000000]", o.calls));
    std::vector<int> threads = cli::parse_thread_counts(o.threads, kMaxTeamThreads);
    if (threads.empty()) threads = {2, std::max(2, omp_get_num_procs())};
    threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
    const std::vector<std::string> runners = cli::split_list(o.runners);
    if (runners.empty()) throw Error("--runner: none given");
    for (const std::string& r : runners)
      if (r != "team" && r != "openmp") throw Error(fmt::format("--runner: '{}' is not team or openmp", r));
    if (shape.rows * shape.cols > (std::int64_t{1} << 28))
      throw Error(fmt::format("--shape: {} is more than 2^28 values; this measures calls, not DRAM", o.shape));

    const int cpus = omp_get_num_procs();
    for (int t : threads)
      if (t > cpus)
        std::cerr << fmt::format("normbench-team-times: warning: {} threads on {} CPUs time-slice (and the team's "
                                 "workers do not spin): their times are not those of {} cores\n",
                                 t, cpus, t);
    CallTimer timer(norm, shape, o.empty);
    fmt::print("# {} f32 {}{}, {} calls each, {} CPUs; medians in ns\n", o.norm, cli::shape_name(shape),
               o.empty ? " (empty threads)" : "", o.calls, cpus);
    fmt::print("{:<7} {:>7} {:>9} {:>10} {:>12} {:>9}  start by worker 1..n-1 | work by thread 0..n-1\n", "runner",
               "threads", "call", "last start", "longest work", "return");
    for (int t : threads)
      for (const std::string& r : runners) {
        const CallTimes c = timer.measure(r, t, o.calls);
        fmt::print("{:<7} {:>7} {:>9.0f} {:>10.0f} {:>12.0f} {:>9.0f} ", r, t, c.total, c.last_start, c.longest_work,
                   c.return_after_last_end);
        for (double s : c.start_by_worker) fmt::print(" {:.0f}", s);
        fmt::print(" |");
        for (double w : c.work_by_thread) fmt::print(" {:.0f}", w);
        fmt::print("\n");
        std::fflush(stdout);
      }
    return 0;
  } catch (const Error& e) {
    std::cerr << "normbench-team-times: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace
}  // namespace normbench::bench

int main(int argc, char** argv) {
  normbench::bench::ensure_bounded_openmp_spin(argv);
  return normbench::bench::run(argc, argv);
}
