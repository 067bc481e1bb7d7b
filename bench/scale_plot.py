#!/usr/bin/env python3
"""Plots bench/scale.py's rows: each p99 against the object count, one panel per store pair (log-scaled counts)."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SERIES = [
    ("get_cold_p99_us", "GET cold"), ("get_warm_p99_us", "GET warm"), ("meta_cold_p99_us", "getMetadata cold"),
    ("meta_warm_p99_us", "getMetadata warm"), ("list_middle_p99_us", "list (middle page)"), ("list_last_p99_us", "list (last page)"),
    ("upload_p99_us", "upload"), ("delete_p99_us", "delete"),
]


def main(source, target):
    rows = json.load(open(source))
    stores = sorted({row["store"] for row in rows})
    figure, axes = plt.subplots(1, len(stores), figsize=(6 * len(stores), 4.5), squeeze=False)
    for axis, store in zip(axes[0], stores):
        mine = sorted((row for row in rows if row["store"] == store), key=lambda row: row["objects"])
        counts = [row["objects"] for row in mine]
        for key, label in SERIES:
            axis.plot(counts, [row[key] / 1000 for row in mine], marker="o", label=label)
        axis.set_xscale("log")
        axis.set_xlabel("objects in the bucket")
        axis.set_ylabel("p99 (ms)")
        axis.set_title({"sqlite": "SQLite + disk", "postgres": "PostgreSQL + SeaweedFS"}.get(store, store))
        axis.set_yscale("log")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(target)


if __name__ == "__main__":
    main(*sys.argv[1:3])
