#include "shapes.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

#include <fmt/format.h>

#include "normbench/error.hpp"

namespace normbench::bench {

std::string shape_name(const Shape& s) { return fmt::format("{}x{}", s.rows, s.cols); }

Shape parse_shape(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return Error(fmt::format("malformed shape '{}': {} (expected ROWSxCOLS, e.g. 128x4096)", text, why));
  };
  const auto x = text.find('x');
  if (x == std::string_view::npos) throw bad("no 'x'");
  Shape s{};
  const auto parse = [&](std::string_view part, std::int64_t& out, const char* what) {
    if (part.empty()) throw bad(fmt::format("{} is missing", what));
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), out);
    if (ec == std::errc::result_out_of_range) throw bad(fmt::format("{} is too large", what));
    if (ec != std::errc() || ptr != part.data() + part.size()) throw bad(fmt::format("{} is not an integer", what));
    if (out < 1) throw bad(fmt::format("{} must be at least 1", what));
  };
  parse(text.substr(0, x), s.rows, "rows");
  parse(text.substr(x + 1), s.cols, "cols");
  std::int64_t bytes = 0;  // x and y of the widest dtype (f64)
  if (__builtin_mul_overflow(s.rows, s.cols, &bytes) || __builtin_mul_overflow(bytes, std::int64_t{16}, &bytes))
    throw bad("rows*cols overflows");
  return s;
}

namespace {
void add_unique(std::vector<Shape>& v, Shape s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

std::vector<Shape> transformer() {
  std::vector<Shape> v;
  for (std::int64_t tokens : {1, 128, 2048})
    for (std::int64_t hidden : {768, 1024, 2048, 4096, 5120, 8192, 16384}) v.push_back({tokens, hidden});
  return v;
}

// Working set (f32 x + y) from 16 KiB to 512 MiB in x2 steps, at cols 768 and 4096.
std::vector<Shape> cache_sweep() {
  std::vector<Shape> v;
  for (std::int64_t cols : {768, 4096})
    for (std::int64_t ws = 16 << 10; ws <= (std::int64_t{512} << 20); ws *= 2) {
      const std::int64_t rows = (ws + 4 * cols) / (8 * cols);  // nearest whole row
      if (rows >= 1) add_unique(v, {rows, cols});
    }
  return v;
}

std::vector<Shape> odd() {
  std::vector<Shape> v;
  for (std::int64_t rows : {1, 128})
    for (std::int64_t cols : {1000, 1025, 4097, 65537}) v.push_back({rows, cols});
  v.push_back({1, 33554432});  // benchdnn's huge single row
  return v;
}
}  // namespace

std::vector<Shape> shape_set(std::string_view name) {
  if (name == "quick") return {{1, 4096}, {64, 768}, {128, 4096}, {512, 4096}};
  if (name == "transformer") return transformer();
  if (name == "cache-sweep") return cache_sweep();
  if (name == "odd") return odd();
  if (name == "full") {
    std::vector<Shape> v;
    for (std::string_view set : {"transformer", "cache-sweep", "odd"})
      for (Shape s : shape_set(set)) add_unique(v, s);
    return v;
  }
  throw Error(fmt::format("unknown shape set '{}' (expected quick, transformer, cache-sweep, odd or full)", name));
}

}  // namespace normbench::bench
