#!/usr/bin/python3
"""Plots normbench reports (benchmark and accuracy CSVs) as PNG files.

Usage: /usr/bin/python3 scripts/plot.py [--out DIR] REPORT.csv [REPORT.csv ...]

Benchmark reports give, per norm x dtype x thread count:
  throughput-<norm>-<dtype>-t<threads>.png  GB/s against working-set size, one line per
      implementation, the measured bandwidth ceiling drawn as the roof (solid: ordinary stores,
      dashed: non-temporal stores), cache sizes marked;
  speedup-<norm>-<dtype>-t<threads>.png     speed-up over `naive` (and over `onednn` where
      present) per shape, as bars.
  Variants get their own files, <norm>+<variant> in place of <norm> (BatchNorm's carry the
  layout: batchnorm-ncl, batchnorm-nlc, batchnorm-nc), and
  residual-speedup-<norm>-<dtype>-<impl>.png  per shape, the time of residual-add-separate over
      that of the fused residual-add (above 1: fusing pays).
Accuracy reports give, per norm x dtype:
  accuracy-<norm>-<dtype>.png  normwise error (ulps of the output dtype) against the condition
      number kappa of the `offset` sweep, one line per implementation; beside it the measured
      variance error with each algorithm's theoretical bound dashed.
  variants-<norm>-<dtype>.png  per variant, the worst normwise error of each implementation
      against the variant's own reference (left) and against the standard form (right, drift).
Prints the path of every PNG written, one per line. Needs Debian's python3-matplotlib and
python3-numpy (run with /usr/bin/python3, not a pyenv interpreter).
"""
import argparse
import collections
import csv
import math
import os
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
except ImportError as e:  # pragma: no cover
    sys.exit(f"plot.py: {e}: install python3-matplotlib and python3-numpy and run with /usr/bin/python3")

STYLE = {  # stable colours and markers per implementation
    "naive": ("#7f7f7f", "o"), "welford": ("#8c564b", "v"), "fused": ("#d62728", "s"),
    "highway": ("#1f77b4", "D"), "highway-f64": ("#17becf", "P"), "threaded": ("#2ca02c", "^"),
    "onednn": ("#ff7f0e", "X"), "stream-scale": ("#000000", None),
}


def style(impl):
    return STYLE.get(impl, (None, "."))


def fnum(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def read(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except (UnicodeDecodeError, csv.Error) as e:
        sys.exit(f"plot.py: {path}: not a CSV file ({e})")
    if not rows:
        sys.exit(f"plot.py: {path}: no rows")
    if "gbps_median" in rows[0]:
        return "bench", rows
    if "normwise_ulp_max" in rows[0]:
        return "accuracy", rows
    sys.exit(f"plot.py: {path}: not a normbench report")


def subtitle(rows):
    r = rows[0]
    return f"{r['host']} · {r['cpu_model']} · {r['cores']} cores · Highway {r['hwy_target']} · {r['timestamp_utc'][:10]}"


def human_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:.0f} {unit}"
        n /= 1024
    return f"{n:.0f} TiB"


def save(fig, out, name, written):
    path = os.path.join(out, name)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    written.append(path)


def norm_tag(r):
    """norm, or norm+variant for a variant other than the standard form (schema 3); BatchNorm with
    its layout (schema 4), since a channels-first and a channels-last shape share rows and cols."""
    v = r.get("variant", "")
    norm = r["norm"]
    if norm == "batchnorm" and r.get("layout"):
        norm = f"{norm}-{r['layout']}"
    return norm if v in ("", "standard") or r["norm"] == "none" else f"{norm}+{v}"


def plot_residual(rows, out, written):
    """Fused residual add + norm against add_rounded then the norm, per shape (same run)."""
    ok = [r for r in rows if not r.get("error") and r.get("variant") in ("residual-add", "residual-add-separate")]
    groups = collections.defaultdict(dict)
    for r in ok:
        groups[(r["norm"], r["dtype"], r["implementation"])][(int(r["rows"]), int(r["cols"]), r["variant"])] = r
    for (norm, dtype, impl), cases in sorted(groups.items()):
        shapes = sorted({(k[0], k[1]) for k in cases if (k[0], k[1], "residual-add-separate") in cases
                         and (k[0], k[1], "residual-add") in cases}, key=lambda s: (s[0] * s[1], s))
        if not shapes:
            continue
        ratios = [fnum(cases[(*sh, "residual-add-separate")]["time_median_ns"]) /
                  fnum(cases[(*sh, "residual-add")]["time_median_ns"]) for sh in shapes]
        fig, ax = plt.subplots(figsize=(max(8, 0.5 * len(shapes)), 4.5))
        ax.bar(np.arange(len(shapes)), ratios, color=style(impl)[0] or "tab:blue")
        ax.axhline(1.0, color="black", lw=1)
        ax.set_xticks(np.arange(len(shapes)))
        ax.set_xticklabels([f"{r}x{c}" for r, c in shapes], rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("time(add, then norm) / time(fused add + norm)")
        ax.set_xlabel("shape (rows x cols)")
        ax.grid(True, axis="y", alpha=0.3)
        fig.suptitle(f"{norm} {dtype}, {impl}: fused residual add + norm speed-up (same run)\n{subtitle(rows)}",
                     fontsize=10)
        save(fig, out, f"residual-speedup-{norm}-{dtype}-{impl}.png", written)


def plot_bench(rows, out, written):
    plot_residual(rows, out, written)
    ok = [r for r in rows if not r.get("error")]
    groups = collections.defaultdict(list)
    for r in ok:
        groups[(r["dtype"], r["threads"])].append(r)
    for (dtype, threads), grp in sorted(groups.items()):
        ceiling = sorted((fnum(r["working_set_bytes"]), fnum(r["gbps_median"])) for r in grp
                         if r["family"] == "ceiling" and r["implementation"] == "stream-scale")
        nt_ceiling = sorted((fnum(r["working_set_bytes"]), fnum(r["gbps_median"])) for r in grp
                            if r["family"] == "ceiling" and r["implementation"] == "stream-scale-nt")
        for norm in sorted({norm_tag(r) for r in grp if r["norm"] != "none"}):
            cases = [r for r in grp if norm_tag(r) == norm and r["family"] != "ceiling"]
            phased = sorted((fnum(r["working_set_bytes"]), fnum(r["gbps_median"])) for r in grp
                            if r["implementation"] == "row-phased" and norm_tag(r) == norm)
            # Throughput against working set.
            fig, ax = plt.subplots(figsize=(9, 5.5))
            if ceiling:
                xs, ys = zip(*ceiling)
                ax.plot(xs, ys, color="black", lw=2.5, alpha=0.35, label="ceiling (STREAM scale, same bytes)")
            if nt_ceiling:  # schema 2: the same with non-temporal stores
                xs, ys = zip(*nt_ceiling)
                ax.plot(xs, ys, color="black", lw=1.5, ls="--", alpha=0.45,
                        label="ceiling, non-temporal stores")
            if phased:  # schema 5 from row-phased's introduction: this norm's unavoidable traffic
                xs, ys = zip(*phased)
                ax.plot(xs, ys, color="black", lw=1.2, ls=":", alpha=0.7,
                        label="row-phased ceiling (this norm's traffic)")
            by_impl = collections.defaultdict(list)
            for r in cases:
                by_impl[r["implementation"]].append((fnum(r["working_set_bytes"]), fnum(r["gbps_median"])))
            for impl, pts in sorted(by_impl.items()):
                pts.sort()
                c, m = style(impl)
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=m, ms=4, lw=1.4, color=c, label=impl)
            caches = [("L1d", fnum(rows[0].get("l1d_bytes"))), ("L2", fnum(rows[0].get("l2_bytes"))),
                      ("L3", fnum(rows[0].get("l3_bytes")))]
            for label, size in caches:
                if size and size > 0:
                    ax.axvline(size, color="grey", ls=":", lw=1)
                    ax.text(size, 0.98, f" {label} {human_bytes(size)}", transform=ax.get_xaxis_transform(),
                            va="top", fontsize=8, color="grey")
            ax.set_xscale("log", base=2)
            ax.set_xlabel("working set (x + y + parameters), bytes")
            ax.set_ylabel("throughput, GB/s (read x + write y + params)")
            ax.set_ylim(bottom=0)
            ax.grid(True, which="major", alpha=0.3)
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
            fig.suptitle(f"{norm} {dtype}, {threads} thread(s): throughput against the in-run ceiling", fontsize=11)
            ax.set_title(subtitle(rows), fontsize=8)
            save(fig, out, f"throughput-{norm}-{dtype}-t{threads}.png", written)

            # Speed-up bars per shape.
            shapes = sorted({(int(r["rows"]), int(r["cols"])) for r in cases}, key=lambda s: (s[0] * s[1], s))
            gbps = {(r["implementation"], int(r["rows"]), int(r["cols"])): fnum(r["gbps_median"]) for r in cases}
            impls = sorted({r["implementation"] for r in cases})
            bases = [b for b in ("naive", "onednn") if b in impls]
            if not bases or len(shapes) == 0:
                continue
            fig, axes = plt.subplots(len(bases), 1, figsize=(max(8, 0.55 * len(shapes) * len(impls) / 3), 4 * len(bases)),
                                     squeeze=False)
            for ax, base in zip(axes[:, 0], bases):
                others = [i for i in impls if i != base]
                width = 0.8 / max(1, len(others))
                x = np.arange(len(shapes))
                for k, impl in enumerate(others):
                    vals = [gbps.get((impl, *s), math.nan) / gbps.get((base, *s), math.nan) for s in shapes]
                    ax.bar(x + (k - (len(others) - 1) / 2) * width, vals, width, color=style(impl)[0], label=impl)
                ax.axhline(1.0, color="black", lw=1)
                ax.set_xticks(x)
                ax.set_xticklabels([f"{r}x{c}" for r, c in shapes], rotation=45, ha="right", fontsize=8)
                ax.set_ylabel(f"speed-up over {base} (×)")
                if base == "naive":
                    ax.set_yscale("log")
                ax.grid(True, axis="y", alpha=0.3)
                ax.legend(fontsize=8, ncol=4)
                ax.set_xlabel("shape (rows x cols)")
            fig.suptitle(f"{norm} {dtype}, {threads} thread(s): speed-up per shape (same run)\n{subtitle(rows)}", fontsize=10)
            save(fig, out, f"speedup-{norm}-{dtype}-t{threads}.png", written)


def plot_variants(rows, out, written):
    """Per norm and dtype: each variant's error against its own reference and its drift from the
    standard form (normwise ulps, worst over shapes, N(0,1) rows or a user's tensor), for every
    implementation."""
    generated = {"normal", "uniform", "offset", "outliers", "heavy", "constant", "range", "special"}
    var = [r for r in rows if r.get("variant", "standard") != "standard"
           and (r["distribution"] == "normal" or r["distribution"] not in generated)]
    groups = collections.defaultdict(list)
    for r in var:
        groups[(r["norm"], r["dtype"])].append(r)
    for (norm, dtype), grp in sorted(groups.items()):
        variants = sorted({r["variant"] for r in grp})
        impls = sorted({r["implementation"] for r in grp})
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.5), sharey=True)
        for ax, col, title in ((axes[0], "normwise_ulp_max", "against the variant's own reference"),
                               (axes[1], "drift_normwise_ulp_max", "drift: against the standard form")):
            width = 0.8 / max(1, len(impls))
            for k, impl in enumerate(impls):
                vals = []
                for v in variants:
                    xs = [fnum(r[col]) for r in grp if r["variant"] == v and r["implementation"] == impl]
                    xs = [x for x in xs if not math.isnan(x)]
                    vals.append(max(max(xs), 1e-2) if xs else math.nan)
                ax.bar(np.arange(len(variants)) + (k - (len(impls) - 1) / 2) * width, vals, width,
                       color=style(impl)[0], label=impl)
            ax.axhline(0.5, color="black", lw=1, ls=":")
            ax.set_yscale("log")
            ax.set_xticks(np.arange(len(variants)))
            ax.set_xticklabels(variants, rotation=30, ha="right", fontsize=8)
            ax.set_title(title, fontsize=10)
            ax.grid(True, axis="y", alpha=0.3)
        axes[0].set_ylabel(f"normwise error, ulps of {dtype} (worst case)")
        axes[1].legend(fontsize=8, ncol=2)
        fig.suptitle(f"{norm} {dtype}: variants' error and drift from the standard form, N(0,1) rows\n{subtitle(rows)}",
                     fontsize=10, y=1.04)
        save(fig, out, f"variants-{norm}-{dtype}.png", written)


def plot_accuracy(rows, out, written):
    plot_variants(rows, out, written)
    offset = [r for r in rows if r["distribution"] == "offset" and not math.isnan(fnum(r["kappa_target"]))
              and r.get("variant", "standard") == "standard"]
    groups = collections.defaultdict(list)
    for r in offset:
        groups[(r["norm"], r["dtype"])].append(r)
    for (norm, dtype), grp in sorted(groups.items()):
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 5))
        by_impl = collections.defaultdict(lambda: collections.defaultdict(list))
        for r in grp:
            by_impl[r["implementation"]][fnum(r["kappa_target"])].append(r)
        floor = 1e-2
        for impl, per_k in sorted(by_impl.items()):
            ks = sorted(per_k)
            nw = [max(fnum(r["normwise_ulp_max"]) for r in per_k[k]) for k in ks]
            var = [max(fnum(r["var_rel_err_max"]) for r in per_k[k]) for k in ks]
            bound = [max(2 * fnum(r["bound"]) for r in per_k[k]) for k in ks]
            c, m = style(impl)
            a1.plot(ks, [max(v, floor) if not math.isnan(v) else math.nan for v in nw], marker=m, color=c, label=impl)
            a2.plot(ks, [max(v, 1e-12) if not math.isnan(v) else math.nan for v in var], marker=m, color=c, label=impl)
            a2.plot(ks, [b if b > 0 else math.nan for b in bound], ls="--", lw=1, color=c)
        a1.axhline(0.5, color="black", lw=1, ls=":")
        a1.text(1, 0.5, " correctly rounded (0.5 ulp)", fontsize=8, va="bottom")
        for ax in (a1, a2):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("condition number κ = sqrt(1 + n·mean²/S) of the offset rows")
            ax.grid(True, which="major", alpha=0.3)
        a1.set_ylabel(f"normwise error, ulps of {dtype} (worst over shapes)")
        a1.set_title("output error", fontsize=10)
        a2.set_ylabel("relative error of the variance")
        a2.axhline(1.0, color="red", lw=1, ls=":")
        a2.text(1, 1.0, " 100%: variance lost", fontsize=8, va="bottom", color="red")
        # The variance is recovered from the kernels' f32 rstd output: below ~4 u_f32 nothing is resolved.
        a2.axhline(4 * 2.0 ** -24, color="grey", lw=1, ls=":")
        a2.text(1, 4 * 2.0 ** -24, " resolution (rstd is f32)", fontsize=8, va="bottom", color="grey")
        a2.set_title("variance error (solid) vs 2× its algorithm's bound (dashed)", fontsize=10)
        a1.legend(fontsize=8)
        fig.suptitle(f"{norm} {dtype}: accuracy against the long-double reference\n{subtitle(rows)}", fontsize=11, y=1.04)
        save(fig, out, f"accuracy-{norm}-{dtype}.png", written)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+", help="benchmark or accuracy CSV reports")
    ap.add_argument("--out", default="reports/out/plots", help="output directory (default reports/out/plots)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    written = []
    for path in args.reports:
        if not os.path.isfile(path):
            sys.exit(f"plot.py: {path}: no such file")
        kind, rows = read(path)
        before = len(written)
        (plot_bench if kind == "bench" else plot_accuracy)(rows, args.out, written)
        if len(written) == before:
            print(f"plot.py: {path}: nothing to plot (no implementation's cases: a report of ceilings only, or of "
                  "failed cases)", file=sys.stderr)
    if not written:
        sys.exit(1)
    for p in written:
        print(p)


if __name__ == "__main__":
    main()
