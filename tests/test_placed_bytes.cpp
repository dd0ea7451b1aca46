// PlacedBytes (bench/placed_bytes.hpp): the buffers normbench, normbench-team-times and the
// backward-walk test place at fixed page offsets. A wrong offset would time the kernels under
// 4K aliasing or split vectors without anyone noticing, so the placement itself is checked here.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <gtest/gtest.h>

#include "placed_bytes.hpp"

namespace normbench::testing {
namespace {

std::uintptr_t address(const unsigned char* p) { return reinterpret_cast<std::uintptr_t>(p); }

TEST(PlacedBytes, StartsAtItsPageOffsetZeroedAndWritableToItsEnd) {
  for (std::size_t offset : {std::size_t{0}, std::size_t{64}, bench::kYPageOffset, std::size_t{4032}})
    for (std::size_t n : {std::size_t{1}, std::size_t{4096}, std::size_t{10000}}) {
      SCOPED_TRACE(::testing::Message() << n << " bytes at page offset " << offset);
      bench::PlacedBytes b;
      EXPECT_TRUE(b.empty());
      b.assign(n, offset, false);
      ASSERT_FALSE(b.empty());
      ASSERT_EQ(n, b.size());
      EXPECT_EQ(offset, address(b.data()) % bench::kPage);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(0, b.data()[i]) << "byte " << i;
      std::memset(b.data(), 0xA5, n);  // out of bounds would be caught by ASan
      EXPECT_EQ(0xA5, b.data()[n - 1]);
    }
}

TEST(PlacedBytes, AssignAgainReplacesTheBufferZeroedAtTheNewOffset) {
  bench::PlacedBytes b;
  b.assign(8192, 0, false);
  std::memset(b.data(), 0xFF, 8192);
  b.assign(5000, bench::kYPageOffset, false);
  EXPECT_EQ(5000u, b.size());
  EXPECT_EQ(bench::kYPageOffset, address(b.data()) % bench::kPage);
  for (std::size_t i = 0; i < 5000; ++i) ASSERT_EQ(0, b.data()[i]) << "byte " << i;
}

// With huge pages asked for, a buffer of 2 MiB or more starts on a huge page's boundary (before
// its offset), so that the kernel may back it with transparent huge pages; smaller ones on a page.
TEST(PlacedBytes, HugePagesAlignBuffersOfTwoMiBOrMore) {
  bench::PlacedBytes big, small;
  big.assign(bench::kHugePage, bench::kYPageOffset, true);
  EXPECT_EQ(bench::kYPageOffset, address(big.data()) % bench::kHugePage);
  small.assign(bench::kHugePage / 4, bench::kYPageOffset, true);
  EXPECT_EQ(bench::kYPageOffset, address(small.data()) % bench::kPage);
}

// The offsets normbench uses: y as far from x within a page as it can be, gamma and beta at x's
// (placed_bytes.hpp says why), the residual-add arrays a quarter page past each.
TEST(PlacedBytes, NormbenchOffsetsKeepYHalfAPageFromXAndGamma) {
  EXPECT_EQ(bench::kPage / 2, (bench::kYPageOffset - bench::kXPageOffset) % bench::kPage);
  EXPECT_EQ(bench::kXPageOffset, bench::kParamPageOffset);
  EXPECT_EQ(bench::kPage / 4, (bench::kResidualPageOffset - bench::kXPageOffset) % bench::kPage);
  EXPECT_EQ(bench::kPage / 4, (bench::kHPageOffset - bench::kYPageOffset) % bench::kPage);
}

}  // namespace
}  // namespace normbench::testing
