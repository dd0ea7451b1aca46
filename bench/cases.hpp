// One benchmark case: what normbench registers with Google Benchmark and what a report row
// describes.
#pragma once

#include <cstdint>
#include <string>

#include "normbench/normbench.hpp"
#include "shapes.hpp"

namespace normbench::bench {

// The bench-only variant that runs the residual add and the norm as two calls.
inline constexpr const char* kSeparateAdd = "residual-add-separate";

struct Case {
  std::string name;                 // norm/impl/dtype/RxC/threads:T (parseable)
  const Implementation* impl;       // nullptr for a ceiling case
  Norm norm;                        // for a ceiling case, only the row-phased one's (whose traffic it mimics)
  DType dtype;
  Shape shape;
  int threads;
  bool cold_cache;
  std::int64_t bytes_per_iter;      // read x + write y + gamma/beta once
  std::int64_t working_set_bytes;   // x + y + gamma + beta, one copy
  std::string ceiling_name;         // the ceiling case this one is compared with
  std::string nt_ceiling_name;      // the non-temporal-store ceiling beside it
  StorePolicy stores = StorePolicy::kAuto;  // asked of the kernel (ceilings: kCached or kStreaming)
  // A variant_presets() name, or kSeparateAdd: add_rounded then the standard norm of h, the
  // unfused pair that residual-add replaces (same bytes counted: read x, r; write h, y).
  std::string variant = "standard";
  // --huge-pages: x, y (and r, h) asked for transparent huge pages (madvise); the system's
  // policy (/sys/kernel/mm/transparent_hugepage/enabled: always, madvise, never) decides otherwise.
  bool huge_pages = false;
  std::string thp_policy{};
  // A ceiling case: the row-phased ceiling of `norm` (ceiling.hpp), not the stream-scale copy.
  bool phased = false;
  // With `phased`: LayerNorm's arithmetic as well (PhasedRows::layernorm_arithmetic; one-row f32
  // LayerNorm calls of one statistics chunk at 1 thread), reported as row-phased-arithmetic.
  bool arithmetic = false;

  bool is_separate_add() const;
  // The problem this case runs (for kSeparateAdd: the norm of h, without residual_add).
  Problem problem() const;

  bool is_ceiling() const { return impl == nullptr; }
  // What the case's stores really are: "streaming" or "cached".
  std::string_view effective_stores() const;
};

}  // namespace normbench::bench
