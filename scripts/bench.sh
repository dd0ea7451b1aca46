#!/usr/bin/env bash
# Installs missing packages, builds Release, runs the default benchmark and accuracy sweeps,
# writes CSV reports (and PNG plots where scripts/plot.py exists) and prints where they are.
#   ./scripts/bench.sh              default sweeps
#   ./scripts/bench.sh --quick      the benchmarks on the quick shapes (the accuracy sweep stays whole;
#                                   about 5.5 minutes on the 2-core VM after the build)
# Extra arguments after -- go to normbench (e.g. -- --benchmark_repetitions=10).
set -euo pipefail
cd "$(dirname "$0")/.."

shapes=transformer
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) shapes=quick ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;  # the comment above, to its end
    *) echo "bench.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

./scripts/bootstrap.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"

stamp=$(date -u +%Y%m%dT%H%M%SZ)
host=$(hostname)
out=reports/out
mkdir -p "$out"
bench_csv="$out/bench-$host-$stamp.csv"
start=$(date +%s)

# Default sweep: transformer shapes, f32 and bf16, 1 thread and all cores, every implementation
# (oneDNN included when built). Medians over 5 repetitions of at least 0.05 s each.
echo "== benchmark: $shapes shapes, f32 and bf16, threads 1 and $(nproc) =="
build/release/bench/normbench --shapes="$shapes" --dtype f32,bf16 --threads "1,$(nproc)" --variant standard \
  --norm layernorm,rmsnorm --benchmark_min_time=0.05 --hygiene-check --report "$bench_csv" "${extra[@]}"
echo "benchmark took $(( $(date +%s) - start )) s"

# GroupNorm and BatchNorm (a training step, and inference) on CNN / diffusion-UNet inputs, channels
# first and (BatchNorm) channels last; naive as the baseline, highway and threaded (about a minute).
cnn_csv="$out/bench-cnn-$host-$stamp.csv"
cnn_shapes=cnn
[ "$shapes" = quick ] && cnn_shapes=quick
echo "== benchmark: groupnorm and batchnorm, $cnn_shapes shapes, threads 1 and $(nproc) =="
build/release/bench/normbench --shapes="$cnn_shapes" --norm groupnorm,batchnorm --dtype f32,bf16 --threads "1,$(nproc)" \
  --impl naive,highway,threaded --variant standard,inference --benchmark_min_time=0.05 --report "$cnn_csv" "${extra[@]}"

# The fused residual add + norm against the same add and norm as two calls (highway, 1 thread),
# on prefill and decode-batch shapes of hidden 768, 4096 and 8192 (about half a minute).
variants_csv="$out/bench-residual-$host-$stamp.csv"
residual_shapes=(--shape 128x768 --shape 128x4096 --shape 2048x768 --shape 2048x4096 --shape 2048x8192)
[ "$shapes" = quick ] && residual_shapes=(--shapes=quick)
echo "== benchmark: residual add + norm, highway, 1 thread =="
build/release/bench/normbench "${residual_shapes[@]}" --norm layernorm,rmsnorm --dtype f32,bf16 --threads 1 \
  --impl highway --variant residual-add,residual-add-separate \
  --benchmark_min_time=0.05 --report "$variants_csv" "${extra[@]}"

reports=("$bench_csv" "$cnn_csv" "$variants_csv")
if [ -x build/release/accuracy/normbench-accuracy ]; then
  acc_csv="$out/accuracy-$host-$stamp.csv"
  echo "== accuracy: default sweep =="
  build/release/accuracy/normbench-accuracy --report "$acc_csv"
  reports+=("$acc_csv")
else
  echo "(accuracy harness not built yet: no accuracy report)"
fi

plots=()
if [ -f scripts/plot.py ]; then
  echo "== plots =="
  mapfile -t plots < <(/usr/bin/python3 scripts/plot.py --out "$out/plots" "${reports[@]}")
else
  echo "(scripts/plot.py not written yet: no plots)"
fi

echo
echo "Reports:"
for r in "${reports[@]}"; do echo "  $r"; done
if [ ${#plots[@]} -gt 0 ]; then
  echo "Plots:"
  for p in "${plots[@]}"; do echo "  $p"; done
fi
echo "Total $(( $(date +%s) - start )) s"
