// The worker team of thread_team.hpp: one cache line per worker, which the caller writes to start
// it and the worker writes when it is done, and a bounded spin before a futex sleep.
#include "normbench/thread_team.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include <omp.h>

namespace normbench {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins while pred() holds, for at most `bound`; returns whether pred() stopped holding.
template <class Pred>
bool spin_while(const Pred& pred, std::chrono::microseconds bound) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (!pred()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() - start > bound) return !pred();
  }
}

// Pins the calling worker to OpenMP place t modulo the place count, where OMP_PROC_BIND asks for
// binding (see thread_team.hpp). Without it the worker keeps the mask it inherited.
void bind_like_openmp(int t) {
  if (omp_get_proc_bind() == omp_proc_bind_false || omp_get_num_places() < 1) return;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  add_openmp_place_cpus(t % omp_get_num_places(), cpus);
  if (CPU_COUNT(&cpus) > 0) pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus);
}

// Everything a worker reads to start a call sits in its own cache line, written by the caller
// before it bumps `go`: one cache-line transfer between cores starts the worker. (With the task in
// the shared Team object the worker started 497-661 ns after the call began, 64x768 LayerNorm at
// 2 threads; OpenMP's worker 350-537 ns; in its own line, 97-112 ns.)
//
// The worker reports the end of its task in the same line (`done`), not on a counter shared by all
// workers: the caller checks the workers' lines in turn, reads that need not wait for one another,
// where a shared counter passes between the cores once per worker, one after another.
struct alignas(64) WorkerSlot {
  std::atomic<std::uint32_t> go{0};    // the generation of the last call this worker was asked to run
  std::atomic<std::uint32_t> done{0};  // the generation of the last call this worker finished
  std::atomic<bool> sleeping{false};
  bool stop = false;
  bool spin = true;  // whether to spin for the next call before sleeping
  int n = 1;
  void (*task)(void*, int, int) = nullptr;
  void* ctx = nullptr;
};

class Team {
 public:
  ~Team() {
    for (auto& slot : slots_) {
      slot->stop = true;
      slot->go.fetch_add(1);
      slot->go.notify_one();
    }
    for (auto& w : workers_) w.join();
  }

  void run(int threads, void (*task)(void*, int, int), void* ctx) {
    const int n = std::clamp(threads, 1, kMaxTeamThreads);
    // One call at a time; a call while the team is busy (another thread's, or a nested one from
    // a task, the caller's own included) runs on its caller alone.
    if (n == 1 || busy_.exchange(true, std::memory_order_acquire)) return task(ctx, 0, 1);
    start_workers(n - 1);
    // More threads than CPUs: a spinning worker would take the CPU another thread of the call
    // needs (libgomp stops spinning then too).
    const bool spin = n <= cpus_;
    const std::uint32_t generation = ++generation_;
    const int workers = n - 1;
    for (int w = 0; w < workers; ++w) {
      WorkerSlot& slot = *slots_[static_cast<std::size_t>(w)];
      slot.task = task;
      slot.ctx = ctx;
      slot.n = n;
      slot.spin = spin;
      slot.go.store(generation, std::memory_order_release);
    }
    // One fence for all workers, against each worker's seq_cst store to `sleeping` then load of
    // `go` (Dekker): a worker that has not seen its `go` is seen sleeping here. A seq_cst store
    // per worker would drain the store buffer once per worker, one cache-line transfer after
    // another; here the transfers overlap.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (int w = 0; w < workers; ++w) {
      WorkerSlot& slot = *slots_[static_cast<std::size_t>(w)];
      if (slot.sleeping.load(std::memory_order_relaxed)) slot.go.notify_one();
    }
    task(ctx, 0, n);
    int finished = 0;  // workers 0..finished-1 are known to be done
    const auto working = [&] {
      while (finished < workers &&
             slots_[static_cast<std::size_t>(finished)]->done.load(std::memory_order_acquire) == generation)
        ++finished;
      return finished < workers;
    };
    if (!spin || !spin_while(working, std::chrono::microseconds(kSpinMicroseconds)))
      while (working()) std::this_thread::yield();
    busy_.store(false, std::memory_order_release);
  }

  int workers_started() const { return static_cast<int>(workers_.size()); }

 private:
  // Called by the owner of busy_ only.
  void start_workers(int count) {
    while (static_cast<int>(workers_.size()) < count) {
      const int t = static_cast<int>(workers_.size()) + 1;
      slots_.push_back(std::make_unique<WorkerSlot>());
      slots_.back()->go.store(generation_);
      slots_.back()->done.store(generation_);
      // The caller may bump `go` before the thread starts: it starts from the generation it was
      // created at, not from what it first reads.
      workers_.emplace_back([this, t, slot = slots_.back().get(), created = generation_] { work(t, *slot, created); });
    }
  }

  void work(int t, WorkerSlot& slot, std::uint32_t seen) {
    bind_like_openmp(t);
    bool spin = true;
    for (;;) {
      const auto unchanged = [&] { return slot.go.load(std::memory_order_acquire) == seen; };
      if (!spin || !spin_while(unchanged, std::chrono::microseconds(kSpinMicroseconds))) {
        slot.sleeping.store(true);  // seq_cst, against the caller's store to `go`
        while (slot.go.load() == seen) slot.go.wait(seen);
        slot.sleeping.store(false, std::memory_order_relaxed);
      }
      seen = slot.go.load(std::memory_order_acquire);
      if (slot.stop) return;
      spin = slot.spin;
      slot.task(slot.ctx, t, slot.n);
      slot.done.store(seen, std::memory_order_release);
    }
  }

  std::atomic<bool> busy_{false};
  const int cpus_ = omp_get_num_procs();  // the CPUs of the mask the process started with
  std::uint32_t generation_ = 0;
  std::vector<std::unique_ptr<WorkerSlot>> slots_;  // slot w belongs to worker t = w + 1
  std::vector<std::thread> workers_;
};

Team& team() {
  static Team instance;
  return instance;
}

}  // namespace

void run_on_team(int threads, void (*task)(void*, int, int), void* ctx) { team().run(threads, task, ctx); }

int team_workers_started() { return team().workers_started(); }

void add_openmp_place_cpus(int place, cpu_set_t& cpus) {
  std::vector<int> ids(static_cast<std::size_t>(omp_get_place_num_procs(place)));
  omp_get_place_proc_ids(place, ids.data());
  for (int id : ids)
    if (id >= 0 && id < CPU_SETSIZE) CPU_SET(id, &cpus);
}

}  // namespace normbench
