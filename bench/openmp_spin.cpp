// GCC's OpenMP spin bounded for a benchmark, and normbench's places kept across the re-execution.
#include "openmp_spin.hpp"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>

#include "normbench/thread_team.hpp"

namespace normbench::bench {
namespace {

// GCC's OpenMP workers (oneDNN's here: the kernels and ceilings run on thread_team.hpp's workers,
// whose spin is bounded the same way) spin after a parallel region for GOMP_SPINCOUNT iterations (300,000 by
// default, 30 billion with OMP_WAIT_POLICY=ACTIVE), then sleep. Spinning forever steals the core
// a following single-threaded case runs on; sleeping at once (PASSIVE) makes every call wake a
// worker through the kernel, which cost 2-thread runs of L2-sized shapes 3x (128x768 LayerNorm:
// 2 threads 0.33x of 1 thread, the 2-thread ceiling 0.13x). A bounded spin of 100,000 keeps
// workers awake between the back-to-back calls of a case and asleep soon after it (the
// --hygiene-check ratio stays within 1%). libgomp reads these only at start-up, so set it and
// re-execute ourselves once; a user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
constexpr const char* kSpinCount = "100000";

// With OMP_PROC_BIND set, libgomp has pinned this (initial) thread to the first place before
// main, and exec keeps that mask: the new process derived its places from that one CPU and ran
// every thread there (OMP_PROC_BIND=close, 2 threads: both on CPU 0, the 2-thread cases at half
// speed; on 16 cores every thread count ran at 1 thread's speed). So the new process gets back
// every CPU of the places, which libgomp took from the mask the process started with.
void give_back_every_place_cpu() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int p = 0; p < omp_get_num_places(); ++p) add_openmp_place_cpus(p, cpus);
  if (CPU_COUNT(&cpus) > 0) sched_setaffinity(0, sizeof cpus, &cpus);
}

}  // namespace

void ensure_bounded_openmp_spin(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  setenv("GOMP_SPINCOUNT", kSpinCount, 1);
  if (omp_get_proc_bind() != omp_proc_bind_false) give_back_every_place_cpu();
  execv("/proc/self/exe", argv);  // on failure we simply continue with libgomp's default
}

}  // namespace normbench::bench
