// Entry points of the implementation families (one .cpp each), wired into the registry.
// Kernels here are unchecked: normbench::forward() validates before calling them.
#pragma once

#include <cstdint>
#include <string>

#include "normbench/normbench.hpp"

namespace normbench::detail {

void naive_forward(const Problem& p, const Buffers& b, const RunConfig& cfg);
void welford_forward(const Problem& p, const Buffers& b, const RunConfig& cfg);
void fused_forward(const Problem& p, const Buffers& b, const RunConfig& cfg);

// Highway: rows [row_begin, row_end) on the best target this CPU supports (or the one a test
// forced with hwy::SetSupportedTargetsForTest).
void highway_rows(const Problem& p, const Buffers& b, std::int64_t row_begin, std::int64_t row_end);
void highway_forward(const Problem& p, const Buffers& b, const RunConfig& cfg);
void highway_f64_forward(const Problem& p, const Buffers& b, const RunConfig& cfg);
std::string highway_target();
// One chunk (chunked_stats.hpp) of one row, with the highway kernel's arithmetic: statistics
// (LayerNorm mean and M2, RMSNorm sum of squares in m2) and the apply step over [begin, end).
void highway_chunk_stats(const Problem& p, const Buffers& b, std::int64_t row, std::int64_t chunk, double* mean,
                         double* m2);
void highway_apply_range(const Problem& p, const Buffers& b, std::int64_t row, std::int64_t begin, std::int64_t end,
                         double mean, double rstd);

void threaded_forward(const Problem& p, const Buffers& b, const RunConfig& cfg);

// Validation shared by forward() and reference_forward(): everything but the output buffers.
// Returns false for the rows == 0 no-op.
bool check_problem_and_inputs(const Problem& p, const Buffers& b, const RunConfig& cfg);

}  // namespace normbench::detail
