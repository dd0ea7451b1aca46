#!/usr/bin/python3
"""Checks normbench benchmark reports against the performance targets and prints a Markdown table.

Usage: /usr/bin/python3 scripts/perf_targets.py REPORT.csv [REPORT.csv ...]
       /usr/bin/python3 scripts/perf_targets.py --per-run REPORT.csv [REPORT.csv ...]

Reads reports (any schema version) from one machine, pools their rows (later files win on the
same case; runs with and without --huge-pages cannot be pooled), and prints one row per target:
what was measured (f32 unless stated, medians over the report's repetitions), the target, and
whether it is met. With --per-run each report is read alone and becomes one column: each
target's lowest value and its shape (bold where the target is not met), and in how many of the
runs it was met, to tell a target that one run misses from one that every run misses. A miss
that two decimals would round up to its goal is printed with three (0.895 against 0.90).
Every number comes from a report; nothing is timed here. Working-set classes use the report's
own `working_set_bytes`: "DRAM" is >= 64 MiB, "L2" is <= 512 KiB, "L2-resident for 2 threads"
is <= the two cores' L2. Three rows also print what bounds them in the same run: the 2-thread
speedups the bound that the ceiling's own parallel cost puts on each shape, highway-f64 its
compute speed in cache against the DRAM ceilings (and, where its lowest shape has rows longer
than one statistics chunk, the speed of that row length in cache against that shape's ceiling),
and the decode row (one row, where `threaded` makes highway's own call) an A/A control,
`threaded` at 1 thread over `highway`: the same call timed under two names, whose ratio's
distance from 1 is the run's own noise. Reports with row-phased ceilings (normbench from
commit 0080009) add, to each fraction row, the best kernel's share of its norm's row-phased
ceiling (lowest shape) and that ceiling's own share of the stream-scale one, and to the oneDNN
row how much faster than oneDNN the row-phased ceiling itself ran: a kernel that reads each row
before writing it is not expected to beat that ratio.

The last column says, for a target that is not met, what bounds it in the same run, shape by
shape: each shape under the goal against its tightest bound (row-phased ceiling, or over oneDNN;
for one-row f32 LayerNorm calls, reports from 2026-12-01 on, LayerNorm's arithmetic ceiling: that
traffic with LayerNorm's fewest vector operations; the ceiling's parallel cost; the A/A control,
whose c counts as far from 1 as 1/c, or for a shape beyond every control an exact one-sided
rank-sum test that cannot tell its 2-thread repetitions from the same call's at 1 thread (p > 0.05,
reports with rep_times_ns); the row length in cache, for rows of more than one
statistics chunk). "bounded": at every such shape a bound of
the machine or the measurement sits under the goal as well, so no kernel moving that traffic (or
timed that noisily) meets it in this run; "compute-bound": the tightest is the kernel's own
compute speed (a limit of its code, not of the machine); "open": some shape has room left, or no
bound was measured for it. A closing line counts the four outcomes; --per-run cells of missed
targets carry the word, and "met in" how many runs had it bounded.
"""
import csv
import math
import os
import re
import sys


def fnum(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def load(paths):
    rows = {}
    pages = set()  # page_kind of every row
    for p in paths:
        try:
            f = open(p, newline="")
        except OSError as e:
            sys.exit(f"perf_targets.py: cannot read {p}: {e.strerror}")
        with f:
            reader = csv.DictReader(f)
            missing = {"name", "norm", "implementation", "dtype", "rows", "cols", "threads",
                       "time_median_ns"} - set(reader.fieldnames or [])
            if missing:
                sys.exit(f"perf_targets.py: {p} is not a normbench benchmark report "
                         f"(missing columns: {', '.join(sorted(missing))})")
            for r in reader:
                pages.add(page_kind(r))
                # The targets are about the standard forms (older reports have no variant column).
                if not r.get("error") and r.get("variant", "standard") in ("standard", ""):
                    rows[r["name"]] = r
    if not rows:
        sys.exit("perf_targets.py: no usable rows")
    refuse_mixed_pages(pages)
    return list(rows.values())


def page_kind(r):
    """A row's huge_pages value (schema 5; older reports ran on the system's pages: "0")."""
    return r.get("huge_pages") or "0"


def refuse_mixed_pages(kinds):
    """Runs on huge pages and on the system's pages are two measurements, never one table."""
    if len(kinds) > 1:
        sys.exit("perf_targets.py: the reports mix runs with and without --huge-pages; pass one kind")


def pick(table, **kw):
    return [r for r in table if all(r[k] == str(v) for k, v in kw.items())]


def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else math.nan


def near(v, goal):
    """v with 2 decimals, or 3 where 2 would round a miss up to the goal (0.895 against 0.90)."""
    return f"{v:.3f}" if v < goal <= round(v, 2) else f"{v:.2f}"


def shape(r):
    return f"{r['rows']}x{r['cols']}"


def rep_times(r):
    """A row's repetition times (rep_times_ns, ';'-separated; reports from 2026-11-21 on), or []."""
    return [fnum(t) for t in (r.get("rep_times_ns") or "").split(";") if not math.isnan(fnum(t))]


def slower_p_value(slow, fast):
    """One-sided exact Wilcoxon rank-sum (Mann-Whitney) p-value of the times `slow` being no
    slower than `fast`: the chance that, were all the repetitions one distribution, a random
    len(slow) of them would hold ranks summing to at least `slow`'s. Ties take mid-ranks (doubled
    to stay integers); the subsets are counted by dynamic programming, exact at any size.
    normbench-compare has the two-sided test in C++ (mann_whitney_u, reports/src/compare.cpp: exact
    up to n1 * n2 = 2500); this script reads reports without a build."""
    pooled = sorted((t, i < len(slow)) for i, t in enumerate(slow + fast))
    ranks2 = [0] * len(pooled)  # twice each mid-rank
    i = 0
    while i < len(pooled):
        j = i
        while j < len(pooled) and pooled[j][0] == pooled[i][0]:
            j += 1
        for k in range(i, j):
            ranks2[k] = i + j + 1  # 2 * mean of ranks i+1 .. j
        i = j
    observed = sum(r for r, (_, is_slow) in zip(ranks2, pooled) if is_slow)
    n = len(slow)
    counts = [dict() for _ in range(n + 1)]  # counts[k][s]: subsets of k repetitions whose ranks sum to s
    counts[0][0] = 1
    for r in ranks2:
        for k in range(n, 0, -1):
            for s, c in counts[k - 1].items():
                counts[k][s + r] = counts[k].get(s + r, 0) + c
    return sum(c for s, c in counts[n].items() if s >= observed) / sum(counts[n].values())


DTYPE_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "f64": 8}


# What a missed target's shapes are bounded by, in the same run. "traffic": the norm's row-phased
# ceiling (its own bytes in the order a normalization must move them), or for the oneDNN row how
# much faster than oneDNN that ceiling ran; "arithmetic": LayerNorm's arithmetic ceiling (that
# traffic with the fewest vector operations an accurate LayerNorm does, one-row f32 calls: no
# kernel overlaps a lone row's statistics chain with other work); "parallel cost": what the
# ceiling's own 2-thread split costs; "noise": the A/A control, the same call timed under two
# names. All four are limits of the machine or of the measurement. "compute": the kernel's own
# speed at that row length in cache, a limit of its code, not of the machine.
MACHINE_BOUNDS = ("traffic", "arithmetic", "parallel cost", "noise")


def verdict(met, misses, goal):
    """(status, text) of a target. misses: (shape, value, [(bound, kind, label), ...]) for each
    shape under the goal; a bound of NaN was not measured, or (with a fourth element, the text
    to print) does not hold the shape; a measured bound's fourth element is the text printed for
    it. A shape is bounded where its tightest bound in the run is under the goal
    too: no kernel moving that traffic (or timed that noisily) could have met it there. status:
    "met"; "open" where any missing shape has every bound at or above the goal (or none measured),
    so a faster kernel could still meet it; "compute-bound" where some shape's tightest bound is
    the kernel's own compute speed; "bounded" where every missing shape is held under the goal by
    the machine or the measurement."""
    if met:
        return "met", ""
    if not misses:
        return "open", "no shape under the goal: the geometric mean misses"
    classified = []
    for s, value, bounds in misses:
        known = [b for b in bounds if not math.isnan(b[0])]
        tight = min(known) if known else None
        if tight is None or tight[0] >= goal:
            status = "open"
        else:
            status = "bounded" if tight[1] in MACHINE_BOUNDS else "compute-bound"
        why_open = next((b[3] for b in bounds if len(b) > 3), "no bound measured")
        classified.append((status, s, value, tight, why_open))
    order = {"open": 0, "compute-bound": 1, "bounded": 2}
    classified.sort(key=lambda c: (order[c[0]], c[2]))
    overall = classified[0][0]
    counts = {k: sum(c[0] == k for c in classified) for k in order}
    parts = [f"{n} {k}" for k, n in counts.items() if n]
    shown = []
    for _, s, value, tight, why_open in classified[:3]:
        bound = why_open if tight is None else tight[3] if len(tight) > 3 else f"{tight[2]} {near(tight[0], goal)}"
        shown.append(f"{s} {near(value, goal)}, {bound}")
    more = f"; {len(classified) - 3} more" if len(classified) > 3 else ""
    return overall, f"{overall}: {len(misses)} shape(s) under the goal ({', '.join(parts)}): {'; '.join(shown)}{more}"


def targets(rows):
    """One (what, measured text, goal text, met, headline, verdict) per target the rows have data
    for; the headline is the measured text's first number with its shape (the per-run table's cell),
    the verdict what bounds a missed target in the same run (see verdict())."""
    out = []

    def row(what, measured, target, met, headline, misses=(), goal=math.nan):
        out.append((what, measured, target, met, headline, verdict(met, misses, goal)))

    # 1. best normbench LayerNorm vs oneDNN, 1 thread, transformer shapes.
    transformer = {(t, h) for t in (1, 128, 2048) for h in (768, 1024, 2048, 4096, 5120, 8192, 16384)}
    ratios = []
    by_onednn_shape = {}  # shape: best kernel over oneDNN
    worst = None
    phased_over_onednn = {}  # shape: how much faster than oneDNN the row-phased ceiling itself ran
    for r in pick(rows, norm="layernorm", implementation="onednn", dtype="f32", threads=1):
        key = (int(r["rows"]), int(r["cols"]))
        if key not in transformer:
            continue
        same = pick(rows, norm="layernorm", dtype="f32", threads=1, rows=key[0], cols=key[1])
        ours = [fnum(o["time_median_ns"]) for o in same if o["family"] in ("highway", "threaded")]
        phased = [fnum(o["time_median_ns"]) for o in same if o["implementation"] == "row-phased"]
        if phased:
            phased_over_onednn[shape(r)] = fnum(r["time_median_ns"]) / phased[0]
        if ours:
            ratio = fnum(r["time_median_ns"]) / min(ours)
            ratios.append(ratio)
            by_onednn_shape[shape(r)] = ratio
            if worst is None or ratio < worst[0]:
                worst = (ratio, shape(r))
    if ratios:
        bound = ""
        if phased_over_onednn:  # where oneDNN is already near the traffic's own limit
            low = min(phased_over_onednn, key=phased_over_onednn.get)
            bound = (f"; the row-phased ceiling itself {phased_over_onednn.get(worst[1], math.nan):.2f}x oneDNN at "
                     f"{worst[1]}, at least {phased_over_onednn[low]:.2f}x ({low})")
        row(f"best LayerNorm / oneDNN, 1 thread, {len(ratios)} transformer shapes",
            f"min {near(worst[0], 1.3)}x ({worst[1]}), geomean {near(geomean(ratios), 1.5)}x{bound}",
            ">= 1.3x, geomean >= 1.5x", worst[0] >= 1.3 and geomean(ratios) >= 1.5,
            f"min {near(worst[0], 1.3)}x ({worst[1]}), geomean {near(geomean(ratios), 1.5)}x",
            [(s, v, [(phased_over_onednn.get(s, math.nan), "traffic", "row-phased ceiling over oneDNN")])
             for s, v in by_onednn_shape.items() if v < 1.3], 1.3)

    def phased_frac(norm, dtype, threads, s, implementation="row-phased"):
        """The same run's row-phased ceiling of this norm at shape s (reports from c. 2026-11-24 on),
        as a fraction of the stream-scale ceiling: the share of it that the norm's traffic allows.
        implementation "row-phased-arithmetic": LayerNorm's arithmetic ceiling (one-row f32 calls at
        1 thread, reports from 2026-12-01 on). NaN where the run has none."""
        r, c = s.split("x")
        phased = pick(rows, norm=norm, implementation=implementation, dtype=dtype, threads=threads, rows=r, cols=c)
        return fnum(phased[0]["frac_of_ceiling"]) if phased else math.nan

    def best_frac(norm, dtype, threads, pred, impls):
        """min and max over qualifying shapes of the best implementation's frac_of_ceiling."""
        by_shape = {}
        for r in pick(rows, norm=norm, dtype=dtype, threads=threads):
            if r["implementation"] in impls and pred(fnum(r["working_set_bytes"])):
                f = fnum(r["frac_of_ceiling"])
                s = shape(r)
                if s not in by_shape or f > by_shape[s][0]:
                    by_shape[s] = (f, r["implementation"], fnum(r.get("frac_of_nt_ceiling")))
        for s, v in list(by_shape.items()):
            by_shape[s] = v + (phased_frac(norm, dtype, threads, s),
                               phased_frac(norm, dtype, threads, s, "row-phased-arithmetic"))
        return by_shape

    def frac_row(what, by_shape, target, extra="", compute=lambda s: math.nan):
        """compute(shape): that shape's compute bound as a fraction of its ceiling, NaN if none."""
        if not by_shape:
            return
        lo = min(by_shape.items(), key=lambda kv: kv[1][0])
        hi = max(v[0] for v in by_shape.values())
        nt = min(v[2] for v in by_shape.values())  # NaN in schema-1 reports (no non-temporal ceiling)
        nt_text = "" if math.isnan(nt) else f"; of the non-temporal ceiling >= {nt:.2f}"
        phased = {s: v for s, v in by_shape.items() if not math.isnan(v[3])}
        if phased:  # the best kernel against the row-phased ceiling, and that ceiling against stream-scale
            of_phased = {s: v[0] / v[3] for s, v in phased.items()}
            worst = min(of_phased, key=of_phased.get)
            nt_text += (f"; of the row-phased ceiling >= {of_phased[worst]:.2f} ({worst}), which itself reads "
                        f"{min(v[3] for v in phased.values()):.2f}-{max(v[3] for v in phased.values()):.2f} "
                        f"of the ceiling ({lo[0]}: {by_shape[lo[0]][3]:.2f})")
        arithmetic = {s: v for s, v in by_shape.items() if not math.isnan(v[4])}
        if arithmetic:  # one-row shapes: the best kernel against LayerNorm's arithmetic ceiling
            of_arith = {s: v[0] / v[4] for s, v in arithmetic.items()}
            worst = min(of_arith, key=of_arith.get)
            lo_a, hi_a = min(v[4] for v in arithmetic.values()), max(v[4] for v in arithmetic.values())
            nt_text += (f"; of LayerNorm's arithmetic ceiling >= {of_arith[worst]:.2f} ({worst}), which itself reads "
                        f"{lo_a:.2f}{'' if len(arithmetic) == 1 else f'-{hi_a:.2f}'} of the ceiling "
                        f"({len(arithmetic)} one-row shape{'' if len(arithmetic) == 1 else 's'})")
        row(what, f"{near(lo[1][0], target)} ({lo[0]}, {lo[1][1]}) to {hi:.2f} over {len(by_shape)} shapes{nt_text}{extra}",
            f">= {target:.2f}", lo[1][0] >= target, f"{near(lo[1][0], target)} ({lo[0]})",
            [(s, v[0], [(v[3], "traffic", "row-phased ceiling"), (v[4], "arithmetic", "arithmetic ceiling"),
                        (compute(s), "compute", "compute in cache")])
             for s, v in by_shape.items() if v[0] < target], target)

    def row_length_rate(impl_rows, s):
        """A DRAM shape's own compute limit: the fastest cache-resident (<= 2 MiB) run of its row
        length, in elements/s, and that shape's ceiling in elements/s of its dtype (as (fastest run,
        rate, ceiling, the shape's run)), or None. Only rows of more than one statistics chunk
        (32768 values): those take one code path whatever the row count and the stores (one row at
        a time, chunked statistics), so one cached row measures what each DRAM row computes.
        Shorter rows take paths that depend on the row count and the stores (pipelined rows with
        cached stores, pairs or triples with streaming ones, parameters widened once per call)."""
        r_lo, c_lo = s.split("x")
        if int(c_lo) <= 32768:
            return None
        cached = [r for r in impl_rows if r["cols"] == c_lo and fnum(r["working_set_bytes"]) <= 2 * 2**20]
        dram_row = [r for r in impl_rows if r["rows"] == r_lo and r["cols"] == c_lo]
        if not cached or not dram_row:
            return None
        fastest = max(cached, key=lambda r: fnum(r.get("gelems_per_s_median")))
        element_bytes = 2 * DTYPE_BYTES[dram_row[0]["dtype"]]  # x read, y written
        return (fastest, fnum(fastest.get("gelems_per_s_median")), fnum(dram_row[0]["ceiling_gbps"]) / element_bytes,
                dram_row[0])

    def same_row_length_bound(impl_rows, lowest):
        """The lowest DRAM shape's row_length_rate, as text beside its row."""
        found = row_length_rate(impl_rows, lowest)
        if found is None:
            return ""
        fastest, rate, ceiling, dram_row = found
        kernel = fnum(dram_row.get("gelems_per_s_median"))
        return (f"; at {lowest} its row length computes at most {rate:.2f} G elements/s in cache ({shape(fastest)}), "
                f"{rate / ceiling:.2f} of {lowest}'s ceiling ({ceiling:.2f}); the kernel there {kernel:.2f}, "
                f"{kernel / rate:.2f} of that")

    def compute_bound(impl_rows):
        """shape -> its row_length_rate as a fraction of its ceiling (NaN where none): the verdict's
        compute bound, a limit of the implementations' code at that row length."""
        def bound(s):
            found = row_length_rate(impl_rows, s)
            return math.nan if found is None else found[1] / found[2]
        return bound

    dram = lambda ws: ws >= 64 * 2**20
    l2 = lambda ws: ws <= 512 * 2**10
    fast = ("highway", "threaded")

    def compute_speed(norm, dtype, threads, impls):
        """The implementations' compute speed beside the DRAM ceilings: their fastest run of a
        cache-resident shape of 8+ rows (<= 2 MiB: memory is not the limit there), in elements/s,
        against the same run's DRAM ceilings in elements/s of the dtype (x read and y written: twice
        its size). A kernel whose compute alone is little faster than the ceiling moves its bytes
        reaches the ceiling only where its compute and its memory traffic overlap entirely."""
        impl_rows = [r for r in pick(rows, norm=norm, dtype=dtype, threads=threads) if r["implementation"] in impls]
        cached = [fnum(r.get("gelems_per_s_median")) for r in impl_rows
                  if fnum(r["working_set_bytes"]) <= 2 * 2**20 and int(r["rows"]) >= 8]
        element_bytes = 2 * DTYPE_BYTES[dtype]
        ceilings = [fnum(r["ceiling_gbps"]) / element_bytes for r in impl_rows if dram(fnum(r["working_set_bytes"]))]
        if not cached or not ceilings:
            return impl_rows, ""
        return impl_rows, (f"; compute in cache at most {max(cached):.2f} G elements/s, DRAM ceilings "
                           f"{min(ceilings):.2f}-{max(ceilings):.2f} G elements/s")

    for norm in ("layernorm", "rmsnorm"):
        for th in (1, 2):
            frac_row(f"{norm}, DRAM (>= 64 MiB), {th} thread(s)", best_frac(norm, "f32", th, dram, fast), 0.90,
                     compute=compute_bound(compute_speed(norm, "f32", th, fast)[0]))
    frac_row("layernorm, L2 (<= 512 KiB), 1 thread", best_frac("layernorm", "f32", 1, l2, fast), 0.65)
    frac_row("rmsnorm, L2 (<= 512 KiB), 1 thread", best_frac("rmsnorm", "f32", 1, l2, fast), 0.75)
    # bf16 beside its compute speed: without AVX512-BF16 each value's rounding to bf16 costs several
    # vector operations, and the rows compute barely faster than DRAM moves them (Cascade Lake).
    for norm in ("layernorm", "rmsnorm"):
        for th in (1, 2):
            impl_rows, extra = compute_speed(norm, "bf16", th, fast)
            frac_row(f"bf16 {norm}, DRAM, {th} thread(s)", best_frac(norm, "bf16", th, dram, fast), 0.80, extra,
                     compute_bound(impl_rows))
    # highway-f64 beside its compute speed (f32 data, f64 arithmetic).
    for norm in ("layernorm", "rmsnorm"):
        f64_rows, extra = compute_speed(norm, "f32", 1, ("highway-f64",))
        by_shape = best_frac(norm, "f32", 1, dram, ("highway-f64",))
        if by_shape:
            extra += same_row_length_bound(f64_rows, min(by_shape, key=lambda s: by_shape[s][0]))
        frac_row(f"highway-f64 {norm}, DRAM, 1 thread", by_shape, 0.85, extra, compute_bound(f64_rows))

    # 2 threads vs 1 thread, L2-resident for both cores, >= 64 rows. The bound beside it: the
    # same shape's ordinary-store ceiling splits its copy over threads as `threaded` splits rows,
    # so its 2-thread time minus half its 1-thread time is what a parallel region costs there
    # (fork, join, the other core's caches); a kernel taking T1 at 1 thread can then reach at
    # most T1 / (T1/2 + that cost) at 2.
    speedups = []
    for r in pick(rows, implementation="threaded", dtype="f32", threads=2):
        l2_both = 2 * fnum(r["l2_bytes"])
        if int(r["rows"]) < 64 or not fnum(r["working_set_bytes"]) <= l2_both:
            continue
        one = [fnum(o["time_median_ns"]) for o in pick(rows, norm=r["norm"], dtype="f32", threads=1, rows=r["rows"],
                                                        cols=r["cols"]) if o["implementation"] in fast]
        ceiling = {int(c["threads"]): fnum(c["time_median_ns"])
                   for c in pick(rows, implementation="stream-scale", dtype="f32", rows=r["rows"], cols=r["cols"])}
        if one:
            t1 = min(one)
            bound = math.nan
            if 1 in ceiling and 2 in ceiling:
                bound = t1 / (t1 / 2 + max(0.0, ceiling[2] - ceiling[1] / 2))
            speedups.append((t1 / fnum(r["time_median_ns"]), f"{r['norm']} {shape(r)}", bound))
    if speedups:
        lo, hi = min(speedups), max(speedups)
        bounds = [s[2] for s in speedups if not math.isnan(s[2])]
        text = f"{near(lo[0], 1.8)}x ({lo[1]}) to {hi[0]:.2f}x ({hi[1]})"
        if bounds:
            below = sum(b < 1.8 for b in bounds)
            text += (f"; the ceiling's own parallel cost bounds them at {min(bounds):.2f}x to {max(bounds):.2f}x "
                     f"({below} of {len(bounds)} bounds below 1.8x); {lo[1]}'s bound {lo[2]:.2f}x")
        row(f"threaded 2 threads / best 1 thread, L2-resident, >= 64 rows ({len(speedups)} cases)", text, ">= 1.8x",
            lo[0] >= 1.8, f"{near(lo[0], 1.8)}x ({lo[1]})",
            [(c, v, [(b, "parallel cost", "the ceiling's parallel cost bounds it at")]) for v, c, b in speedups if v < 1.8],
            1.8)

    # threaded at 2 threads on fewer rows than threads, vs highway. For one row short of two
    # statistics chunks per thread `threaded` makes highway's own call, so beside it the same run's
    # A/A control: `threaded` at 1 thread (that same call under another name) over `highway`.
    # Where the control falls below 0.95x too, the run's noise sets the minimum, not the kernel.
    # (The fastest repetitions' ratio is no steadier here: a case's five repetitions can all fall
    # in the host's slow mode, RMSNorm 1x1025 at 2 threads 142-146 ns against highway's 112-141.)
    # Beside it, each shape beyond every control has its own test: a one-sided rank-sum test of its
    # 2-thread repetitions against those of the same call at 1 thread, `highway`'s and `threaded`'s
    # (interleaved at random with them over the same seconds). Where it cannot tell them apart
    # (p > 0.05), the median's distance from 1 is the host's, not the kernel's: on a host whose every
    # name's repetitions fall in two groups (Ice Lake run 14: 133-169 and 187-237 ns at LayerNorm
    # 1x768), medians of 9 land in either.
    decode, control = [], []
    two_thread = {}  # decode shape: (its 2-thread repetitions, highway's)
    one_thread = {}  # shape: threaded's repetitions at 1 thread
    for r in pick(rows, implementation="threaded", dtype="f32", rows=1):
        hw = pick(rows, implementation="highway", norm=r["norm"], dtype="f32", threads=1, rows=1, cols=r["cols"])
        if not hw or r["threads"] not in ("1", "2"):
            continue
        ratio = (fnum(hw[0]["time_median_ns"]) / fnum(r["time_median_ns"]), f"{r['norm']} {shape(r)}")
        if r["threads"] == "1":
            control.append(ratio)
            one_thread[ratio[1]] = rep_times(r)
            continue
        decode.append(ratio)
        two_thread[ratio[1]] = (rep_times(r), rep_times(hw[0]))
    if decode:
        lo = min(decode)
        text = headline = f"min {near(lo[0], 0.95)}x ({lo[1]})"
        if control:
            c = min(control)
            headline += f", A/A control {c[0]:.2f}x"
            below = sum(v < 0.95 for v, _ in control)
            text += (f"; A/A control, `threaded` at 1 thread (the same call) over `highway`: min {c[0]:.2f}x ({c[1]}), "
                     f"{below} of {len(control)} below 0.95x")
        # A shape is within the run's noise where it reads no farther from 1 than an A/A control
        # did: the same call against itself. Either name may land in the slow mode, so a control
        # of c says as much as one of 1/c (a control of 1.12 is the other name's 0.89).
        noise = min(min(v, 1 / v) for v, _ in control) if control else math.nan

        def decode_bounds(v, c):
            if v >= noise:
                return [(noise, "noise", "an A/A control as far from 1 as")]
            why = f"farther from 1 than every A/A control (the farthest read {noise:.2f})"
            slow, highway_reps = two_thread[c]
            fast = highway_reps + one_thread.get(c, [])  # the same call at 1 thread, under both names
            alpha = 0.05
            if 1 / math.comb(len(slow) + len(fast), len(slow)) > alpha:  # too few repetitions to reject (or none)
                return [(math.nan, "noise", "", why)]
            p = slower_p_value(slow, fast)
            if p > alpha:  # the run cannot tell the two apart: bounded by its noise at the shape's own value
                return [(v, "noise", "", f"{why}, but its {len(slow)} repetitions no slower than the same call's "
                                         f"{len(fast)} at 1 thread by a rank-sum test (one-sided p {p:.2g})")]
            return [(math.nan, "noise", "", f"{why}, and its {len(slow)} repetitions slower than the same call's "
                                            f"{len(fast)} at 1 thread by a rank-sum test (one-sided p {p:.2g})")]

        row(f"threaded (2 threads) / highway, rows < threads ({len(decode)} cases)", text, ">= 0.95x", lo[0] >= 0.95,
            headline, [(c, v, decode_bounds(v, c)) for v, c in decode if v < 0.95], 0.95)

    # One huge row split across threads.
    for r in pick(rows, implementation="threaded", dtype="f32", threads=2, rows=1, cols=33554432):
        frac = fnum(r["frac_of_ceiling"])
        ceiling = phased_frac(r["norm"], "f32", 2, "1x33554432")
        row(f"{r['norm']} 1x33554432, threaded 2 threads", f"{near(frac, 0.9)} of the 2-thread ceiling "
            f"({fnum(r['gbps_median']):.1f} GB/s; non-temporal ceiling {fnum(r['frac_of_nt_ceiling']):.2f})",
            ">= 0.90", frac >= 0.90, near(frac, 0.9),
            [("1x33554432", frac, [(ceiling, "traffic", "row-phased ceiling")])] if frac < 0.90 else [], 0.90)
    return out


NO_TARGET_SHAPES = ("perf_targets.py: no target's cases are in the report(s): each target reads f32 or bf16 LayerNorm "
                    "and RMSNorm cases of the transformer, cache-sweep and odd shapes (the README's Performance "
                    "command)")


def pages_line(r0):
    if r0.get("huge_pages") == "1":
        return "Buffers: transparent huge pages (--huge-pages).\n"
    if r0.get("thp_policy"):
        return f"Buffers: the system's pages (transparent huge pages: {r0['thp_policy']}).\n"
    return ""


def print_pooled(paths):
    rows = load(paths)
    line = pages_line(rows[0])
    if line:
        print(line)
    table = targets(rows)
    if not table:
        sys.exit(NO_TARGET_SHAPES)
    print("| target | measured | goal | met | if not met: what bounds it in this run |")
    print("|---|---|---|---|---|")
    for what, measured, target, met, _, (_, why) in table:
        print(f"| {what} | {measured} | {target} | {'yes' if met else '**no**'} | {why or '-'} |")
    print()
    print(summary([t[5][0] for t in table]))


def summary(statuses):
    """One line: how many targets were met, and how many of the rest each kind of bound holds."""
    n = {k: statuses.count(k) for k in ("met", "bounded", "compute-bound", "open")}
    return (f"{n['met']} of {len(statuses)} targets met; not met: {n['bounded']} bounded by the machine or the "
            f"measurement in this run (row-phased or arithmetic ceiling, parallel cost or A/A control under the goal, or "
            f"repetitions a rank-sum test cannot tell from the same call's, at every missing shape), "
            f"{n['compute-bound']} by the kernel's own compute speed, {n['open']} open (a missing "
            f"shape whose bounds in this run leave room, or none measured).")


def target_key(what):
    """A target's name without the counts of one run (shapes, cases), to line runs up."""
    return re.sub(r"\d+ transformer shapes|\(\d+ cases\)", "", what).strip()


def print_per_run(paths):
    """One column per report: each target's lowest value (bold where unmet) and in how many runs it
    was met. The runs are not pooled: each report is read alone."""
    runs = []  # (label, {key: target tuple})
    pages = set()  # page_kind of each report (load has checked that a report's rows share one)
    first = None
    names = [os.path.basename(p).removesuffix(".csv") for p in paths]
    common = os.path.commonprefix(names) if len(names) > 1 else ""
    for p, name in zip(paths, names):
        rows = load([p])
        pages.add(page_kind(rows[0]))
        first = first or rows[0]
        commits = sorted({r["git_commit"][:7] + ("-dirty" if r["git_commit"].endswith("-dirty") else "")
                          for r in rows if r.get("git_commit")})
        label = (name[len(common):] or name) + (f" (`{', '.join(commits)}`)" if commits else "")
        runs.append((label, {target_key(t[0]): t for t in targets(rows)}))
    refuse_mixed_pages(pages)
    line = pages_line(first)
    if line:
        print(line)
    keys = []
    for _, table in runs:
        keys += [k for k in table if k not in keys]
    if not keys:
        sys.exit(NO_TARGET_SHAPES)
    print("| target | goal | " + " | ".join(label for label, _ in runs) + " | met in |")
    print("|---|---|" + "---|" * len(runs) + "---|")
    for k in keys:
        have = [table[k] for _, table in runs if k in table]
        cells = [(table[k][4] if table[k][3] else f"**{table[k][4]}** {table[k][5][0]}") if k in table else "-"
                 for _, table in runs]
        met = sum(t[3] for t in have)
        bounded = sum(t[5][0] == "bounded" for t in have)
        print(f"| {have[0][0]} | {have[0][2]} | " + " | ".join(cells) + f" | {met} of {len(have)}"
              + (f", bounded in {bounded}" if bounded else "") + " |")


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or "-h" in args or "--help" in args:
        print(__doc__)
        sys.exit(0 if args else 2)
    per_run = "--per-run" in args
    paths = [a for a in args if a != "--per-run"]
    unknown = [a for a in paths if a.startswith("-")]
    if unknown:
        sys.exit(f"perf_targets.py: unknown option {unknown[0]} (see --help)")
    if not paths:
        sys.exit("perf_targets.py: --per-run needs at least one report")
    (print_per_run if per_run else print_pooled)(paths)
