#include "normbench/cli.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "normbench/error.hpp"

namespace normbench::cli {

std::string shape_name(const Shape& s) {
  if (s.channels_last) return fmt::format("{}x{}x{}:nlc", s.rows, s.cols / s.channels, s.channels);
  return s.channels ? fmt::format("{}x{}x{}", s.rows, s.channels, s.cols / s.channels) : fmt::format("{}x{}", s.rows, s.cols);
}

bool shape_applies(Norm n, const Shape& s) { return !s.channels_last || n == Norm::kBatchNorm; }

std::int64_t default_groups(const Shape& s) { return std::gcd<std::int64_t>(s.channels ? s.channels : s.cols, 32); }

Problem make_problem(Norm n, DType t, const Shape& s, double eps) {
  if (!shape_applies(n, s))
    throw Error(fmt::format("shape {}: the channels-last layout applies to batchnorm only, not {}", shape_name(s),
                            norm_name(n)));
  Problem p{n, t, s.rows, s.cols, eps};
  if (n == Norm::kGroupNorm) {
    p.channels = s.channels;
    p.groups = default_groups(s);
  }
  if (n == Norm::kBatchNorm) {
    p.channels = s.channels;
    p.batchnorm.channels_last = s.channels_last;
  }
  return p;
}

Shape parse_shape(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return Error(fmt::format("malformed shape '{}': {} (expected ROWSxCOLS, NxCxS or NxSxC:nlc, e.g. 128x4096, "
                             "8x64x3136 or 8x3136x64:nlc)", text, why));
  };
  constexpr std::string_view kChannelsLast = ":nlc";
  if (text.ends_with(kChannelsLast)) {  // NxSxC, channels innermost
    const std::string_view body = text.substr(0, text.size() - kChannelsLast.size());
    if (std::count(body.begin(), body.end(), 'x') != 2) throw bad("':nlc' needs the three parts N, S and C");
    const Shape first = parse_shape(body);  // read as N x S x C: channels = S, cols = S * C
    Shape s{first.rows, first.cols, first.cols / first.channels, true};
    return s;
  }
  if (text.find(':') != std::string_view::npos) throw bad("the only layout suffix is ':nlc'");
  const auto x = text.find('x');
  if (x == std::string_view::npos) throw bad("no 'x'");
  Shape s{};
  const auto x2 = text.find('x', x + 1);
  if (x2 != std::string_view::npos) {  // NxCxS
    const Shape head = parse_shape(text.substr(0, x2));        // N x C
    const std::int64_t spatial = parse_shape(text.substr(x + 1)).cols;  // C x S
    s.rows = head.rows;
    s.channels = head.cols;
    if (__builtin_mul_overflow(s.channels, spatial, &s.cols)) throw bad("C*S overflows");
    std::int64_t bytes = 0;
    if (__builtin_mul_overflow(s.rows, s.cols, &bytes) || __builtin_mul_overflow(bytes, std::int64_t{16}, &bytes))
      throw bad("rows*cols overflows");
    return s;
  }
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

std::vector<std::string> split_list(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const std::string& item : items) {
    std::size_t start = 0;
    while (start <= item.size()) {
      const std::size_t comma = item.find(',', start);
      const std::string part = item.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!part.empty()) out.push_back(part);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

std::vector<int> parse_thread_counts(const std::vector<std::string>& items, int most) {
  std::vector<int> threads;
  for (const std::string& t : split_list(items)) {
    // "1, 2" as one argument: the spaces around a number are not part of it.
    const std::size_t first = t.find_first_not_of(' '), last = t.find_last_not_of(' ');
    const std::optional<int> v =
        first == std::string::npos ? std::nullopt : parse_number<int>(std::string_view(t).substr(first, last + 1 - first));
    if (!v || *v < 1 || *v > most)
      throw Error(fmt::format("--threads: '{}' is not a thread count in [1, {}]", t, most));
    threads.push_back(*v);
  }
  return threads;
}

namespace {
volatile std::sig_atomic_t g_stop_signal = 0;
const char* g_stop_note = "";
std::size_t g_stop_note_bytes = 0;  // measured before the handler runs: it calls write() only
extern "C" void on_stop_signal(int signal) {
  g_stop_signal = signal;
  [[maybe_unused]] const auto written = write(STDERR_FILENO, g_stop_note, g_stop_note_bytes);  // async-signal-safe
}
}  // namespace

void stop_on_signal(const char* note) {
  g_stop_note = note;
  g_stop_note_bytes = std::strlen(note);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return g_stop_signal; }
int stop_exit_code() { return g_stop_signal != 0 ? 128 + g_stop_signal : 0; }

}  // namespace normbench::cli
