#!/usr/bin/env bash
# How Silo's costs grow with the object count (bench/scale.py says what each figure is): every size on SQLite + disk,
# then on PostgreSQL + SeaweedFS (scripts/with-services.sh: a throwaway cluster with fsync off, so upload and delete
# figures there are round trips, not durability), then a table per store and a plot of the p99s against the count.
#   bench/scale.sh [SIZE…]      default: 10000 100000 1000000
#   SCALE_STORES="sqlite"       only one store pair; SCALE_SECONDS=5 per figure; BENCH_BIN=dir of a release silo
# Seeding is real v0 uploads, so the sizes cost their upload time: about 10 minutes per million objects here.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_WORK_PREFIX=silo-scale
# shellcheck source=bench/lib.sh
source bench/lib.sh
need_tools wrk
release_silo
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000 1000000)
results=$work/scale.json
for store in ${SCALE_STORES:-sqlite postgres}; do
    run=(python3 bench/scale.py --binary "$bin/silo" --store "$store" --sizes "${sizes[@]}"
        --seconds "${SCALE_SECONDS:-5}" --json "$results")
    if [ "$store" = postgres ]; then scripts/with-services.sh "${run[@]}"; else "${run[@]}"; fi
done
scripts/python-venv.sh .venv/bench-plot bench/plot-requirements.txt
.venv/bench-plot/bin/python bench/scale_plot.py "$results" bench/results/scale.svg
cp "$results" bench/results/scale.json   # overwrites the committed rows
echo "plot: bench/results/scale.svg; rows: bench/results/scale.json"
