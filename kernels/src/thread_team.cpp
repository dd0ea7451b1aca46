// The worker team of thread_team.hpp: one cache line that announces each call to every worker, one
// line per worker where it reports the end of its part, and a bounded spin before a futex sleep.
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

// Spins while pred() holds, until `deadline`, the end of a spin that began kSpinMicroseconds
// before it; returns whether pred() stopped holding. From kYieldAfterMicroseconds into the spin
// it yields the CPU between its checks (see thread_team.hpp); the start is derived from the
// deadline, not read from the clock again.
template <class Pred>
bool spin_while(const Pred& pred, std::chrono::steady_clock::time_point deadline) {
  const auto yield_from = deadline - std::chrono::microseconds(kSpinMicroseconds - kYieldAfterMicroseconds);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (!pred()) return true;
      cpu_relax();
    }
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline) return !pred();
    if (now > yield_from) sched_yield();
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

// A call is announced in one cache line that every worker watches: one store starts all of them,
// the line's invalidation reaching the workers at once. (With a line per worker, the caller's
// stores to the workers' lines completed one after another: on 16 Xeon cores the 15th worker
// started 0.6-1.6 us after the call, with one line all 15 about 0.6 us after it;
// PERFORMANCE-LOG.md, "Where a 16-thread call's time goes".) The call's number, its thread count
// and the spin flag share one atomic word, so a worker outside the call tells so from the word
// alone and never reads the task, which the next call may be rewriting.
//
// 128-byte aligned and sized, as WorkerSlot: the spatial prefetchers of Zen and of Intel's cores
// fetch lines in 128-byte pairs, so a line written by one thread beside one watched by another
// may pass between the cores as if they were one.
struct alignas(128) CallLine {
  std::atomic<std::uint64_t> word{0};  // see pack(); changes once per call
  void (*task)(void*, int, int) = nullptr;  // written before `word`, read by the call's threads
  void* ctx = nullptr;
};

constexpr std::uint64_t kThreadsMask = 0xFFFF;  // kMaxTeamThreads fits
constexpr std::uint64_t kSpinBit = 1u << 16, kStopBit = 1u << 17;
static_assert(kMaxTeamThreads <= static_cast<int>(kThreadsMask));

constexpr std::uint64_t pack(std::uint32_t generation, int n, bool spin, bool stop) {
  return std::uint64_t{generation} << 32 | static_cast<std::uint64_t>(n) | (spin ? kSpinBit : 0) |
         (stop ? kStopBit : 0);
}
constexpr std::uint32_t generation_of(std::uint64_t word) { return static_cast<std::uint32_t>(word >> 32); }
constexpr int threads_of(std::uint64_t word) { return static_cast<int>(word & kThreadsMask); }

// What each worker writes (the end of its part of a call, whether it sleeps) and what wakes it
// from sleep, in a line of its own: the caller checks the workers' lines in turn, reads that need
// not wait for one another, where a counter shared by all workers would pass between the cores
// once per worker, one after another.
struct alignas(128) WorkerSlot {
  std::atomic<std::uint32_t> done{0};  // the generation of the last call this worker finished
  std::atomic<bool> sleeping{false};
  std::atomic<std::uint32_t> wake{0};  // bumped by the caller to wake the worker (futex word)
};

class Team {
 public:
  ~Team() {
    call_.word.store(pack(generation_, 0, false, true));
    for (auto& slot : slots_) {
      slot->wake.fetch_add(1);
      slot->wake.notify_one();
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
    // Written only when they change (a benchmark repeats one call): a store here while workers
    // watch the line would cost one more transfer of it.
    if (call_.task != task) call_.task = task;
    if (call_.ctx != ctx) call_.ctx = ctx;
    call_.word.store(pack(generation, n, spin, false), std::memory_order_release);
    // The fence, against each sleeping worker's seq_cst store to `sleeping` then load of `word`
    // (Dekker): a worker of this call that has not seen the new word is seen sleeping here.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (int w = 0; w < workers; ++w) {
      WorkerSlot& slot = *slots_[static_cast<std::size_t>(w)];
      if (slot.sleeping.load(std::memory_order_relaxed)) {
        slot.wake.fetch_add(1, std::memory_order_release);
        slot.wake.notify_one();
      }
    }
    task(ctx, 0, n);
    int finished = 0;  // workers 0..finished-1 are known to be done
    const auto working = [&] {
      while (finished < workers &&
             slots_[static_cast<std::size_t>(finished)]->done.load(std::memory_order_acquire) == generation)
        ++finished;
      return finished < workers;
    };
    if (!spin || !spin_while(working, std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicroseconds)))
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
      slots_.back()->done.store(generation_);
      // The caller may announce a call before the thread starts: it starts from the word of the
      // last call before it was created, not from what it first reads.
      workers_.emplace_back(
          [this, t, slot = slots_.back().get(), created = call_.word.load()] { work(t, *slot, created); });
    }
  }

  void work(int t, WorkerSlot& slot, std::uint64_t seen) {
    bind_like_openmp(t);
    using Clock = std::chrono::steady_clock;
    const auto spin_time = std::chrono::microseconds(kSpinMicroseconds);
    // Spin until kSpinMicroseconds after this worker's last call: calls that do not include it
    // (fewer threads) do not keep it awake.
    auto spin_until = Clock::now() + spin_time;
    bool spin = true;
    for (;;) {
      const auto unchanged = [&] { return call_.word.load(std::memory_order_acquire) == seen; };
      if (!spin || !spin_while(unchanged, spin_until)) {
        slot.sleeping.store(true);  // seq_cst, against the caller's store to `word`
        for (;;) {
          const std::uint32_t wake = slot.wake.load();
          if (call_.word.load() != seen) break;
          slot.wake.wait(wake);
        }
        slot.sleeping.store(false, std::memory_order_relaxed);
        spin = false;  // until this worker runs a call again
      }
      seen = call_.word.load(std::memory_order_acquire);
      if (seen & kStopBit) return;
      const int n = threads_of(seen);
      if (t >= n) continue;  // not in this call; its task and ctx are not this worker's to read
      call_.task(call_.ctx, t, n);
      slot.done.store(generation_of(seen), std::memory_order_release);
      spin = (seen & kSpinBit) != 0;
      spin_until = Clock::now() + spin_time;
    }
  }

  std::atomic<bool> busy_{false};
  const int cpus_ = omp_get_num_procs();  // the CPUs of the mask the process started with
  std::uint32_t generation_ = 0;
  CallLine call_;
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
