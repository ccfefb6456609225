#!/usr/bin/env bash
# The small-footprint table: the simulator's proxy-N workloads (a web-socket proxy's buffer sizes on 4
# FastThreadLocalThreads, each holding about N live buffers) for Slabwise's general pool (slabwise-dropin),
# Netty's adaptive allocator with its magazines shared (adaptive-shared, as Netty's own simulator runs it),
# and Netty's pooled and adaptive allocators, one JVM per seed, the allocators in that JVM one after the
# other. Committed memory at this size is a whole number of chunks and varies with thread timing, so one run
# says little: the table gives every seed's mean committed MiB (over the second half of the run) of each
# allocator, in how many seeds Slabwise committed at most what adaptive-shared did, and the mean of
# Slabwise / each Netty allocator over the seeds.
# Usage: benchmarks/run-small-footprint.sh [seeds] [workloads]
#   seeds:     how many, from seed 1 (default 6; each seed about 10 s for the four default workloads)
#   workloads: comma-separated proxy-N (default proxy-128,proxy-256,proxy-512,proxy-1024)
# Environment: JAVA_HOME, JAR, JAVA_OPTS (see bench-common.sh; e.g. JAVA_OPTS=-Dslabwise.maxCachedSize=8192
# for a setting); ALLOCATORS (default "slabwise-dropin adaptive-shared pooled adaptive": Slabwise first, the
# Netty allocator the seeds are counted against second, then any others); MALLOC_MMAP_THRESHOLD_ (default 131072, as in docs/RESULTS.md; set it
# empty to run with glibc's own); OUT (default: a new folder under benchmarks/target/small-footprint).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benchmarks/bench-common.sh
source benchmarks/bench-common.sh
seeds=${1:-6}
workloads=${2:-proxy-128,proxy-256,proxy-512,proxy-1024}
[[ "$seeds" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [seeds] [workloads]" >&2; exit 2; }
read -r -a allocators <<< "${ALLOCATORS:-slabwise-dropin adaptive-shared pooled adaptive}"
(( ${#allocators[@]} >= 2 )) || { echo "ALLOCATORS must name Slabwise's allocator, then Netty's" >&2; exit 2; }
threshold=${MALLOC_MMAP_THRESHOLD_-131072}
out=${OUT:-benchmarks/target/small-footprint/$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"
major=$(java_major)
opts="-Xmx1g -XX:MaxDirectMemorySize=4g -Dslabwise.noGlibcWarning=true ${JAVA_OPTS:-}"
if (( major >= 22 )); then opts="$opts --enable-native-access=ALL-UNNAMED"; fi

describe_stack
echo "workloads: $workloads  allocators: ${allocators[*]}  seeds: 1-$seeds  MALLOC_MMAP_THRESHOLD_=${threshold:-unset}  JAVA_OPTS: ${JAVA_OPTS:-none}"
echo "results: $out"
for seed in $(seq 1 "$seeds"); do
  log="$out/seed-$seed.log"
  # shellcheck disable=SC2086 # the options are words
  env ${threshold:+MALLOC_MMAP_THRESHOLD_=$threshold} "$java" $opts -cp "$jar" \
      io.slabwise.benchmarks.simulator.FragmentationSimulator --workloads "$workloads" \
      --allocators "$(IFS=,; echo "${allocators[*]}")" --seed "$seed" --out "$out/seed-$seed" > "$log" 2>&1 \
      || { echo "the simulator failed for seed $seed, see $log" >&2; tail -20 "$log" >&2; exit 1; }
  echo "seed $seed done at load $(load1)"
done
echo
echo "mean committed MiB, $(IFS=/; echo "${allocators[*]}" | sed 's|/| / |g'), per seed; at or below: seeds where" \
     "${allocators[0]} committed at most what ${allocators[1]} did; mean ${allocators[0]} / each Netty allocator"
echo
python3 - "$seeds" "$workloads" "$out" "${allocators[@]}" <<'PYTHON'
import sys

seeds, workloads, out, allocators = int(sys.argv[1]), sys.argv[2].split(","), sys.argv[3], sys.argv[4:]
ours, theirs, netty = allocators[0], allocators[1], allocators[1:]
committed = {}  # (workload, allocator, seed) -> committed MiB
for seed in range(1, seeds + 1):
    for line in open(f"{out}/seed-{seed}.log"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        # the proxy table's rows: workload, allocator, live, committed, ratio, peak, ended, reported, trimmed
        if len(cells) == 9 and cells[0].startswith("proxy-") and cells[1] in allocators:
            committed[(cells[0], cells[1], seed)] = float(cells[3])
print("| workload | " + " | ".join(f"seed {s}" for s in range(1, seeds + 1)) + " | at or below "
      + theirs + " | " + " | ".join(f"{ours} / {n}" for n in netty) + " |")
print("|---" * (seeds + 2 + len(netty)) + "|")
missing = 0
for workload in workloads:
    cells, below, ratios = [], 0, {n: [] for n in netty}
    for seed in range(1, seeds + 1):
        figures = [committed.get((workload, a, seed)) for a in allocators]
        if None in figures:
            cells.append("missing")
            missing += 1
            continue
        cells.append(" / ".join(f"{v:.2f}" for v in figures))
        below += figures[0] <= figures[1]
        for n, v in zip(netty, figures[1:]):
            ratios[n].append(figures[0] / v)
    means = [f"{sum(r) / len(r):.2f}" if r else "n/a" for r in ratios.values()]
    print(f"| {workload} | " + " | ".join(cells) + f" | {below} of {len(ratios[theirs])} | "
          + " | ".join(means) + " |")
if missing:
    sys.exit(f"{missing} results missing from the simulator's output (see the seed logs in {out})")
PYTHON
