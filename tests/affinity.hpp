// The CPUs the calling thread may run on (its affinity mask), in order: for the tests of thread
// placement.
#pragma once

#include <sched.h>

#include <vector>

namespace normbench::testing {

inline std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

}  // namespace normbench::testing
