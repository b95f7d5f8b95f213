#!/usr/bin/env python3
"""Medians of repeated run_wrk lines (label=<name>_r<N> ...) per scenario and
concurrency: rps, p50, p99, server CPU per request, peak RSS, busy CPU of
other processes. Usage: medians.py RESULT_FILE..."""
import re, statistics, sys
from collections import OrderedDict

groups = OrderedDict()
for path in sys.argv[1:]:
    for line in open(path):
        if not line.startswith("label="):
            continue
        kv = dict(re.findall(r"(\w+)=(\S+)", line))
        if "rps" not in kv:
            continue
        name = re.sub(r"_r\d+$", "", kv["label"])
        groups.setdefault((path.rsplit("/", 1)[-1], name, kv["conc"]), []).append(kv)

med = lambda xs: statistics.median(xs) if xs else float("nan")
print("| file | scenario | conc | runs | rps median (min-max) | p50 ms | p99 ms | server us/req | peak RSS MB | other CPU s |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (f, name, conc), runs in groups.items():
    rps = [float(r["rps"]) for r in runs]
    us = [float(r["server_cpu_s"]) * 1e6 / float(r["reqs"]) for r in runs if "server_cpu_s" in r]
    rss = [float(r.get("server_rss_max_kb", 0)) / 1024 for r in runs]
    other = [float(r["other_cpu_s"]) for r in runs if "other_cpu_s" in r]
    print("| %s | %s | %s | %d | %.0f (%.0f-%.0f) | %.2f | %.2f | %.1f | %.0f | %.1f |" % (
        f, name, conc, len(runs), med(rps), min(rps), max(rps),
        med([float(r["p50_ms"]) for r in runs]), med([float(r["p99_ms"]) for r in runs]),
        med(us), max(rss), med(other)))
