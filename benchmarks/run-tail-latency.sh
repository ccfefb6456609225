#!/usr/bin/env bash
# The tail-latency table: io.slabwise.benchmarks.TailLatencyBenchmark times allocate+release of one 1 KiB
# direct buffer one operation at a time (System.nanoTime before and after each) on a plain platform
# thread (THREAD=plain, the default) or a Netty FastThreadLocalThread (THREAD=netty: an event loop's kind,
# where Netty's adaptive allocator gives the thread magazines of its own), for Slabwise (defaults, and recycleBuffers(true) when the jar has that AllocatorKind) and
# Netty's pooled and adaptive allocators, each in a fresh JVM (-Xmx1g, the JVM's default G1, Netty leak
# detection off), rounds interleaving the allocators so a slow spell of the shared machine does not fall
# on one of them only. Prints every run's line, then a markdown table of the median over the rounds of
# p50, p90, p99, p99.9, p99.99, max (ns), the garbage per operation and the young collections during the
# measured loop, and each Slabwise allocator's ratio to the best Netty allocator of each column. The
# "timer" row is what two back-to-back nanoTime calls measure: the floor under every figure.
# Usage: benchmarks/run-tail-latency.sh [rounds] [operations] [size]
#   defaults: 3 rounds of 3,000,000 measured operations (after WARMUP_ROUNDS x 200,000 warm-up ones,
#   default 10) at 1024 bytes;
#   about 10 s per JVM, 2 minutes in all. For a smoke run: benchmarks/run-tail-latency.sh 1 300000
# Environment: JAVA_HOME, JAR, JAVA_OPTS (see bench-common.sh); ALLOCATORS; LEAK_DETECTION (default disabled);
#   WARMUP_ROUNDS (default 10; 150 lets a garbage-making allocator's heap settle before the timed loop);
#   THREAD (plain or netty, default plain).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benchmarks/bench-common.sh
source benchmarks/bench-common.sh
rounds=${1:-3}
ops=${2:-3000000}
size=${3:-1024}
allocators=${ALLOCATORS:-$(default_allocators)}
leak=${LEAK_DETECTION:-disabled}
warmup_rounds=${WARMUP_ROUNDS:-10}
thread=${THREAD:-plain}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
opts="-Xmx1g -Dslabwise.noGlibcWarning=true --enable-native-access=ALL-UNNAMED -Dio.netty.leakDetection.level=$leak ${JAVA_OPTS:-}"

describe_stack
echo "options: $opts"
echo "rounds=$rounds operations=$ops (after $warmup_rounds x 200000 warm-up) size=$size thread=$thread allocators: $allocators"
for round in $(seq 1 "$rounds"); do
  for allocator in $allocators; do
    load=$(load1)
    # shellcheck disable=SC2086 # opts is a list of options
    "$java" $opts -cp "$jar" io.slabwise.benchmarks.TailLatencyBenchmark \
        --allocator "$allocator" --size "$size" --ops "$ops" --warmup-rounds "$warmup_rounds" --thread "$thread" > "$work/out" 2> "$work/err" \
        || { echo "round $round $allocator failed:" >&2; cat "$work/err" >&2; exit 1; }
    sed "s/^/[$allocator] /" "$work/err" >> "$work/stderr"
    grep '^figures=' "$work/out" | sed "s/^/round=$round load=$load /" >> "$work/results"
    echo "round $round load $load: $(grep '^figures=allocateRelease' "$work/out" | cut -d' ' -f2-)"
  done
done
echo "finished at load $(load1)"
echo
echo "allocate+release of $size B, one at a time on a $thread thread: median over $rounds rounds, ns (timer row: nanoTime's own cost)"
echo
ALLOCATORS_ORDER="$allocators" python3 - "$work/results" <<'PYTHON'
import os, statistics, sys

runs = []
for line in open(sys.argv[1]):
    runs.append(dict(field.split("=", 1) for field in line.split()))
allocators = os.environ["ALLOCATORS_ORDER"].split()
columns = ["p50", "p90", "p99", "p99.9", "p99.99", "max", "bytesPerOp", "gcCount"]

def median(figures, allocator, column):
    values = [float(r[column]) for r in runs if r["figures"] == figures and r["allocator"] == allocator and column in r]
    return statistics.median(values) if values else None

def show(value):
    return "-" if value is None else ("%.0f" % value if value >= 10 or value == int(value) else "%.1f" % value)

print("| allocator | " + " | ".join(columns) + " | loads |")
print("|---|" + "---|" * (len(columns) + 1))
medians = {}
for a in allocators:
    medians[a] = [median("allocateRelease", a, c) for c in columns]
    loads = " ".join(r["load"] for r in runs if r["figures"] == "allocateRelease" and r["allocator"] == a)
    print("| %s | %s | %s |" % (a, " | ".join(show(v) for v in medians[a]), loads))
timer = [median("timer", a, c) for a in allocators for c in columns[:6]]
print("| timer | %s | | | |" % " | ".join(show(statistics.median([v for v in timer[i::6] if v is not None]))
                                        for i in range(6)))
netty = [a for a in allocators if not a.startswith("slabwise")]
for a in allocators:
    if not a.startswith("slabwise"):
        continue
    cells = []
    for i, c in enumerate(columns[:6]):
        best = min((medians[n][i] for n in netty if medians[n][i] is not None), default=None)
        mine = medians[a][i]
        cells.append("n/a" if best in (None, 0) or mine is None else "**%.2f**" % (mine / best))
    print("| %s / best Netty | %s | | | |" % (a, " | ".join(cells)))
PYTHON
if [[ -s $work/stderr ]]; then
  echo
  echo "standard error of the JVMs:"
  sort "$work/stderr" | uniq -c | sort -rn | head -20
fi
