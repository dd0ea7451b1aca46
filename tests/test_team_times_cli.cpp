// normbench-team-times end to end: one line per runner and thread count whose medians hang
// together (a call lasts at least as long as any of its parts), threads that do no work finish
// far sooner than threads that do, more threads than CPUs are warned of, and bad input exits 2.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "affinity.hpp"
#include "cli_support.hpp"

namespace normbench::testing {
namespace {

CommandResult run_team_times(const std::string& args) {
  return run_command(fmt::format("{} {} 2>&1", NORMBENCH_TEAM_TIMES_BIN, args));
}

struct Line {
  std::string runner;
  int threads = 0;
  double call = 0, last_start = 0, longest_work = 0, return_after = 0;
  std::vector<double> start_by_worker, work_by_thread;
};

// The table's rows (not the '#' line, the header, or a warning on stderr).
std::vector<Line> parse(const std::string& output) {
  std::vector<Line> lines;
  std::istringstream in(output);
  std::string text;
  while (std::getline(in, text)) {
    if (text.empty() || text[0] == '#' || text.rfind("runner", 0) == 0 ||
        text.rfind("normbench-team-times: warning:", 0) == 0)
      continue;
    std::istringstream fields(text);
    Line l;
    fields >> l.runner >> l.threads >> l.call >> l.last_start >> l.longest_work >> l.return_after;
    if (!fields) {
      ADD_FAILURE() << "unreadable line: " << text;
      continue;
    }
    for (double s; fields >> s;) l.start_by_worker.push_back(s);
    fields.clear();
    std::string bar;
    if (!(fields >> bar) || bar != "|") {
      ADD_FAILURE() << "no '|' before the work by thread: " << text;
      continue;
    }
    for (double w; fields >> w;) l.work_by_thread.push_back(w);
    lines.push_back(l);
  }
  return lines;
}

TEST(TeamTimesCli, OneLinePerRunnerAndThreadCountWhoseTimesHangTogether) {
  // "2, 3": a comma list with a space, as one argument.
  const CommandResult r = run_team_times("--shape 64x768 --threads '2, 3' --calls 300");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<Line> lines = parse(r.output);
  ASSERT_EQ(lines.size(), 4u) << r.output;
  const std::pair<int, std::string> expected[] = {{2, "team"}, {2, "openmp"}, {3, "team"}, {3, "openmp"}};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const Line& l = lines[i];
    SCOPED_TRACE(fmt::format("{} {} threads", l.runner, l.threads));
    EXPECT_EQ(l.threads, expected[i].first);
    EXPECT_EQ(l.runner, expected[i].second);
    EXPECT_EQ(l.start_by_worker.size(), static_cast<std::size_t>(l.threads - 1));
    // Per call, each part lies within the call, so the medians keep the order too.
    EXPECT_GE(l.call, l.last_start);
    EXPECT_GE(l.call, l.longest_work);
    EXPECT_GE(l.call, l.return_after);
    EXPECT_GT(l.longest_work, 0);
    for (double s : l.start_by_worker) {
      EXPECT_GE(s, 0);
      EXPECT_LE(s, l.last_start);
    }
    // The longest part of each call is at least each thread's part of it: so are their medians.
    ASSERT_EQ(l.work_by_thread.size(), static_cast<std::size_t>(l.threads));
    for (double w : l.work_by_thread) {
      EXPECT_GT(w, 0);
      EXPECT_LE(w, l.longest_work);
    }
  }
}

// 64x768 LayerNorm on two threads is microseconds of work each; an empty thread's part, two
// clock reads, is tens of ns.
TEST(TeamTimesCli, EmptyThreadsWorkFarLessThanThreadsThatNormalize) {
  const CommandResult work = run_team_times("--shape 64x768 --threads 2 --runner team --calls 300");
  const CommandResult empty = run_team_times("--shape 64x768 --threads 2 --runner team --calls 300 --empty");
  ASSERT_EQ(work.exit_code, 0) << work.output;
  ASSERT_EQ(empty.exit_code, 0) << empty.output;
  const std::vector<Line> w = parse(work.output), e = parse(empty.output);
  ASSERT_EQ(w.size(), 1u);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_LT(e[0].longest_work * 10, w[0].longest_work);
  EXPECT_NE(empty.output.find("(empty threads)"), std::string::npos);
}

// More threads than CPUs measures time-slicing: said on stderr, and the run still completes.
TEST(TeamTimesCli, WarnsWhenThreadsOutnumberTheCpus) {
  const int cpus = static_cast<int>(allowed_cpus().size());  // what the tool's omp_get_num_procs() counts
  const CommandResult r =
      run_team_times(fmt::format("--threads {} --calls 20 --runner team --empty", cpus + 1));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(fmt::format("warning: {} threads on {} CPUs", cpus + 1, cpus)), std::string::npos)
      << r.output;
  EXPECT_EQ(parse(r.output).size(), 1u) << r.output;
}

TEST(TeamTimesCli, BadInputExitsTwoWithTheReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"--threads 0", "--threads: '0'"},
      {"--threads 2,x", "--threads: 'x'"},
      {"--runner tbb", "--runner: 'tbb'"},
      {"--shape 2x3x4", "--shape: '2x3x4' is not RxC"},
      {"--shape 0x8", "shape"},
      {"--norm batchnorm", "--norm: 'batchnorm'"},
      {"--calls 0", "--calls: 0"},
      {"--calls 99999999999", "--calls"},  // beyond an int: CLI11's own error, once exit 104
      {"--nonsense", "--nonsense"},
  };
  for (const auto& [args, reason] : cases) {
    SCOPED_TRACE(args);
    const CommandResult r = run_team_times(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(reason), std::string::npos) << r.output;
  }
}

TEST(TeamTimesCli, HelpExitsZero) {
  const CommandResult r = run_team_times("--help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("where a multithreaded call's time goes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--empty"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace normbench::testing
