// normbench-compare: noise-aware comparison of two normbench reports.
#pragma once

#include <string>
#include <vector>

namespace normbench::compare {

struct MannWhitney {
  double u = 0;        // U statistic of the first sample
  double p = 1;        // two-sided p-value
  double min_p = 1;    // the smallest p-value these sample sizes (and ties) can produce
  bool exact = false;  // exact distribution (n1 * n2 <= 2500) or normal approximation
};

// Two-sided Mann-Whitney U test (as Google Benchmark's tools/compare.py uses): for n1*n2 <= 2500
// the exact null distribution, conditional on the values' ties where there are any (every split
// of the pooled values into the two samples equally likely), otherwise the normal approximation
// with continuity and tie corrections. Throws Error on a NaN or infinite value (no order to rank).
MannWhitney mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

// How the p-values of the cases a comparison tests together are corrected for their number m
// (at alpha 0.05, 144 unchanged cases flag about 7 by chance):
//  - kHolm: Holm's step-down; the chance of flagging any unchanged case stays <= alpha.
//  - kBenjaminiHochberg: the expected share of unchanged cases among those flagged stays <= alpha
//    (cases independent or positively dependent).
// Either way a case whose p-value is alone among m needs p <= alpha / m to be flagged.
enum class Correction { kNone, kHolm, kBenjaminiHochberg };

// Adjusted p-values, in the order given (R's p.adjust with "holm" or "BH"): a case is flagged at
// level alpha when its adjusted value is below alpha. Each adjusted value is in [p, 1].
std::vector<double> adjust_p_values(const std::vector<double>& p, Correction correction);

// The command line tool; returns its exit code (0 no regression, 1 regression, 2 usage/input error).
int run(int argc, char** argv);

}  // namespace normbench::compare
