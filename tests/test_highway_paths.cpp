// The highway family's internal choices must never change a result: non-temporal stores versus
// ordinary ones (with y unaligned to the vector, and in place), and rows processed in interleaved
// pairs or triples versus one at a time.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "placed_bytes.hpp"
#include "test_support.hpp"

namespace normbench::testing {
namespace {

// Shapes: short rows (interleaved in pairs when they fit L2; LayerNorm in triples on 16-bit data,
// and on f32 rows whose x and y fit L1: 3x17; f32 rows of at most 8 KiB software-pipelined, each
// row's apply step in one loop with the next row's statistics, LayerNorm calls of 4 rows or more,
// RMSNorm 3 or more: 64x1000, 7x33, 7x768, 6x2048, RMSNorm 3x17; 7x768 with streaming stores too,
// whose rows must share the store alignment; 16-bit rows of more than 4 KiB, up to 8 KiB, whose
// x and y fit L2, pipelined the same way: 4x3000 with ragged tails, 5x4096 where it is not
// blocked, 5x2100 where a 32 KiB L1 blocks the other two), LayerNorm rows overflowing L1 with their parameters
// (2x4096: a pair; 5x4096: one block of rows applied column block by column block; 11x4500: a
// block of 8 and one of 3, the last column block ragged; highway-f64 on Intel also blocks 4x3000,
// 5x2100 and 24x3000, its parameters widened to f64 overflowing L1, and RMSNorm's 5x4096 and
// 11x4500 with gamma alone), an odd row count (a lone last row),
// ragged tails, rows longer than one statistics chunk. bf16 calls copy gamma and beta into the
// apply step's even/odd order only where that costs at most 1 KiB of them per row (see
// pair_params_for_even_odd_apply): 64x1000, 7x33 and 7x768 (short rows), 24x2100 (pipelined),
// 24x3000 (LayerNorm blocked on a 32 KiB L1, pipelined on 48 KiB); the others take the plain order.
constexpr std::pair<std::int64_t, std::int64_t> kShapes[] = {
    {64, 1000}, {7, 33},    {7, 768}, {6, 2048}, {2, 4096},  {5, 4096},  {4, 3000},
    {11, 4500}, {2, 65537}, {3, 17},  {5, 2100}, {24, 2100}, {24, 3000}};

// Row 2's first 64 values (fewer where the row is shorter) raised by 8, where a call has more than
// 2 rows: its shift (their mean) then lies far from the row's mean, so that LayerNorm's statistics
// take their second read in the middle of a call.
void raise_start_of_row_two(Inputs& in, DType t, std::int64_t rows, std::int64_t cols) {
  if (rows <= 2) return;
  for (std::int64_t c = 0; c < std::min<std::int64_t>(cols, 64); ++c) {
    const auto at = static_cast<std::size_t>(2 * cols + c);
    store_rounded(t, in.x.data(), at, load_as_long_double(t, in.x.data(), at) + 8);
  }
}

TEST(HighwayPaths, StreamingStoresEqualCachedStoresBitwise) {
  for (std::int64_t target : simd_targets()) {
    ForcedTarget forced(target);
    for (const char* name : {"highway", "highway-f64", "threaded"}) {
      const Implementation& impl = find_implementation(name);
      ASSERT_TRUE(impl.honours_store_policy) << name;
      for (Norm n : kAllNorms)
        for (DType t : kAllDTypes)
          for (auto [rows, cols] : kShapes) {
            SCOPED_TRACE(fmt::format("{} {} {} {} {}x{}", hwy::TargetName(target), name, norm_name(n),
                                     dtype_name(t), rows, cols));
            const Problem p{n, t, rows, cols, default_eps(n)};
            Inputs in(p, true, true);
            fill_inputs(in, static_cast<std::uint64_t>(rows + cols));
            const auto count = static_cast<std::size_t>(rows * cols);
            const RunConfig cached{2, StorePolicy::kCached}, streaming{2, StorePolicy::kStreaming};
            EXPECT_TRUE(uses_streaming_stores(impl, p, streaming));
            EXPECT_FALSE(uses_streaming_stores(impl, p, cached));
            Buffer expected(count, dtype_size(t)), got(count, dtype_size(t));  // y one element off a vector
            forward(impl, p, in.buffers(expected.data()), cached);
            forward(impl, p, in.buffers(got.data()), streaming);
            ASSERT_EQ(0, std::memcmp(got.data(), expected.data(), got.size_bytes()));
            // In place, streaming and cached: x is overwritten by y.
            for (const RunConfig& stores : {streaming, cached}) {
              Inputs inplace(p, true, true);
              fill_inputs(inplace, static_cast<std::uint64_t>(rows + cols));
              forward(impl, p, inplace.buffers(inplace.x.data()), stores);
              ASSERT_EQ(0, std::memcmp(inplace.x.data(), expected.data(), got.size_bytes()));
            }
          }
    }
  }
}

// 16-bit rows of 3000 to 4097 values streamed to a y at a vector's alignment (no peel: the first
// store of every row whose length is whole cache lines is a whole aligned vector, unlike the
// misaligned y of StreamingStoresEqualCachedStoresBitwise): the same bits as cached stores, whose
// rows are the rows computed alone (EveryRowEqualsTheRowComputedAlone), `threaded` over 2 threads'
// row ranges too. (These rows had run pipelined when streamed on Intel in `2914822`; see
// reports/baselines/PERFORMANCE-LOG.md, "16-bit rows pipelined under streaming stores".)
TEST(HighwayPaths, StreamedRowsFromAnAlignedYEqualCachedStoresBitwise) {
  constexpr std::pair<std::int64_t, std::int64_t> kStreamedShapes[] = {
      {5, 4096}, {4, 3008}, {9, 2080}, {3, 4096}, {2, 4096}, {5, 4097}, {4, 3000}};
  for (std::int64_t target : simd_targets()) {
    ForcedTarget forced(target);
    for (const char* name : {"highway", "threaded"}) {
      const Implementation& impl = find_implementation(name);
      for (Norm n : {Norm::kLayerNorm, Norm::kRMSNorm})
        for (DType t : {DType::kBF16, DType::kF16})
          for (auto [rows, cols] : kStreamedShapes) {
            SCOPED_TRACE(fmt::format("{} {} {} {} {}x{}", hwy::TargetName(target), name, norm_name(n), dtype_name(t),
                                     rows, cols));
            const Problem p{n, t, rows, cols, default_eps(n)};
            Inputs in(p, true, centres(n));  // RMSNorm with gamma alone, LayerNorm with gamma and beta
            fill_inputs(in, static_cast<std::uint64_t>(rows * cols + 3));
            raise_start_of_row_two(in, t, rows, cols);
            const auto count = static_cast<std::size_t>(rows * cols);
            Buffer expected(count, dtype_size(t)), streamed(count, dtype_size(t));
            forward(impl, p, in.buffers(expected.data()), RunConfig{2, StorePolicy::kCached});
            forward(impl, p, in.buffers(streamed.aligned_data()), RunConfig{2, StorePolicy::kStreaming});
            ASSERT_EQ(0, std::memcmp(streamed.aligned_data(), expected.data(), expected.size_bytes()));
          }
    }
  }
}

// Rows whose gamma (RMSNorm) or gamma and beta (LayerNorm) overflow L2, streamed: on Intel they
// read x and the parameters ahead of themselves (prefetch_long_rows_ahead), `threaded` in its
// column ranges of a split row too. One row and three, ragged: the same bits as cached stores.
// One f32 row also without beta and without either (the prefetch then skips what is not given).
TEST(HighwayPaths, RowsWithParametersBeyondL2StreamAsTheyCache) {
  const std::int64_t l2 = data_cache_bytes(2) > 0 ? data_cache_bytes(2) : std::int64_t{2} << 20;
  const std::int64_t cols = l2 / 4 + 4099;  // f32 gamma alone is over L2
  struct Params {
    bool gamma, beta;
  };
  for (std::int64_t target : simd_targets()) {
    ForcedTarget forced(target);
    for (const char* name : {"highway", "threaded"}) {
      const Implementation& impl = find_implementation(name);
      for (Norm n : {Norm::kLayerNorm, Norm::kRMSNorm})
        for (DType t : {DType::kF32, DType::kBF16})
          for (std::int64_t rows : {1, 3})
            for (Params given : {Params{true, true}, Params{true, false}, Params{false, false}}) {
              if (!given.beta && (t != DType::kF32 || rows != 1)) continue;
              SCOPED_TRACE(fmt::format("{} {} {} {} {}x{} gamma {} beta {}", hwy::TargetName(target), name, norm_name(n),
                                       dtype_name(t), rows, cols, given.gamma, given.beta));
              const Problem p{n, t, rows, cols, default_eps(n)};
              Inputs in(p, given.gamma, given.beta);
              fill_inputs(in, static_cast<std::uint64_t>(rows + 7));
              const auto count = static_cast<std::size_t>(rows * cols);
              Buffer expected(count, dtype_size(t)), got(count, dtype_size(t));
              forward(impl, p, in.buffers(expected.data()), RunConfig{2, StorePolicy::kCached});
              forward(impl, p, in.buffers(got.data()), RunConfig{2, StorePolicy::kStreaming});
              ASSERT_EQ(0, std::memcmp(got.data(), expected.data(), got.size_bytes()));
            }
    }
  }
}

TEST(HighwayPaths, ScalarFamiliesIgnoreTheStorePolicy) {
  const Problem p{Norm::kLayerNorm, DType::kF32, 4, 64, 1e-5};
  for (const char* name : {"naive", "welford", "fused"}) {
    const Implementation& impl = find_implementation(name);
    EXPECT_FALSE(impl.honours_store_policy) << name;
    EXPECT_FALSE(uses_streaming_stores(impl, p, RunConfig{1, StorePolicy::kStreaming})) << name;
  }
}

TEST(HighwayPaths, AutoStreamsOnlyOutputsOfHalfTheLastLevelCacheOrMoreInRowsOfALineOrMore) {
  const Implementation& hw = find_implementation("highway");
  const std::int64_t llc = store_rule_cache_bytes();
  ASSERT_GT(llc, 0);
  // This machine's answer is the rule's for its CPU, with the cache the rule counts.
  for (std::int64_t cols : {1024, 32768}) {
    const std::int64_t row_bytes = cols * 4;
    const std::int64_t rows_at_half = (llc / 2 + row_bytes - 1) / row_bytes;
    for (std::int64_t rows : {rows_at_half, rows_at_half / 4}) {
      const Problem p{Norm::kLayerNorm, DType::kF32, rows, cols, 1e-5};
      EXPECT_EQ(uses_streaming_stores(hw, p), auto_streaming_stores(p, llc, cached_dram_rows_cpu())) << rows << "x" << cols;
    }
  }
  for (bool cached_dram_rows : {false, true}) {
    SCOPED_TRACE(cached_dram_rows ? "cached DRAM rows" : "streamed DRAM rows");
    const std::int64_t cols = 32768, row_bytes = cols * 4;
    const std::int64_t rows_at_half = (llc / 2 + row_bytes - 1) / row_bytes;
    EXPECT_TRUE(auto_streaming_stores(Problem{Norm::kLayerNorm, DType::kF32, rows_at_half, cols, 1e-5}, llc, cached_dram_rows));
    EXPECT_FALSE(auto_streaming_stores(Problem{Norm::kLayerNorm, DType::kF32, rows_at_half / 4, cols, 1e-5}, llc, cached_dram_rows));
    // Rows shorter than a cache line (48 bytes here) stay cached however large the output.
    const std::int64_t short_rows = 4 * llc / 48;
    EXPECT_FALSE(auto_streaming_stores(Problem{Norm::kLayerNorm, DType::kF16, short_rows, 24, 1e-5}, llc, cached_dram_rows));
    // Rows of 96 bytes stream, but with cached_dram_rows LayerNorm and RMSNorm rows of up to 64 KiB stay cached.
    for (Norm n : {Norm::kLayerNorm, Norm::kRMSNorm}) {
      EXPECT_EQ(auto_streaming_stores(Problem{n, DType::kF16, short_rows / 2, 48, 1e-5}, llc, cached_dram_rows), !cached_dram_rows);
      EXPECT_EQ(auto_streaming_stores(Problem{n, DType::kF32, 2 * llc / 65536, 16384, 1e-5}, llc, cached_dram_rows), !cached_dram_rows);
      EXPECT_TRUE(auto_streaming_stores(Problem{n, DType::kF32, 2 * llc / 65540, 16385, 1e-5}, llc, cached_dram_rows));
    }
  }
}

// The store rule counts the last-level cache up to kMaxStoreRuleCacheBytes (32 MiB on Ice Lake-SP):
// a call whose x and y reach that much streams on any CPU but a Skylake-server one, however large
// the reported L3.
TEST(HighwayPaths, StoreRuleCountsAtMostTheCappedLastLevelCache) {
  const std::int64_t llc = last_level_cache_bytes();
  // The cap this CPU should have, named here rather than read back from max_store_rule_cache_bytes,
  // so that the store choices below fail if the rule counts the wrong cap.
  const std::int64_t cap =
      intel_family6_model() == kIceLakeServerModel ? kIceLakeServerStoreRuleCacheBytes : kMaxStoreRuleCacheBytes;
  EXPECT_EQ(max_store_rule_cache_bytes(), cap);
  EXPECT_EQ(store_rule_cache_bytes(), std::min(llc, cap));
  const Implementation& hw = find_implementation("highway");
  // Rows of 16 KiB whose x and y take the capped cache (2048x4096 f32, 64 MiB; 1024x4096, 32 MiB,
  // on Ice Lake-SP) or more.
  const Problem p{Norm::kLayerNorm, DType::kF32, (cap / 2) / (4096 * 4), 4096, 1e-5};
  EXPECT_EQ(uses_streaming_stores(hw, p), !cached_dram_rows_cpu());
  // Half as many rows stay cached wherever the reported L3 holds more than their x and y.
  const Problem half{Norm::kLayerNorm, DType::kF32, (cap / 4) / (4096 * 4), 4096, 1e-5};
  if (llc > cap / 2) {
    EXPECT_FALSE(uses_streaming_stores(hw, half));
  }
  // Rows of 1 MiB (over 64 KiB) stream on every CPU: 64x262144 f32 is 128 MiB of x and y.
  EXPECT_TRUE(uses_streaming_stores(hw, Problem{Norm::kRMSNorm, DType::kF32, 64, 262144, 1e-5}));
  EXPECT_FALSE(uses_streaming_stores(hw, Problem{Norm::kRMSNorm, DType::kF32, 1, 262144, 1e-5}));
}

// The first value of a /proc/cpuinfo field ("model" is not "model name"), trimmed; empty where the
// file or the field is missing.
std::string first_cpuinfo_value(std::string_view field) {
  const auto trim = [](std::string_view s) {
    const auto begin = s.find_first_not_of(" \t"), end = s.find_last_not_of(" \t");
    return begin == std::string_view::npos ? std::string() : std::string(s.substr(begin, end - begin + 1));
  };
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    const auto colon = line.find(':');
    if (colon != std::string::npos && trim(std::string_view(line).substr(0, colon)) == field)
      return trim(std::string_view(line).substr(colon + 1));
  }
  return {};
}

// The model read from CPUID is the one the kernel reports in /proc/cpuinfo (family 6 Intel CPUs;
// 0 on any other), and only Skylake-server models keep DRAM rows cached.
TEST(HighwayPaths, IntelModelIsTheKernelsModel) {
  const std::string vendor = first_cpuinfo_value("vendor_id"), family = first_cpuinfo_value("cpu family"),
                    model = first_cpuinfo_value("model");
  if (vendor.empty() || family.empty() || model.empty()) GTEST_SKIP() << "not an x86 /proc/cpuinfo";
  const bool intel6 = vendor == "GenuineIntel" && std::stoi(family) == 6;
  EXPECT_EQ(intel_family6_model(), intel6 ? std::stoi(model) : 0);
  EXPECT_EQ(cached_dram_rows_cpu(), intel6 && std::stoi(model) == kSkylakeServerModel);
}

// The store policy's cache size: never above what glibc reports, and on an AMD CPU whose VM hides
// the cache topology (no sysfs cache entries), a core complex's L3 at most, not the socket's
// (a Zen 5 VM here reported 508 MiB, and no output below 254 MiB was streamed).
TEST(HighwayPaths, LastLevelCacheIsWhatOneCoreCanUse) {
  const std::int64_t llc = last_level_cache_bytes();
  ASSERT_GT(llc, 0);
  EXPECT_EQ(data_cache_bytes(3) > 0 ? data_cache_bytes(3) : llc, llc);
  const long from_glibc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (from_glibc > 0) {
    EXPECT_LE(llc, from_glibc);
  }
  if (first_cpuinfo_value("vendor_id") != "AuthenticAMD" || std::filesystem::exists("/sys/devices/system/cpu/cpu0/cache/index0"))
    GTEST_SKIP() << "not an AMD CPU without sysfs cache entries";
  EXPECT_LE(llc, std::int64_t{32} << 20);
}

// y, mean and rstd of impl's call of p (gamma, and beta where asked; row 2's start raised, see
// raise_start_of_row_two) bit for bit those of each row computed alone.
void ExpectEveryRowEqualsTheRowComputedAlone(const Implementation& impl, const Problem& p, bool beta) {
  const std::int64_t rows = p.rows, cols = p.cols;
  Inputs in(p, true, beta);
  fill_inputs(in, static_cast<std::uint64_t>(rows * cols + 1));
  raise_start_of_row_two(in, p.dtype, rows, cols);
  const auto count = static_cast<std::size_t>(rows * cols);
  const std::size_t row_bytes = static_cast<std::size_t>(cols) * dtype_size(p.dtype);
  Buffer all(count, dtype_size(p.dtype)), alone(count, dtype_size(p.dtype));
  std::vector<float> mean_all(rows), rstd_all(rows), mean_alone(rows), rstd_alone(rows);
  forward(impl, p, in.buffers(all.data(), mean_all.data(), rstd_all.data()));
  const Problem one{p.norm, p.dtype, 1, cols, p.eps};
  const Buffers b = in.buffers(nullptr);
  for (std::int64_t r = 0; r < rows; ++r) {
    forward(impl, one,
            Buffers{static_cast<const unsigned char*>(b.x) + r * row_bytes,
                    static_cast<unsigned char*>(alone.data()) + r * row_bytes, b.gamma, b.beta, mean_alone.data() + r,
                    rstd_alone.data() + r});
  }
  ASSERT_EQ(0, std::memcmp(all.data(), alone.data(), all.size_bytes()));
  ASSERT_EQ(0, std::memcmp(mean_all.data(), mean_alone.data(), rows * sizeof(float)));
  ASSERT_EQ(0, std::memcmp(rstd_all.data(), rstd_alone.data(), rows * sizeof(float)));
}

// Buffers at chosen offsets within their pages (4K aliasing): x, y, gamma and beta, `bytes` each,
// start their constructor argument's offset bytes into their own pages (placed_bytes.hpp, as
// normbench places its arrays).
struct PagePlacedRows {
  PagePlacedRows(std::size_t bytes, std::size_t x_offset, std::size_t y_offset, std::size_t gamma_offset,
                 std::size_t beta_offset) {
    x.assign(bytes, x_offset, false);
    y.assign(bytes, y_offset, false);
    gamma.assign(bytes, gamma_offset, false);
    beta.assign(bytes, beta_offset, false);
  }
  bench::PlacedBytes x, y, gamma, beta;
};

// A lone cached f32 row of at most 16 KiB whose x, gamma or beta lies a few hundred bytes behind
// y's page offset is applied from its end (Apply's backward walk, against 4K aliasing). Every
// column's bits must be those of the row applied forwards (gamma and beta at y's offset, x half
// a page away), in place too, with ragged tails, rows shorter than a vector, and a call's last
// row after others.
TEST(HighwayPaths, RowsAppliedBackwardsEqualRowsAppliedForwardsBitwise) {
  constexpr std::pair<std::int64_t, std::int64_t> kRows[] = {{1, 1},    {1, 5},    {1, 17},  {1, 768},
                                                             {1, 1000}, {1, 1025}, {1, 4096}, {3, 768}};
  constexpr std::size_t kY = 2048;
  for (std::int64_t target : simd_targets()) {
    ForcedTarget forced(target);
    for (const char* name : {"highway", "threaded"}) {
      const Implementation& impl = find_implementation(name);
      for (Norm n : {Norm::kLayerNorm, Norm::kRMSNorm})
        for (bool params : {true, false})
          for (auto [rows, cols] : kRows) {
            SCOPED_TRACE(fmt::format("{} {} {} {}x{}{}", hwy::TargetName(target), name, norm_name(n), rows, cols,
                                     params ? "" : " no gamma or beta"));
            const Problem p{n, DType::kF32, rows, cols, default_eps(n)};
            Inputs in(p, params, params && centres(n));
            fill_inputs(in, static_cast<std::uint64_t>(rows * cols + 11));
            const std::size_t bytes = static_cast<std::size_t>(rows * cols) * sizeof(float);
            const std::size_t param_bytes = static_cast<std::size_t>(cols) * sizeof(float);
            // Forwards: x at 0 (2048 bytes from y either way), gamma and beta at y's offset.
            // Backwards: x, gamma and beta 512 bytes before y's offset (3584 bytes walking back).
            // In place: y is x, gamma and beta 256 bytes before it.
            PagePlacedRows forwards(bytes, 0, kY, kY, kY), backwards(bytes, kY - 512, kY, kY - 512, kY - 512),
                in_place(bytes, kY, kY, kY - 256, kY - 256);
            for (PagePlacedRows* at : {&forwards, &backwards, &in_place}) {
              std::memcpy(at->x.data(), in.x.data(), bytes);
              std::memcpy(at->gamma.data(), in.gamma.data(), param_bytes);
              std::memcpy(at->beta.data(), in.beta.data(), param_bytes);
            }
            const auto buffers = [&](PagePlacedRows& at, void* y) {
              return Buffers{at.x.data(), y, in.has_gamma ? at.gamma.data() : nullptr,
                             in.has_beta ? at.beta.data() : nullptr};
            };
            const RunConfig cached{2, StorePolicy::kCached};
            forward(impl, p, buffers(forwards, forwards.y.data()), cached);
            forward(impl, p, buffers(backwards, backwards.y.data()), cached);
            forward(impl, p, buffers(in_place, in_place.x.data()), cached);
            ASSERT_EQ(0, std::memcmp(backwards.y.data(), forwards.y.data(), bytes));
            ASSERT_EQ(0, std::memcmp(in_place.x.data(), forwards.y.data(), bytes));
          }
    }
  }
}

// highway-f64 too: its 16-bit rows are read back from a per-thread copy widened to f64, one
// buffer for the pair of rows computed together. Row 2 of each shape starts with 64 values 8
// above the rest, so that its shift (their mean) lies far from the row's mean and LayerNorm's
// statistics take their second read (with more than 64 columns), in the middle of a call.
TEST(HighwayPaths, EveryRowEqualsTheRowComputedAlone) {
  for (std::int64_t target : simd_targets()) {
    ForcedTarget forced(target);
    for (const char* name : {"highway", "highway-f64"}) {
      const Implementation& hw = find_implementation(name);
      for (Norm n : row_norms())
        for (bool beta : {true, false})  // RMSNorm takes other paths without its shift (pipelined rows)
          for (DType t : kAllDTypes)
            for (auto [rows, cols] : kShapes) {
              if (!beta && centres(n)) continue;
              SCOPED_TRACE(fmt::format("{} {} {} {} {}x{}{}", name, hwy::TargetName(target), norm_name(n), dtype_name(t),
                                       rows, cols, beta ? "" : " no beta"));
              ExpectEveryRowEqualsTheRowComputedAlone(hw, Problem{n, t, rows, cols, default_eps(n)}, beta);
              if (::testing::Test::HasFatalFailure()) return;
            }
    }
  }
}

// 16-bit LayerNorm rows of more than 8 KiB that overflow L1 with gamma and beta, in calls whose x
// and y overflow a 2 MiB L2 (72x8200: 2.36 MB; 40x16400: 2.62 MB) and stay cached: on Intel they
// run software-pipelined (detail::pipeline_blocked_layernorm_rows), elsewhere in blocks of rows
// (bf16 72x8200 with gamma and beta in the apply step's even/odd order; 40x16400, whose copy would
// exceed 1 KiB a row, and the lone rows in the plain one). Row 2 starts far from its mean. Each
// row's bits must be those of the row computed alone.
TEST(HighwayPaths, LongSixteenBitRowsBeyondL2EqualTheRowsComputedAlone) {
  const Implementation& hw = find_implementation("highway");
  for (std::int64_t target : simd_targets()) {
    ForcedTarget forced(target);
    for (DType t : {DType::kBF16, DType::kF16})
      for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{72, 8200}, {40, 16400}}) {
        SCOPED_TRACE(fmt::format("{} {} {}x{}", hwy::TargetName(target), dtype_name(t), rows, cols));
        const Problem p{Norm::kLayerNorm, t, rows, cols, default_eps(Norm::kLayerNorm)};
        ExpectEveryRowEqualsTheRowComputedAlone(hw, p, true);
        if (::testing::Test::HasFatalFailure()) return;
      }
  }
}

// AVX512-BF16's rounding (where the CPU has it) must give the integer rounding's bits, including
// where it has to hand a vector back: subnormal results (columns with gamma ~1e-39 and no beta),
// results that overflow to Inf (gamma and beta 3e38), and NaN rows.
TEST(HighwayPaths, HardwareBf16RoundingEqualsIntegerRoundingBitwise) {
  if (!hardware_bf16_rounding_available()) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  for (std::int64_t target : simd_targets()) {
    ForcedTarget forced(target);
    for (const char* name : {"highway", "threaded"}) {
      const Implementation& impl = find_implementation(name);
      for (Norm n : row_norms())
        for (auto [rows, cols] : kShapes) {
          SCOPED_TRACE(fmt::format("{} {} {} {}x{}", hwy::TargetName(target), name, norm_name(n), rows, cols));
          const Problem p{n, DType::kBF16, rows, cols, default_eps(n)};
          Inputs in(p, true, true);
          fill_inputs(in, static_cast<std::uint64_t>(rows * cols + 7));
          const DType pt = param_dtype(p.dtype);
          for (std::int64_t c = 0; c < cols; ++c)
            if (c % 8 == 3) {
              store_rounded(pt, in.gamma.data(), static_cast<std::size_t>(c), 1e-39 * (1 + c % 5));
              store_rounded(pt, in.beta.data(), static_cast<std::size_t>(c), 0.0);
            } else if (c % 8 >= 6) {  // beyond the largest bf16 for z > 0 (column 6) or z < 0 (column 7)
              store_rounded(pt, in.gamma.data(), static_cast<std::size_t>(c), 3e38);
              store_rounded(pt, in.beta.data(), static_cast<std::size_t>(c), c % 8 == 6 ? 3e38 : -3e38);
            }
          if (rows > 2) store_rounded(p.dtype, in.x.data(), static_cast<std::size_t>(cols + 1), std::nan(""));
          const auto count = static_cast<std::size_t>(rows * cols);
          Buffer integer(count, dtype_size(p.dtype)), hardware(count, dtype_size(p.dtype));
          {
            HardwareBf16Rounding off(false);
            forward(impl, p, in.buffers(integer.data()));
          }
          {
            HardwareBf16Rounding on(true);
            forward(impl, p, in.buffers(hardware.data()));
          }
          ASSERT_EQ(0, std::memcmp(integer.data(), hardware.data(), integer.size_bytes()));
          std::size_t subnormal = 0, infinite = 0;
          for (std::size_t i = 0; i < count; ++i) {
            const float v = to_f32(static_cast<const bf16*>(integer.data())[i]);
            subnormal += std::fpclassify(v) == FP_SUBNORMAL;
            infinite += std::isinf(v);
          }
          EXPECT_GT(subnormal, 0u);  // the inputs reach the cases the instruction cannot round
          EXPECT_GT(infinite, 0u);
        }
    }
  }
}

}  // namespace
}  // namespace normbench::testing
