// threaded must equal highway bit for bit, for every thread count and every SIMD target.
#include <algorithm>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "test_support.hpp"

namespace normbench::testing {
namespace {

TEST(Threaded, BitwiseEqualToHighwayForEveryThreadCount) {
  const Implementation& hw = find_implementation("highway");
  const Implementation& th = find_implementation("threaded");
  // Rows >= threads split by rows; fewer, long rows split into fixed chunks (several chunks of
  // 32K plus a ragged tail) merged in order: 1x163845 and 2x131072 (at 3 and 8 threads) split
  // their rows, 1x65537 runs whole and 3x65537 by rows.
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{64, 1000}, {64, 4096}, {3, 65537},  {1000, 768},
                                                          {7, 33},    {1, 65537}, {1, 163845}, {2, 131072}};
  for (std::int64_t target : simd_targets()) {
    ForcedTarget forced(target);
    for (Norm n : row_norms())
      for (DType t : kAllDTypes)
        for (auto [rows, cols] : shapes) {
          SCOPED_TRACE(fmt::format("{} {} {} {}x{}", hwy::TargetName(target), norm_name(n),
                                   dtype_name(t), rows, cols));
          const Problem p{n, t, rows, cols, default_eps(n)};
          Inputs in(p, true, true);
          fill_inputs(in, static_cast<std::uint64_t>(rows * cols));
          const std::size_t count = static_cast<std::size_t>(rows * cols);
          Buffer expected(count, dtype_size(t));
          std::vector<float> mean_hw(rows), rstd_hw(rows);
          forward(hw, p, in.buffers(expected.data(), mean_hw.data(), rstd_hw.data()));
          for (int threads : {1, 2, 3, 8}) {
            Buffer got(count, dtype_size(t));
            std::vector<float> mean(rows), rstd(rows);
            forward(th, p, in.buffers(got.data(), mean.data(), rstd.data()), RunConfig{threads});
            ASSERT_EQ(0, std::memcmp(got.data(), expected.data(), got.size_bytes())) << threads << " threads";
            ASSERT_EQ(0, std::memcmp(mean.data(), mean_hw.data(), rows * sizeof(float)));
            ASSERT_EQ(0, std::memcmp(rstd.data(), rstd_hw.data(), rows * sizeof(float)));
          }
        }
  }
}

// The huge-row target asks for the same bits at every thread count: a row of 32 chunks and a
// ragged tail, cut among 1 to 16 threads (16 is the most it takes: one per two chunks), merged
// with Chan's formula in chunk order, must equal highway's single pass of the same chunks.
TEST(Threaded, LongRowSplitAmongUpTo16ThreadsIsBitwiseEqualToHighway) {
  const Implementation& hw = find_implementation("highway");
  const Implementation& th = find_implementation("threaded");
  const std::int64_t cols = (std::int64_t{1} << 20) + 3;
  for (std::int64_t target : simd_targets()) {
    ForcedTarget forced(target);
    for (Norm n : {Norm::kLayerNorm, Norm::kRMSNorm})
      for (DType t : kAllDTypes) {
        SCOPED_TRACE(fmt::format("{} {} {} 1x{}", hwy::TargetName(target), norm_name(n), dtype_name(t), cols));
        const Problem p{n, t, 1, cols, default_eps(n)};
        Inputs in(p, true, true);
        fill_inputs(in, 17);
        Buffer expected(static_cast<std::size_t>(cols), dtype_size(t));
        float mean_hw = 0, rstd_hw = 0;
        forward(hw, p, in.buffers(expected.data(), &mean_hw, &rstd_hw));
        int most_threads_used = 0;
        for (int threads = 1; threads <= 16; ++threads) {
          Buffer got(static_cast<std::size_t>(cols), dtype_size(t));
          float mean = 0, rstd = 0;
          forward(th, p, in.buffers(got.data(), &mean, &rstd), RunConfig{threads});
          most_threads_used = std::max(most_threads_used, threads_used(th, p, RunConfig{threads}));
          ASSERT_EQ(0, std::memcmp(got.data(), expected.data(), got.size_bytes())) << threads << " threads";
          ASSERT_EQ(0, std::memcmp(&mean, &mean_hw, sizeof mean)) << threads << " threads";
          ASSERT_EQ(0, std::memcmp(&rstd, &rstd_hw, sizeof rstd)) << threads << " threads";
        }
        EXPECT_EQ(most_threads_used, 16);  // the row really was cut 16 ways
      }
  }
}

// threads_used says how many threads a call runs on; the hygiene check picks its 2-thread
// partner with it. Each expectation below is one of the rules by which threaded cuts its work.
TEST(Threaded, ThreadsUsedFollowsHowTheWorkIsCut) {
  const Implementation& hw = find_implementation("highway");
  const Implementation& th = find_implementation("threaded");
  const auto used = [&](const Implementation& impl, Norm n, std::int64_t rows, std::int64_t cols, int threads) {
    return threads_used(impl, Problem{n, DType::kF32, rows, cols, default_eps(n)}, RunConfig{threads});
  };
  for (Norm n : {Norm::kLayerNorm, Norm::kRMSNorm}) {
    EXPECT_EQ(used(hw, n, 128, 768, 8), 1);     // no threads at all
    EXPECT_EQ(used(th, n, 128, 768, 1), 1);
    EXPECT_EQ(used(th, n, 128, 768, 2), 2);     // blocks of rows
    EXPECT_EQ(used(th, n, 128, 768, 64), 12);   // at least kMinElementsPerThread each: 98304 / 8192
    EXPECT_EQ(used(th, n, 3, 16384, 8), 3);     // at most one per row
    EXPECT_EQ(used(th, n, 2, 4096, 2), 1);      // 8192 elements: below two threads' minimum
    EXPECT_EQ(used(th, n, 1, 4096, 2), 1);      // a decode row of one chunk runs whole
    EXPECT_EQ(used(th, n, 1, 65537, 8), 1);     // a long row, but under two chunks a thread: whole
    EXPECT_EQ(used(th, n, 1, 163845, 8), 2);    // a long row: two chunks (64K elements) a thread
    EXPECT_EQ(used(th, n, 1, 1 << 20, 8), 8);   // 32 chunks: at most one thread per thread asked
    EXPECT_EQ(used(th, n, 1, 1 << 20, 64), 16); // and at most one per two chunks
    EXPECT_EQ(used(th, n, 1, 33554432, 2), 2);
  }
  Problem group{Norm::kGroupNorm, DType::kF32, 2, 32 * 1024, 1e-5};  // 2 rows of 4 groups: 8 units
  group.groups = 4;
  group.channels = 8;
  EXPECT_EQ(threads_used(th, group, RunConfig{16}), 8);
  Problem batch{Norm::kBatchNorm, DType::kF32, 2, 3 * 8192, 1e-5};  // N = 2, C = 3, L = 8192
  batch.channels = 3;
  EXPECT_EQ(threads_used(th, batch, RunConfig{8}), 3);  // channels first: one channel per thread
  batch.batchnorm.channels_last = true;
  EXPECT_EQ(threads_used(th, batch, RunConfig{8}), 6);  // positions: 49152 elements, 8192 each
}

}  // namespace
}  // namespace normbench::testing
