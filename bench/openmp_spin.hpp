// The bounded OpenMP spin that normbench and normbench-team-times run under (openmp_spin.cpp).
#pragma once

namespace normbench::bench {

// Unless the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT, sets GOMP_SPINCOUNT=100000 and
// re-executes the program with the same argv (libgomp reads it only at start-up). Call first in
// main; returns only when nothing is to be done or the exec failed.
void ensure_bounded_openmp_spin(char** argv);

}  // namespace normbench::bench
