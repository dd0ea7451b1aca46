#include "shapes.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "normbench/error.hpp"

namespace normbench::bench {

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

// GroupNorm/BatchNorm (N, C, HW) of CNNs and diffusion UNets: Stable Diffusion's UNet at 64x64,
// 32x32 and 16x16 latents (C 320, 640, 1280, batch 2), ResNet-50 stages at 56x56 and 28x28
// (batch 8); the ResNet-50 stages again channels last (N, HW, C), BatchNorm's NHWC (PyTorch's
// channels_last memory format). LayerNorm/RMSNorm read the channels-first ones as
// normalized_shape (C, HW).
std::vector<Shape> cnn() {
  std::vector<Shape> v;
  for (auto [n, c, hw] : {std::array<std::int64_t, 3>{2, 320, 4096}, {2, 640, 1024}, {2, 1280, 256},
                          {8, 64, 3136}, {8, 256, 784}})
    v.push_back({n, c * hw, c});
  for (auto [n, c, hw] : {std::array<std::int64_t, 3>{8, 64, 3136}, {8, 256, 784}}) v.push_back({n, c * hw, c, true});
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
  if (name == "quick")
    return {{1, 4096}, {64, 768}, {128, 4096}, {512, 4096}, {2, 64 * 1024, 64}, {8, 784 * 64, 64, true}};
  if (name == "cnn") return cnn();
  if (name == "transformer") return transformer();
  if (name == "cache-sweep") return cache_sweep();
  if (name == "odd") return odd();
  if (name == "full") {
    std::vector<Shape> v;
    for (std::string_view set : {"transformer", "cache-sweep", "odd", "cnn"})
      for (Shape s : shape_set(set)) add_unique(v, s);
    return v;
  }
  throw Error(fmt::format("unknown shape set '{}' (expected quick, transformer, cache-sweep, odd, cnn or full)", name));
}

}  // namespace normbench::bench
