#!/usr/bin/env bash
# A/B benchmark of two commits on a noisy machine.
#   scripts/ab.sh BASE_REF [NEW_REF]      (NEW_REF defaults to HEAD)
# Builds both commits' normbench in separate build trees, runs them interleaved in ABBA order
# (A B, B A, A B, ...) on the same shapes in one job so drift of a shared machine hits both alike,
# then compares the pooled repetitions with normbench-compare (Mann-Whitney U + threshold).
# Environment: AB_ROUNDS (default 5) rounds; AB_ARGS (default "--shapes=quick --benchmark_min_time=0.02")
# normbench arguments for every run; AB_COMPARE_ARGS extra normbench-compare arguments (e.g. --format
# markdown --correction holm); AB_CPUS a CPU list (taskset -c syntax) every run of both sides is pinned to (not the builds).
# Exit code: normbench-compare's (0 no regression, 1 regression, 2 error or nothing compared).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }  # the comment above
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage >&2; exit 2; fi
base_ref=$1
new_ref=${2:-HEAD}
rounds=${AB_ROUNDS:-5}
read -r -a run_args <<< "${AB_ARGS:---shapes=quick --benchmark_min_time=0.02}"
read -r -a compare_args <<< "${AB_COMPARE_ARGS:-}"
# Pinned runs: on a VM whose vCPUs differ in speed (one sharing its core with a busy neighbour),
# unpinned 1-thread runs land on either and their medians mix both speeds.
pin=()
if [ -n "${AB_CPUS:-}" ]; then
  command -v taskset >/dev/null || { echo "ab.sh: AB_CPUS needs taskset (util-linux)" >&2; exit 2; }
  taskset -c "$AB_CPUS" true 2>/dev/null || { echo "ab.sh: AB_CPUS='$AB_CPUS' is not a CPU list this process may use" >&2; exit 2; }
  pin=(taskset -c "$AB_CPUS")
fi

for ref in "$base_ref" "$new_ref"; do
  git rev-parse --verify --quiet "$ref^{commit}" >/dev/null || { echo "ab.sh: '$ref' is not a commit" >&2; exit 2; }
done

./scripts/bootstrap.sh
work=$(mktemp -d /tmp/normbench-ab.XXXXXX)
cleanup() {
  git worktree remove --force "$work/A" 2>/dev/null || true
  git worktree remove --force "$work/B" 2>/dev/null || true
}
trap cleanup EXIT

build() {  # build <ref> <dir>: a worktree of ref, built Release without tests
  git worktree add --detach --quiet "$2" "$1"
  cmake -S "$2" -B "$2/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNORMBENCH_BUILD_TESTS=OFF >/dev/null
  cmake --build "$2/build" -j "$(nproc)" --target normbench "${@:3}" >/dev/null
  echo "built $1 ($(git rev-parse --short "$1")) in $2/build"
}
echo "== building A = $base_ref and B = $new_ref =="
build "$base_ref" "$work/A"
build "$new_ref" "$work/B" normbench-compare

a_reports=() b_reports=()
for i in $(seq 1 "$rounds"); do
  # ABBA order: A B, B A, A B, ... so a systematic "second run is slower" effect cancels too.
  order="A B"
  [ $((i % 2)) -eq 0 ] && order="B A"
  for side in $order; do
    report="$work/$side-$i.csv"
    echo "== round $i/$rounds: $side =="
    "${pin[@]}" "$work/$side/build/bench/normbench" "${run_args[@]}" --benchmark_repetitions=2 --report "$report" >/dev/null
    if [ "$side" = A ]; then a_reports+=("$report"); else b_reports+=("$report"); fi
  done
done

join() { local IFS=,; echo "$*"; }
echo "== A = $base_ref vs B = $new_ref, $rounds interleaved rounds =="
set +e
"$work/B/build/reports/normbench-compare" "$(join "${a_reports[@]}")" "$(join "${b_reports[@]}")" "${compare_args[@]}"
status=$?
set -e
mkdir -p reports/out
cp "$work"/A-*.csv "$work"/B-*.csv reports/out/ 2>/dev/null || true
echo "per-round reports copied to reports/out/ (A-*.csv, B-*.csv)"
exit $status
