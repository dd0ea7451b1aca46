// threaded must equal highway bit for bit, for every thread count and every SIMD target.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "test_support.hpp"

namespace normbench::testing {
namespace {

TEST(Threaded, BitwiseEqualToHighwayForEveryThreadCount) {
  const Implementation& hw = find_implementation("highway");
  const Implementation& th = find_implementation("threaded");
  // Rows >= threads split by rows; fewer, long rows split into fixed chunks (several chunks of
  // 32K plus a ragged tail) merged in order.
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

}  // namespace
}  // namespace normbench::testing
