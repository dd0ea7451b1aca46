#!/usr/bin/env bash
# Packs the Release build to run on another x86-64 Linux machine without a compiler or Debian's
# packages (a machine with more cores, or with AVX-512 where this one has none):
#   ./scripts/bundle.sh [OUT.tar.xz]    default build/bundle/normbench-bundle.tar.xz
# The tarball holds the stripped binaries in their build-tree places, the shared libraries they
# need beyond the C and C++ runtimes (oneDNN, Highway, fmt, Google Benchmark, MPFR, OpenMP, ...),
# and run-tests.sh. On the other machine, in a checkout of the same commit:
#   tar -xJf normbench-bundle.tar.xz && ./bundle/run-tests.sh [SHARDS]
# runs every GoogleTest binary in SHARDS parallel shards (default: the cores) and exits non-zero
# if any test fails; bundle/env.sh sets LD_LIBRARY_PATH for running build/release/bench/normbench
# by hand. The ctest-only checks (scripts/perf_targets.py on the baselines) need Debian's
# python3 and are not run. Tests find their binaries and data at the absolute paths of this
# build; run-tests.sh links that path to the checkout it is run in when the path is free.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;  # the comment above, to its end
  -*) echo "bundle.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
esac
[[ $# -le 1 ]] || { echo "bundle.sh: one output path at most (try --help)" >&2; exit 2; }
out=${1:-build/bundle/normbench-bundle.tar.xz}
build=build/release
# The four tools and every GoogleTest binary the build made (tests/CMakeLists.txt names them).
shopt -s nullglob
test_bins=("$build"/tests/normbench_*tests)
((${#test_bins[@]})) || { echo "bundle.sh: no test binaries in $build/tests: build Release first (./scripts/test.sh)" >&2; exit 1; }
bins=(bench/normbench bench/normbench-team-times accuracy/normbench-accuracy reports/normbench-compare "${test_bins[@]#"$build"/}")
for b in "${bins[@]}"; do
  [[ -x $build/$b ]] || { echo "bundle.sh: $build/$b missing: build Release first (./scripts/test.sh)" >&2; exit 1; }
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bundle/lib"
for b in "${bins[@]}"; do
  mkdir -p "$stage/$build/$(dirname "$b")"
  strip -o "$stage/$build/$b" "$build/$b"
done
# Every library the binaries load except the C/C++ runtime, which any Linux machine has (newer
# versions of it load code built against older ones; the reverse fails, so the other machine's
# glibc and libstdc++ must be at least Debian 12's: 2.36 and GCC 12's).
for b in "${bins[@]}"; do ldd "$build/$b"; done | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  { grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt)\.so' || true; } |
  while read -r lib; do cp -L "$lib" "$stage/bundle/lib/"; done
printf '%s\n' "$PWD" > "$stage/bundle/source-dir"
git rev-parse HEAD > "$stage/bundle/commit" 2>/dev/null || true

cat > "$stage/bundle/env.sh" <<'EOF'
# source bundle/env.sh: the bundled shared libraries first on the loader's path.
export LD_LIBRARY_PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
EOF
cat > "$stage/bundle/run-tests.sh" <<'EOF'
#!/usr/bin/env bash
# Runs every GoogleTest binary of the bundle in parallel shards; exit status 1 if any test fails.
#   bundle/run-tests.sh [SHARDS]    (default: the number of cores)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source bundle/env.sh
shards=${1:-$(nproc)}
[[ $shards =~ ^[1-9][0-9]*$ ]] || { echo "run-tests.sh: SHARDS must be a positive integer, got '$1'" >&2; exit 2; }
src=$(cat bundle/source-dir)
if [[ $src != "$root" ]]; then
  if [[ ! -e $src ]]; then
    mkdir -p "$(dirname "$src")" && ln -s "$root" "$src" && echo "linked $src -> $root (the tests' built-in paths)"
  elif [[ $(cd "$src" && pwd -P) != $(pwd -P) ]]; then
    echo "run-tests.sh: the tests read $src, which is another directory; run from there" >&2; exit 2
  fi
fi
echo "bundle of $(cat bundle/commit 2>/dev/null || echo '?') on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, $shards shards"
logs=$(mktemp -d)
status=0
# summary_count BINARY WORD: sums a GoogleTest summary count ('[  PASSED  ] 61 tests.',
# '[  SKIPPED ] 1 test.') over BINARY's shard logs.
summary_count() {
  cat "$logs/$1".*.log | sed -n "s/^\\[  $2 \\] \\([0-9]*\\) tests\\{0,1\\}[.,].*/\\1/p" | awk '{s += $1} END {print s + 0}'
}
# The kernel and accuracy tests in shards, the small binaries whole; explicit PIDs for wait.
for bin in build/release/tests/normbench_*tests; do
  t=$(basename "$bin")
  n=1
  [[ $t == normbench_tests || $t == normbench_accuracy_tests ]] && n=$shards
  pids=()
  for ((i = 0; i < n; ++i)); do
    GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$i "$bin" --gtest_brief=1 > "$logs/$t.$i.log" 2>&1 &
    pids+=($!)
  done
  failed=0
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  echo "$t: $(summary_count "$t" 'PASSED ') passed, $(summary_count "$t" SKIPPED) skipped$( ((failed)) && echo ', FAILED:')"
  if ((failed)); then
    status=1
    cat "$logs/$t".*.log | grep -E '^\[  FAILED  \]|Failure|^sh: ' | sort -u | head -40
  fi
done
echo "logs in $logs"
exit $status
EOF
chmod +x "$stage/bundle/run-tests.sh"
mkdir -p "$(dirname "$out")"
tar -cf - -C "$stage" . | xz -T0 -9 > "$out"
echo "wrote $out ($(du -h "$out" | cut -f1)); on the other machine, in a checkout of $(git rev-parse --short HEAD 2>/dev/null || echo 'this commit'):"
echo "  tar -xJf $(basename "$out") && ./bundle/run-tests.sh"
