#!/usr/bin/env bash
# The small-footprint table: the simulator's proxy-N workloads (a web-socket proxy's buffer sizes on 4
# FastThreadLocalThreads, each holding about N live buffers) for Slabwise's general pool (slabwise-dropin)
# and Netty's adaptive allocator with its magazines shared (adaptive-shared, as Netty's own simulator runs
# it), one JVM per seed, both allocators in that JVM one after the other. Committed memory at this size is
# a whole number of chunks and varies with thread timing, so one run says little: the table gives every
# seed's mean committed MiB (over the second half of the run), Slabwise / adaptive, and in how many seeds
# Slabwise committed at most what adaptive did.
# Usage: benchmarks/run-small-footprint.sh [seeds] [workloads]
#   seeds:     how many, from seed 1 (default 6; each seed about 10 s for the four default workloads)
#   workloads: comma-separated proxy-N (default proxy-128,proxy-256,proxy-512,proxy-1024)
# Environment: JAVA_HOME, JAR, JAVA_OPTS (see bench-common.sh; e.g. JAVA_OPTS=-Dslabwise.maxCachedSize=8192
# for a setting); ALLOCATORS (default "slabwise-dropin adaptive-shared": Slabwise first, the Netty allocator
# it is compared with second); MALLOC_MMAP_THRESHOLD_ (default 131072, as in docs/RESULTS.md; set it
# empty to run with glibc's own); OUT (default: a new folder under benchmarks/target/small-footprint).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benchmarks/bench-common.sh
source benchmarks/bench-common.sh
seeds=${1:-6}
workloads=${2:-proxy-128,proxy-256,proxy-512,proxy-1024}
[[ "$seeds" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [seeds] [workloads]" >&2; exit 2; }
read -r -a allocators <<< "${ALLOCATORS:-slabwise-dropin adaptive-shared}"
(( ${#allocators[@]} == 2 )) || { echo "ALLOCATORS must name two allocators: Slabwise's, then Netty's" >&2; exit 2; }
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
      --allocators "${allocators[0]},${allocators[1]}" --seed "$seed" --out "$out/seed-$seed" > "$log" 2>&1 \
      || { echo "the simulator failed for seed $seed, see $log" >&2; tail -20 "$log" >&2; exit 1; }
  echo "seed $seed done at load $(load1)"
done
echo
echo "mean committed MiB, ${allocators[0]} / ${allocators[1]}, per seed; at or below: seeds where ${allocators[0]} committed at most what ${allocators[1]} did"
echo
python3 - "$seeds" "$workloads" "${allocators[0]}" "${allocators[1]}" "$out" <<'PYTHON'
import sys

seeds, workloads, ours, theirs, out = int(sys.argv[1]), sys.argv[2].split(","), sys.argv[3], sys.argv[4], sys.argv[5]
committed = {}  # (workload, allocator, seed) -> committed MiB
for seed in range(1, seeds + 1):
    for line in open(f"{out}/seed-{seed}.log"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        # the proxy table's rows: workload, allocator, live, committed, ratio, peak, ended, reported, trimmed
        if len(cells) == 9 and cells[0].startswith("proxy-") and cells[1] in (ours, theirs):
            committed[(cells[0], cells[1], seed)] = float(cells[3])
print("| workload | " + " | ".join(f"seed {s}" for s in range(1, seeds + 1)) + " | at or below | mean ratio |")
print("|---" * (seeds + 3) + "|")
missing = 0
for workload in workloads:
    cells, below, ratios = [], 0, []
    for seed in range(1, seeds + 1):
        a, b = committed.get((workload, ours, seed)), committed.get((workload, theirs, seed))
        if a is None or b is None:
            cells.append("missing")
            missing += 1
            continue
        cells.append(f"{a:.2f} / {b:.2f}")
        below += a <= b
        ratios.append(a / b)
    mean = f"{sum(ratios) / len(ratios):.2f}" if ratios else "n/a"
    print(f"| {workload} | " + " | ".join(cells) + f" | {below} of {len(ratios)} | {mean} |")
if missing:
    sys.exit(f"{missing} results missing from the simulator's output (see the seed logs in {out})")
PYTHON
