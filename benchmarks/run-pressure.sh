#!/usr/bin/env bash
# The memory-pressure table: a log cache (FIFO, 1 KiB-256 KiB records) and a block cache (LRU, 1 MiB blocks) fill
# an allocator while readers hit them on seeded key distributions, then network buffers burst to 25% and to 50% of
# the ceiling, each held a while, and drop (io.slabwise.benchmarks.pressure.PressureWorkload; time in steps, see its
# javadoc). Five configurations, each in a JVM of its own per round, in reverse order every other round:
#   shrinkers: Slabwise with a ceiling and the default PressureConfig, both caches registered as shrinkers
#   limitonly: the same with PressureConfig.background(false): only allocations at the ceiling ask the caches
#   budgets:   Slabwise with fixed quotas (log cache 2/6, block cache 1/6, network 1/6 of the ceiling), no shrinkers
#   pooled, adaptive: Netty's allocators, bounded only by the caches' own budgets (those of shrinkers: 2/3 and 1/3
#              of the ceiling); the ceiling is read as the container's limit against their peak direct memory
# Per configuration: network allocations refused; bytes the caches shed against those the burst needed from them;
# the hit rate before and during the bursts and the steps after the drop until it is back within 5 points; the
# count and wall-clock p50/p99/max of the network allocations that shrank; peak committed memory (Netty: its
# metric's usedDirectMemory) against the ceiling, peak JVM direct memory and RSS. The table gives the median and
# [min-max] over the rounds; round r runs seed r (the memory figures of one seed repeat exactly, the times do not).
# Usage: benchmarks/run-pressure.sh [quick|full] [rounds]
#   quick: a 256 MiB ceiling, phases of 500 steps, 1 round (CI's smoke run: 20-30 s, 5 s of CPU)
#   full:  a 1,536 MiB ceiling, phases of 2,000 steps, 3 rounds (1.5-5 minutes a round)
# Exits with status 1 when Slabwise with shrinkers (either kind) refused a network allocation, or a JVM failed.
# Environment: JAVA_HOME, JAR, JAVA_OPTS (see bench-common.sh); CEILING_MIB; CONFIGS (default
# "shrinkers limitonly budgets pooled adaptive"); DIRECT_CAP_MIB (-XX:MaxDirectMemorySize, default 4 x ceiling + 1 GiB: an
# allocator that passes it ends its run with an OutOfMemoryError, reported); OUT (default: a new folder under
# benchmarks/target/pressure).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benchmarks/bench-common.sh
source benchmarks/bench-common.sh
mode=${1:-full}
case $mode in
  quick) ceiling=${CEILING_MIB:-256}; rounds=${2:-1}; flags=(--quick) ;;
  full) ceiling=${CEILING_MIB:-1536}; rounds=${2:-3}; flags=() ;;
  *) echo "usage: $0 [quick|full] [rounds]" >&2; exit 2 ;;
esac
configs=${CONFIGS:-shrinkers limitonly budgets pooled adaptive}
cap=${DIRECT_CAP_MIB:-$((4 * ceiling + 1024))}
out=${OUT:-benchmarks/target/pressure/$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"
rm -f "$out/results.csv"
jvm=(-Xmx1g "-XX:MaxDirectMemorySize=${cap}m" -Dio.netty.leakDetection.level=disabled -Dslabwise.noGlibcWarning=true
     --enable-native-access=ALL-UNNAMED)
# shellcheck disable=SC2206
extra=(${JAVA_OPTS:-})

reverse() { local word result=""; for word in $1; do result="$word${result:+ $result}"; done; echo "$result"; }

describe_stack
echo "mode: $mode, ceiling $ceiling MiB, $rounds round(s), configurations: $configs, direct memory cap $cap MiB"
echo "results: $out"
status=0
start=$(date +%s)
for ((round = 1; round <= rounds; round++)); do
  order=$configs
  ((round % 2 == 0)) && order=$(reverse "$configs")
  for config in $order; do
    echo "== round $round, $config (seed $round), load $(load1)"
    if ! "$java" "${jvm[@]}" "${extra[@]}" -cp "$jar" io.slabwise.benchmarks.pressure.PressureWorkload "${flags[@]}" \
        --ceiling-mib "$ceiling" --configs "$config" --seed "$round" --csv "$out/results.csv" \
        --out "$out/round$round-$config.md" > "$out/round$round-$config.log" 2>&1; then
      status=1
      echo "FAILED: round $round, $config (see $out/round$round-$config.log):" >&2
      tail -5 "$out/round$round-$config.log" >&2
    fi
    grep -E '^(slabwise|pooled|adaptive)' "$out/round$round-$config.log" | grep -v '^slabwise-[a-z-]*: Pressure' || true
  done
done
echo "finished at load $(load1), $(($(date +%s) - start)) s"
echo

python3 - "$out/results.csv" "$ceiling" "$rounds" > "$out/table.md" <<'PYTHON'
import csv, statistics, sys

rows = list(csv.DictReader(open(sys.argv[1])))
ceiling, rounds = float(sys.argv[2]), int(sys.argv[3])
order = []
by = {}
for r in rows:
    if r["config"] not in by:
        order.append(r["config"])
    by.setdefault(r["config"], []).append(r)

def nums(rs, col):
    out = []
    for r in rs:
        try:
            v = float(r[col])
            if v == v:
                out.append(v)
        except (ValueError, KeyError):
            pass
    return out

def show(fmt, x):
    text = fmt % x
    return text[1:] if text.startswith("-") and float(text) == 0 else text   # no "-0"

def cell(rs, col, fmt="%.0f"):
    v = nums(rs, col)
    if not v:
        return "-"
    m = statistics.median(v)
    if len(v) == 1 or min(v) == max(v):
        return show(fmt, m)
    return "%s [%s-%s]" % (show(fmt, m), show(fmt, min(v)), show(fmt, max(v)))

def ratio(rs, a, b):
    v = [float(r[a]) / float(r[b]) for r in rs if r[a] not in ("", "-") and r[b] not in ("", "-") and float(r[b]) > 0]
    if not v:
        return ""
    m = statistics.median(v)
    return " (%.2f%s)" % (m, "" if len(v) == 1 else " [%.2f-%.2f]" % (min(v), max(v)))

print("Ceiling %.0f MiB; median [min-max] over %d round(s), seeds 1-%d. Memory in MiB, latencies in us (wall clock),"
      " recovery in steps after the drop." % (ceiling, rounds, rounds))
print()
header = ["configuration", "network refused (of allocations)", "shed / needed at 25% (ratio)", "shed / needed at 50% (ratio)",
          "hit % before", "hit % at 25%", "hit % at 50%", "steps back within 5 points", "allocations that shrank",
          "their p50 / p99 / max us", "peak committed", "peak / ceiling", "peak JVM direct", "peak RSS", "seconds"]
print("| " + " | ".join(header) + " |")
print("|" + "---|" * len(header))
for c in order:
    rs = by[c]
    peaks = [float(r["peak_mib"]) / ceiling for r in rs]
    peak_ratio = "%.2f" % statistics.median(peaks) + ("" if len(peaks) == 1 or min(peaks) == max(peaks)
                                                        else " [%.2f-%.2f]" % (min(peaks), max(peaks)))
    failed = sum(1 for r in rs if r.get("failure"))
    line = [c + (" (%d run(s) ended by OutOfMemoryError)" % failed if failed else ""),
            cell(rs, "refused") + " (of " + cell(rs, "network_allocs") + ")",
            cell(rs, "shed25_mib") + " / " + cell(rs, "needed25_mib") + ratio(rs, "shed25_mib", "needed25_mib"),
            cell(rs, "shed50_mib") + " / " + cell(rs, "needed50_mib") + ratio(rs, "shed50_mib", "needed50_mib"),
            cell(rs, "hit_before", "%.1f"), cell(rs, "hit25", "%.1f"), cell(rs, "hit50", "%.1f"),
            cell(rs, "recovery_steps"), cell(rs, "shrink_count"),
            " / ".join(cell(rs, k, "%.0f") for k in ("shrink_p50_us", "shrink_p99_us", "shrink_max_us")),
            cell(rs, "peak_mib"), peak_ratio, cell(rs, "jvm_direct_peak_mib"), cell(rs, "resident_peak_mib"),
            cell(rs, "seconds", "%.1f")]
    print("| " + " | ".join(line) + " |")
PYTHON
cat "$out/table.md"
echo
echo "Per run (tables, the pool's PressureStats, the first refusals): $out/round*.md; every row: $out/results.csv"
awk -F, 'NR > 1 && $1 == "slabwise-shrinkers" && $3 > 0 {bad = 1} END {exit bad}' "$out/results.csv" \
  || { echo "FAILED: Slabwise with shrinkers refused network allocations"; status=1; }
exit $status
