// Bad input gets a normbench::Error naming the problem, before anything is written; NaN stays
// in its row; constant rows give beta.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "normbench/simd_convert.hpp"
#include "peers.hpp"
#include "test_support.hpp"

namespace normbench::testing {
namespace {

constexpr float kSentinel = 12345.0f;

class BadInput : public ::testing::TestWithParam<const Implementation*> {
 protected:
  // Expects forward() to throw an Error whose message contains `needle`, leaving y untouched.
  void expect_rejected(const Problem& p, const Buffers& b, const std::string& needle, RunConfig cfg = {}) {
    expect_error_mentioning([&] { forward(*GetParam(), p, b, cfg); }, needle);
    for (float v : y_) ASSERT_EQ(v, kSentinel) << "output written before the error";
  }
  std::vector<float> x_ = std::vector<float>(64, 1.0f), y_ = std::vector<float>(64, kSentinel);
  Problem p_{Norm::kLayerNorm, DType::kF32, 4, 16, 1e-5};
  Buffers b() { return Buffers{x_.data(), y_.data(), nullptr, nullptr, nullptr, nullptr}; }
};

TEST_P(BadInput, ZeroOrNegativeCols) {
  Problem p = p_;
  p.cols = 0;
  expect_rejected(p, b(), "cols must be at least 1");
  p.cols = -3;
  expect_rejected(p, b(), "cols must be at least 1");
}

TEST_P(BadInput, NegativeRows) {
  Problem p = p_;
  p.rows = -1;
  expect_rejected(p, b(), "rows must be non-negative");
}

TEST_P(BadInput, NullBuffers) {
  Buffers bx = b();
  bx.x = nullptr;
  expect_rejected(p_, bx, "x is null");
  Buffers by = b();
  by.y = nullptr;
  expect_rejected(p_, by, "y is null");
}

TEST_P(BadInput, NegativeNanOrInfiniteEps) {
  for (double eps : {-1e-5, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    Problem p = p_;
    p.eps = eps;
    expect_rejected(p, b(), "eps must be a finite number >= 0");
  }
}

TEST_P(BadInput, SizeOverflow) {
  Problem p = p_;
  p.rows = std::int64_t{1} << 40;
  p.cols = std::int64_t{1} << 40;
  expect_rejected(p, b(), "overflows");
  p.rows = std::int64_t{1} << 31;  // elements fit, bytes do not
  p.cols = std::int64_t{1} << 31;
  expect_rejected(p, b(), "overflows");
}

TEST_P(BadInput, InvalidEnumsAndThreadCounts) {
  Problem p = p_;
  p.dtype = static_cast<DType>(42);
  expect_rejected(p, b(), "invalid dtype");
  p = p_;
  p.norm = static_cast<Norm>(42);
  expect_rejected(p, b(), "invalid norm");
  expect_rejected(p_, b(), "threads must be in", RunConfig{0});
  expect_rejected(p_, b(), "threads must be in", RunConfig{kMaxThreads + 1});
}

TEST_P(BadInput, MisalignedAndOverlappingBuffers) {
  Buffers bm = b();
  bm.x = reinterpret_cast<const unsigned char*>(x_.data()) + 1;
  expect_rejected(p_, bm, "x is not aligned");
  std::vector<float> xy(80, 1.0f);
  Buffers bo = b();
  bo.x = xy.data();
  bo.y = xy.data() + 8;  // partial overlap is not in-place
  expect_error_mentioning([&] { forward(*GetParam(), p_, bo); }, "overlaps");
}

// Every offset that is not a multiple of the element size, for every buffer and dtype: the check
// is a mask (element sizes are powers of two), which a wrong mask would pass at some offsets
// (x + 1 byte alone passes `& align`, f64's x + 4 bytes passes `& 3`).
TEST_P(BadInput, EveryMisalignmentOfEveryBufferIsRejected) {
  const Implementation& impl = *GetParam();
  const auto n = std::find_if(impl.norms.begin(), impl.norms.end(),
                              [](Norm m) { return m == Norm::kLayerNorm || m == Norm::kRMSNorm; });
  if (n == impl.norms.end()) GTEST_SKIP() << impl.name << " has no row norm";
  alignas(64) static unsigned char x[256], gamma[128], beta[128];
  for (DType t : impl.dtypes) {
    const Problem p{*n, t, 2, 8, 1e-5};
    const std::size_t element = dtype_size(t), param = dtype_size(param_dtype(t));
    const auto base = [&] { return Buffers{x, y_.data(), gamma, beta, nullptr, nullptr}; };
    EXPECT_NO_THROW(forward(impl, p, base())) << dtype_name(t);
    std::fill(y_.begin(), y_.end(), kSentinel);
    for (std::size_t off = 1; off < std::max(element, param); ++off) {
      SCOPED_TRACE(fmt::format("{} {} offset {}", norm_name(*n), dtype_name(t), off));
      if (off < element) {
        Buffers bx = base();
        bx.x = x + off;
        expect_rejected(p, bx, "x is not aligned");
        Buffers by = base();
        by.y = reinterpret_cast<unsigned char*>(y_.data()) + off;
        expect_rejected(p, by, "y is not aligned");
      }
      if (off < param) {
        Buffers bg = base();
        bg.gamma = gamma + off;
        expect_rejected(p, bg, "gamma is not aligned");
        Buffers bb = base();
        bb.beta = beta + off;
        expect_rejected(p, bb, "beta is not aligned");
      }
    }
  }
}

TEST_P(BadInput, ZeroRowsIsANoOpEvenWithNullBuffers) {
  Problem p = p_;
  p.rows = 0;
  EXPECT_NO_THROW(forward(*GetParam(), p, Buffers{}));
}

TEST_P(BadInput, NanStaysInItsRow) {
  for (Norm n : GetParam()->norms)
    for (DType t : GetParam()->dtypes) {
      if (n == Norm::kBatchNorm) continue;  // its NaN stays in its channel: test_batchnorm.cpp
      SCOPED_TRACE(fmt::format("{} {}", norm_name(n), dtype_name(t)));
      const Problem p{n, t, 5, 33, default_eps(n)};
      Inputs in(p, true, true);
      fill_inputs(in, 7);
      store_rounded(t, in.x.data(), 2 * 33 + 17, std::numeric_limits<long double>::quiet_NaN());
      Buffer y(5 * 33, dtype_size(t));
      forward(*GetParam(), p, in.buffers(y.data()));
      for (std::int64_t r = 0; r < 5; ++r)
        for (std::int64_t i = 0; i < 33; ++i)
          ASSERT_EQ(std::isnan(load_as_long_double(t, y.data(), r * 33 + i)), r == 2) << r << "," << i;
    }
}

// A constant row has variance 0 and LayerNorm returns beta. With a dyadic constant every sum is
// exact, so every implementation must return beta bit for bit. For 0.1 (inexact sums), the
// families whose mean is exact by construction (Welford's update; Highway's shift by the first
// element) must too; the others only within the general error bound (tested in KernelMatrix).
TEST_P(BadInput, ConstantRowGivesBeta) {
  const Implementation& impl = *GetParam();
  const bool exact_mean_by_construction =
      impl.family == "welford" || impl.family == "highway" || impl.family == "threaded";
  if (!impl.supports(Norm::kLayerNorm, DType::kF32)) GTEST_SKIP() << "no LayerNorm";
  for (DType t : impl.dtypes)
    for (double c : {1.5, -3.25, 0.1}) {
      if (c == 0.1 && !exact_mean_by_construction) continue;
      for (std::int64_t cols : {1, 7, 768, 4097}) {
        SCOPED_TRACE(fmt::format("{} c={} cols={}", dtype_name(t), c, cols));
        const Problem p{Norm::kLayerNorm, t, 3, cols, 1e-5};
        Inputs in(p, true, true);
        fill_inputs(in, 3);
        for (std::int64_t i = 0; i < 3 * cols; ++i) store_rounded(t, in.x.data(), i, c);
        Buffer y(3 * cols, dtype_size(t));
        forward(impl, p, in.buffers(y.data()));
        for (std::int64_t i = 0; i < 3 * cols; ++i)
          ASSERT_EQ(load_as_long_double(t, y.data(), i),
                    round_to_dtype(t, load_as_long_double(param_dtype(t), in.beta.data(), i % cols)))
              << i;
      }
    }
}

std::vector<const Implementation*> all_impls() {
  std::vector<const Implementation*> v;
  peers::register_all();  // peers (oneDNN) are held to the same standard
  for (const Implementation& impl : registry()) v.push_back(&impl);
  return v;
}
INSTANTIATE_TEST_SUITE_P(AllImplementations, BadInput, ::testing::ValuesIn(all_impls()),
                         [](const auto& info) { return sanitize(std::string(info.param->name)); });

TEST(Registry, UnsupportedDtypeIsRejected) {
  const Implementation& hw = find_implementation("highway");
  Implementation f32_only = hw;
  f32_only.dtypes = {DType::kF32};
  std::vector<std::uint16_t> x(16), y(16);
  const Problem p{Norm::kLayerNorm, DType::kBF16, 1, 16, 1e-5};
  expect_error_mentioning([&] { forward(f32_only, p, Buffers{x.data(), y.data()}); },
                          "does not support layernorm with dtype bf16");
}

TEST(Registry, UnknownNamesAreRejected) {
  EXPECT_THROW(find_implementation("nope"), Error);
  EXPECT_THROW(parse_dtype("fp8"), Error);
  EXPECT_THROW(parse_norm("batchnorm2"), Error);
  EXPECT_EQ(parse_dtype("bf16"), DType::kBF16);
  EXPECT_EQ(parse_norm("rmsnorm"), Norm::kRMSNorm);
}

// The entry points outside forward() check their buffers as forward() does, before writing
// anything: the Highway code behind them dereferences them as typed, aligned elements.
TEST(EntryPoints, ConversionsAndAddRejectNullAndMisalignedBuffers) {
  constexpr std::size_t n = 16;
  constexpr std::uint8_t kUntouched = 0xA5;
  alignas(8) std::uint8_t in[8 * n + 8], out[8 * n + 8];
  std::fill(std::begin(in), std::end(in), std::uint8_t{0});
  const auto expect_rejected = [&](const auto& call, const std::string& needle) {
    std::fill(std::begin(out), std::end(out), kUntouched);
    expect_error_mentioning(call, needle);
    for (std::uint8_t v : out) ASSERT_EQ(v, kUntouched) << "output written before the error (" << needle << ")";
  };
  const auto* in_f32 = reinterpret_cast<const float*>(in);
  auto* out_f32 = reinterpret_cast<float*>(out);
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
    SCOPED_TRACE(dtype_name(t));
    expect_rejected([&] { simd_store_rounded(t, static_cast<const float*>(nullptr), out, n); }, "null buffer");
    expect_rejected([&] { simd_store_rounded(t, in_f32, nullptr, n); }, "null buffer");
    expect_rejected([&] { simd_store_rounded(t, static_cast<const double*>(nullptr), out, n); }, "null buffer");
    expect_rejected([&] { simd_load_widened(t, nullptr, out_f32, n); }, "null buffer");
    expect_rejected([&] { simd_load_widened(t, in, nullptr, n); }, "null buffer");
    expect_rejected([&] { add_rounded(t, nullptr, in, out, n); }, "null buffer");
    // One byte off: misaligned for every element size here.
    expect_rejected([&] { simd_store_rounded(t, reinterpret_cast<const float*>(in + 1), out, n); }, "input is not aligned");
    expect_rejected([&] { simd_store_rounded(t, in_f32, out + 1, n); }, "output is not aligned");
    expect_rejected([&] { simd_store_rounded(t, reinterpret_cast<const double*>(in + 4), out, n); }, "input is not aligned");
    expect_rejected([&] { simd_load_widened(t, in + 1, out_f32, n); }, "input is not aligned");
    expect_rejected([&] { simd_load_widened(t, in, reinterpret_cast<float*>(out + 2), n); }, "output is not aligned");
    expect_rejected([&] { add_rounded(t, in + 1, in, out, n); }, "x is not aligned");
    expect_rejected([&] { add_rounded(t, in, in + 1, out, n); }, "residual is not aligned");
    expect_rejected([&] { add_rounded(t, in, in, out + 1, n); }, "h is not aligned");
    // Nothing to convert: null buffers are fine, as forward() takes zero rows.
    EXPECT_NO_THROW(simd_store_rounded(t, static_cast<const float*>(nullptr), nullptr, 0));
    EXPECT_NO_THROW(simd_load_widened(t, nullptr, nullptr, 0));
    EXPECT_NO_THROW(add_rounded(t, nullptr, nullptr, nullptr, 0));
    // Aligned buffers pass and are written.
    std::fill(std::begin(out), std::end(out), kUntouched);
    simd_store_rounded(t, in_f32, out, n);
    EXPECT_EQ(out[0], 0) << "an aligned conversion of zeros wrote nothing";
  }
}

// A shifted h would be computed from inputs a previous vector's store had already overwritten
// (a silent wrong sum), and a conversion in place reads values it has written at another width:
// both are rejected before anything is written. h == x and h == residual are elementwise and fine.
TEST(EntryPoints, AddAndConversionsRejectOverlappingBuffers) {
  constexpr std::size_t n = 64;
  std::vector<float> buf(3 * n), r(n, 0.5f);
  const auto reset = [&] {
    for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i);
  };
  const auto expect_rejected = [&](const auto& call, const std::string& needle) {
    reset();
    const std::vector<float> before = buf;
    expect_error_mentioning(call, needle);
    ASSERT_EQ(buf, before) << "buffer written before the error (" << needle << ")";
  };
  float* x = buf.data();
  for (std::size_t shift : {std::size_t{1}, std::size_t{8}, n - 1}) {
    SCOPED_TRACE(fmt::format("shift {}", shift));
    expect_rejected([&] { add_rounded(DType::kF32, x, r.data(), x + shift, n); }, "h partially overlaps");
    expect_rejected([&] { add_rounded(DType::kF32, x + shift, r.data(), x, n); }, "h partially overlaps");
    expect_rejected([&] { add_rounded(DType::kF32, r.data(), x, x + shift, n); }, "h partially overlaps");
    expect_rejected([&] { simd_store_rounded(DType::kBF16, x, x + shift, n); }, "input and output overlap");
    expect_rejected([&] { simd_load_widened(DType::kBF16, x + shift, x, n); }, "input and output overlap");
  }
  // residual partly over x while h is one of them: h's stores would overwrite residual values
  // before they are read. As forward() does, add_rounded rejects residual partially overlapping x.
  expect_rejected([&] { add_rounded(DType::kF32, x + 1, x, x + 1, n); }, "residual partially overlaps x");
  expect_rejected([&] { add_rounded(DType::kF32, x + 1, x, x, n); }, "residual partially overlaps x");
  expect_rejected([&] { add_rounded(DType::kF32, x, x + 1, x + 2 * n, n); }, "residual partially overlaps x");
  // Each range counts its own element size: f32 -> bf16 writes 2n bytes, so an input n/4 floats
  // past the output overlaps the output's second half, and one n/2 floats past only touches it.
  expect_rejected([&] { simd_store_rounded(DType::kBF16, x + n / 4, x, n); }, "input and output overlap");
  reset();
  EXPECT_NO_THROW(simd_store_rounded(DType::kBF16, x + n / 2, x, n));
  expect_rejected([&] { simd_store_rounded(DType::kF32, x, x, n); }, "input and output overlap");
  // Adjacent, not overlapping: accepted, and the conversion is exact for these small integers.
  reset();
  EXPECT_NO_THROW(simd_store_rounded(DType::kF32, x, x + n, n));
  EXPECT_EQ(buf[n + 5], 5.0f);
  // In place on either operand: accepted and elementwise (x[i] + 0.5 is exact here).
  for (int in_place_on : {0, 1}) {
    reset();
    std::vector<float> other(n, 0.5f);
    float* h = in_place_on == 0 ? x : other.data();
    add_rounded(DType::kF32, x, other.data(), h, n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(h[i], static_cast<float>(i) + 0.5f) << "i = " << i;
  }
}

}  // namespace
}  // namespace normbench::testing
