// Command-line helpers shared by the normbench binaries.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "normbench/normbench.hpp"

namespace normbench::cli {

// rows x cols, or from "NxCxS" rows = N, channels = C, cols = C*S: GroupNorm's (N, C, HW)
// input, and for LayerNorm/RMSNorm a normalized_shape of two axes (C, S) (channels then unused).
struct Shape {
  std::int64_t rows;
  std::int64_t cols;
  std::int64_t channels = 0;  // 0: a two-part shape
  bool channels_last = false;  // (N, S, C) with C innermost: BatchNorm's NHWC
  bool operator==(const Shape&) const = default;
};

std::string shape_name(const Shape& s);  // "128x4096", "8x64x3136", or channels last "8x3136x64:nlc"

// Parses "RxC", "NxCxS" (channels first) or "NxSxC:nlc" (channels last, BatchNorm only) with every
// part >= 1 and rows*cols*16 addressable; throws normbench::Error with the reason.
Shape parse_shape(std::string_view text);

// Whether norm n is defined on shape s (the channels-last layout is BatchNorm's only).
bool shape_applies(Norm n, const Shape& s);

// GroupNorm's groups for a shape: gcd(channels, 32) (32 is the common choice, as in
// torch.nn.GroupNorm(32, C) of ResNets and diffusion UNets; fewer where 32 does not divide C).
std::int64_t default_groups(const Shape& s);
// The problem of a norm on a shape: GroupNorm gets channels (a two-part shape: C = cols, one
// spatial position) and default_groups; BatchNorm channels and the layout (training mode,
// momentum 0.1). Throws Error when !shape_applies(n, s).
Problem make_problem(Norm n, DType t, const Shape& s, double eps);

// Splits every item at commas ("a,b" "c" -> a b c), dropping empty parts.
std::vector<std::string> split_list(const std::vector<std::string>& items);

// The number that is the whole of text (no spaces, nothing after it; no sign for unsigned T), or
// nothing where text is not one or lies outside T's range.
template <class T>
std::optional<T> parse_number(std::string_view text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The thread counts of --threads items (comma lists), in order; throws Error naming the first
// that is not an integer in [1, most].
std::vector<int> parse_thread_counts(const std::vector<std::string>& items, int most);

// SIGINT (Ctrl-C) and SIGTERM during a long run: the first sets a flag that the run polls between
// units of work (a benchmark pass, an accuracy case), after printing `note` to stderr; the run
// then writes the report of the units that finished and exits 128 + the signal, as the shell
// reports a process the signal ended. A second signal ends the process at once (SA_RESETHAND).
// `note` must outlive the run (a string literal).
void stop_on_signal(const char* note);
int stop_signal();  // 0, or the first signal received since stop_on_signal
int stop_exit_code();  // 128 + stop_signal() (the shell's code for a process a signal ended), or 0

}  // namespace normbench::cli
