#!/usr/bin/env bash
# Installs missing packages, builds (Release), and runs every test through ctest.
#   ./scripts/test.sh           Release build in build/release
#   ./scripts/test.sh --asan    AddressSanitizer + UndefinedBehaviorSanitizer build in build/asan
set -euo pipefail
cd "$(dirname "$0")/.."

preset=release
case "${1:-}" in
  "") ;;
  --asan) preset=asan ;;
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;  # the comment above, to its end
  *) echo "test.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
esac

./scripts/bootstrap.sh
jobs=$(nproc)
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
# Sanitizers: fail on the first report; leak checking on.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --preset "$preset" -j "$jobs"
