#!/usr/bin/env bash
# Installs the Debian packages normbench needs, and only those that are missing.
# Idempotent: a second run installs nothing and takes about a second.
#   ./scripts/bootstrap.sh      install what is missing (as root, or through sudo)
# bench.sh, test.sh and ab.sh run it first.
set -euo pipefail

case "${1:-}" in
  "") ;;
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;  # the comment above, to its end
  *) echo "bootstrap.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
esac

PACKAGES=(
  build-essential cmake ninja-build git pkg-config
  libhwy-dev          # Highway 1.0.3: SIMD + dynamic dispatch
  libbenchmark-dev    # Google Benchmark
  libgtest-dev        # GoogleTest
  libfmt-dev          # fmt
  libfccp-dev         # fast-cpp-csv-parser (header-only)
  libcli11-dev        # CLI11 (header-only)
  libmpfr-dev         # MPFR: checks the long-double reference
  libdnnl-dev         # oneDNN 2.6: optional peer in the benchmark
  python3-matplotlib python3-numpy   # plots (use /usr/bin/python3, not pyenv's)
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "bootstrap: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "bootstrap: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "bootstrap: done"
