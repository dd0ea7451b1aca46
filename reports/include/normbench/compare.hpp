// normbench-compare: noise-aware comparison of two normbench reports.
#pragma once

#include <string>
#include <vector>

namespace normbench::compare {

struct MannWhitney {
  double u = 0;        // U statistic of the first sample
  double p = 1;        // two-sided p-value
  double min_p = 1;    // the smallest p-value these sample sizes can produce
  bool exact = false;  // exact distribution (no ties, small samples) or normal approximation
};

// Two-sided Mann-Whitney U test (as Google Benchmark's tools/compare.py uses): exact null
// distribution without ties for n1*n2 <= 2500, otherwise the normal approximation with
// continuity and tie corrections.
MannWhitney mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

// The command line tool; returns its exit code (0 no regression, 1 regression, 2 usage/input error).
int run(int argc, char** argv);

}  // namespace normbench::compare
