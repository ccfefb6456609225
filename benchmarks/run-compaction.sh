#!/usr/bin/env bash
# The compaction tables: what a compaction costs and what it gives back (CompactionBenchmark), and what
# background compaction costs a cache's readers and writers against the memory it saves
# (CompactionReadWriteBenchmark), Slabwise beside Netty's pooled and adaptive allocators in the same run.
#   1. cost:   one SlabwiseAllocator.compact() of a 64 MiB cache thinned by releasing 80% or 90% of its entries
#              at random, per layout (general pool, sequential allocator, block pool): time, bytes moved per
#              byte freed, MiB/s moved, heap bytes the compaction allocated (its thread's, read around the call:
#              -prof gc would count the setup's fill too).
#   2. memory: the committed bytes of the same thinned cache before and after the compaction (and a trim),
#              beside what Netty's allocators hold for it (they cannot compact).
#   3. readers and writers: a writer replacing hot entries and a reader reading any entry of a thinned 64 MiB
#              cache for 3 s iterations, Slabwise with background compaction off and on (64 MiB/s), Netty pooled
#              and adaptive: ops/s and their ratios, garbage per op (-prof gc), committed and resident bytes at
#              the end of each iteration.
# Every round runs both benchmarks once, every allocator in each (-f 1), the allocators in reverse order
# every other round, so that a machine whose load drifts does not always favour the same one. The tables give
# the median over rounds (and every iteration's figures for memory), the spread as [min-max] over rounds.
# Usage: benchmarks/run-compaction.sh [smoke|quick|full] [rounds]
#   smoke: compact -wi 1 -i 2; readers/writers -wi 1 -w 2s -i 1 -r 3s; 1 round          (about 1 minute)
#   quick: compact -wi 3 -i 10; readers/writers -wi 1 -w 3s -i 4 -r 3s; 2 rounds        (about 4 minutes)
#   full:  compact -wi 5 -i 20; readers/writers -wi 2 -w 3s -i 10 -r 3s; 3 rounds       (about 15 minutes)
# Environment: JAVA_HOME, JAR, JAVA_OPTS (see bench-common.sh); ALLOCATORS (readers/writers, default
# "slabwise slabwise_compacting pooled adaptive"); COMPACT_ALLOCATORS (cost and memory, default
# "slabwise pooled adaptive"); LAYOUTS (default "general,sequential,blocks"); FREED (cost, default "0.8,0.9");
# RW_FREED (readers/writers, default 0.85); HOT (readers/writers, the fraction of entries writers replace,
# default 0.1); CACHE_MIB (default 64); COMPACTION_MIBPS (default 64); THREAD_GROUPS (writers,readers,
# default 1,1); LEAK_DETECTION (default disabled); OUT (default: a new folder under benchmarks/target/compaction).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benchmarks/bench-common.sh
source benchmarks/bench-common.sh
mode=${1:-quick}
case $mode in
  smoke) compact_timing=(-wi 1 -i 2); rw_timing=(-wi 1 -w 2s -i 1 -r 3s); rounds=${2:-1} ;;
  quick) compact_timing=(-wi 3 -i 10); rw_timing=(-wi 1 -w 3s -i 4 -r 3s); rounds=${2:-2} ;;
  full) compact_timing=(-wi 5 -i 20); rw_timing=(-wi 2 -w 3s -i 10 -r 3s); rounds=${2:-3} ;;
  *) echo "usage: $0 [smoke|quick|full] [rounds]" >&2; exit 2 ;;
esac
allocators=${ALLOCATORS:-slabwise slabwise_compacting pooled adaptive}
compact_allocators=${COMPACT_ALLOCATORS:-slabwise pooled adaptive}
layouts=${LAYOUTS:-general,sequential,blocks}
freed=${FREED:-0.8,0.9}
rw_freed=${RW_FREED:-0.85}
hot=${HOT:-0.1}
cache_mib=${CACHE_MIB:-64}
mibps=${COMPACTION_MIBPS:-64}
groups=${THREAD_GROUPS:-1,1}
leak=${LEAK_DETECTION:-disabled}
out=${OUT:-benchmarks/target/compaction/$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"
# -jvmArgsAppend on the command line replaces the benchmarks' @Fork options: repeat them
jvm="-Xmx1g -Dslabwise.noGlibcWarning=true --enable-native-access=ALL-UNNAMED -Dio.netty.leakDetection.level=$leak"
jvm="$jvm -Djmh.executor=CUSTOM -Djmh.executor.class=io.slabwise.benchmarks.FastThreadLocalExecutor ${JAVA_OPTS:-}"

reverse() { local word result=""; for word in $1; do result="$word${result:+ $result}"; done; echo "$result"; }

describe_stack
echo "mode: $mode, $rounds round(s); cost: ${compact_timing[*]} -f 1, layouts $layouts, freed $freed;" \
     "readers/writers: ${rw_timing[*]} -f 1 -tg $groups -prof gc, freed $rw_freed, hot $hot, compaction $mibps MiB/s;" \
     "cache $cache_mib MiB; leak detection: $leak"
echo "results: $out"
: > "$out/loads"
for ((round = 1; round <= rounds; round++)); do
  order=$allocators
  compact_order=$compact_allocators
  if ((round % 2 == 0)); then
    order=$(reverse "$allocators")
    compact_order=$(reverse "$compact_allocators")
  fi
  echo "round$round $(load1)" >> "$out/loads"
  echo "== round $round: started at load $(load1); cost and memory ($compact_order)"
  "$java" -jar "$jar" 'CompactionBenchmark.compact$' -p allocator="${compact_order// /,}" -p layout="$layouts" \
      -p freed="$freed" -p cacheMiB="$cache_mib" -f 1 "${compact_timing[@]}" -foe true \
      -rf json -rff "$out/compact@round$round.json" -jvmArgsAppend "$jvm" > "$out/compact@round$round.log" 2>&1 \
      || { echo "JMH failed, see $out/compact@round$round.log" >&2; tail -20 "$out/compact@round$round.log" >&2; exit 1; }
  echo "== round $round: readers and writers ($order) at load $(load1)"
  "$java" -jar "$jar" 'CompactionReadWriteBenchmark.cache$' -p allocator="${order// /,}" -p freed="$rw_freed" \
      -p hotFraction="$hot" -p cacheMiB="$cache_mib" -p compactionMiBPerSecond="$mibps" -tg "$groups" -f 1 \
      "${rw_timing[@]}" -foe true -prof gc -rf json -rff "$out/rw@round$round.json" -jvmArgsAppend "$jvm" \
      > "$out/rw@round$round.log" 2>&1 \
      || { echo "JMH failed, see $out/rw@round$round.log" >&2; tail -20 "$out/rw@round$round.log" >&2; exit 1; }
done
echo "finished at load $(load1)"
echo

ALLOCATORS_ORDER="$allocators" COMPACT_ORDER="$compact_allocators" python3 - "$out" "$rounds" <<'PYTHON'
import json, os, statistics, sys

out, rounds = sys.argv[1], int(sys.argv[2])
MiB = float(1 << 20)
loads = dict(line.split()[:2] for line in open(os.path.join(out, "loads")) if len(line.split()) >= 2)

def load(name):
    return [json.load(open(os.path.join(out, "%s@round%d.json" % (name, r)))) for r in range(1, rounds + 1)]

def raw(result, metric):
    """Every iteration's value of a metric of one JMH result (all forks)."""
    m = result["primaryMetric"] if metric is None else result["secondaryMetrics"].get(metric)
    if m is None:
        m = result["secondaryMetrics"].get("\u00b7" + metric)
    return [v for fork in m["rawData"] for v in fork] if m else []

def med(values):
    return statistics.median(values) if values else float("nan")

def spread(values, fmt):
    values = [v for v in values if v == v]
    if not values:
        return "-"
    if len(values) == 1:
        return fmt % values[0]
    return (fmt + " [" + fmt + "-" + fmt + "]") % (med(values), min(values), max(values))

def millions(values):
    return spread([v / 1e6 for v in values], "%.2f")

# ---- 1 and 2: CompactionBenchmark
compact = load("compact")
rows, cells = [], {}
for r, results in enumerate(compact):
    for res in results:
        p = res["params"]
        key = (p["layout"], p["freed"])
        if key not in rows:
            rows.append(key)
        cells.setdefault((key, p["allocator"]), []).append(res)
compact_allocs = [a for a in os.environ.get("COMPACT_ORDER", "").split() if a]
slabwise = [a for a in compact_allocs if a.startswith("slabwise")]
netty = [a for a in compact_allocs if not a.startswith("slabwise")]

def it(key, alloc, metric):
    return [v for res in cells.get((key, alloc), []) for v in raw(res, metric)]

print("### Cost of one compaction (CompactionBenchmark, SingleShotTime, %d round(s), load at the start of each: %s)"
      % (rounds, ", ".join(loads.get("round%d" % r, "?") for r in range(1, rounds + 1))))
print()
print("Median over every measured compaction [min-max]. moved/freed = bytes copied per byte of chunks emptied;")
print("MiB/s = bytes moved / the pool's own time for the compaction. Garbage: heap bytes the compacting thread")
print("allocated during the call.")
print()
for a in slabwise:
    header = ["layout", "freed", "live MiB", "%s ms (JMH)" % a, "pool ms", "moved MiB", "entries moved", "freed MiB",
              "moved/freed", "MiB/s", "garbage KiB"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for key in rows:
        moved = it(key, a, "movedBytes")
        freed = it(key, a, "freedBytes")
        nanos = it(key, a, "compactionNanos")
        ratio = [m / f for m, f in zip(moved, freed) if f > 0]
        speed = [m / MiB / (n / 1e9) for m, n in zip(moved, nanos) if n > 0]
        garbage = it(key, a, "garbageBytes")
        print("| " + " | ".join([key[0], key[1], spread([v / MiB for v in it(key, a, "liveBytes")], "%.1f"),
                                 spread(it(key, a, None), "%.1f"), spread([n / 1e6 for n in nanos], "%.1f"),
                                 spread([m / MiB for m in moved], "%.1f"), spread(it(key, a, "movedEntries"), "%.0f"),
                                 spread([v / MiB for v in freed], "%.0f"), spread(ratio, "%.3f"), spread(speed, "%.0f"),
                                 spread([g / 1024 for g in garbage], "%.0f")]) + " |")
    print()

print("### Memory held for the same thinned cache (committed MiB; Netty: usedDirectMemory)")
print()
print("Slabwise before the compaction (after a trim), right after it, and after one more trim; the bytes of its chunks")
print("then (committed counts whole 32 MiB region groups); Netty's allocators after a trim of the thread cache (pooled).")
print("Median over every iteration [min-max]; ratio = Slabwise after the trim / the Netty allocator holding least.")
print()
header = ["layout", "freed", "live MiB"]
for a in slabwise:
    header += ["%s before" % a, "after", "after trim", "chunks after trim", "resident change"]
header += ["%s" % a for a in netty] + ["%s / best Netty" % a for a in slabwise]
print("| " + " | ".join(header) + " |")
print("|" + "---|" * len(header))
for key in rows:
    any_alloc = next(a for a in compact_allocs if (key, a) in cells)
    line = [key[0], key[1], spread([v / MiB for v in it(key, any_alloc, "liveBytes")], "%.1f")]
    for a in slabwise:
        rss = [(t - b) / MiB for t, b in zip(it(key, a, "residentTrimmed"), it(key, a, "residentBefore"))]
        line += [spread([v / MiB for v in it(key, a, m)], "%.0f") for m in ("committedBefore", "committedAfter",
                                                                              "committedTrimmed", "chunkBytesTrimmed")]
        line.append(spread(rss, "%+.0f"))
    held = {}
    for a in netty:
        held[a] = med([v / MiB for v in it(key, a, "committedTrimmed")])
        line.append(spread([v / MiB for v in it(key, a, "committedTrimmed")], "%.0f"))
    best = min(held, key=held.get) if held else None
    for a in slabwise:
        if best is None:
            line.append("n/a")
        else:
            line.append("**%.2f** (vs %s)" % (med([v / MiB for v in it(key, a, "committedTrimmed")]) / held[best], best))
    print("| " + " | ".join(line) + " |")
print()

# ---- 3: CompactionReadWriteBenchmark
rw = load("rw")
order = [a for a in os.environ.get("ALLOCATORS_ORDER", "").split() if a]
by = {}
for results in rw:
    for res in results:
        by.setdefault(res["params"]["allocator"], []).append(res)
order = [a for a in order if a in by] + [a for a in by if a not in order]
score = {a: [res["primaryMetric"]["score"] for res in by[a]] for a in order}     # per round, ops/s

def rw_it(a, metric):
    return [v for res in by[a] for v in raw(res, metric)]

def rw_round(a, metric):
    return [med(raw(res, metric)) for res in by[a]]

print("### Readers and writers (CompactionReadWriteBenchmark, %d round(s))" % rounds)
print()
print("ops/s: JMH score per round (millions), median [min-max over rounds]; reads and writes likewise; B/op: gc.alloc.rate.norm")
print("(B/op, median over rounds); memory at the end of each iteration (median [min-max] over every iteration);")
print("moved: MiB the background compactions of an iteration moved.")
print()
header = ["allocator", "M ops/s", "M reads/s", "M writes/s", "B/op", "committed MiB", "chunks MiB", "resident MiB",
          "compactions", "moved MiB", "compaction ms"]
print("| " + " | ".join(header) + " |")
print("|" + "---|" * len(header))
for a in order:
    chunks = rw_it(a, "chunkBytes")
    print("| " + " | ".join([a, millions(score[a]), millions(rw_round(a, "read")),
                             millions(rw_round(a, "write")), spread(rw_round(a, "gc.alloc.rate.norm"), "%.0f"),
                             spread([v / MiB for v in rw_it(a, "committedBytes")], "%.0f"),
                             spread([v / MiB for v in chunks], "%.0f") if a.startswith("slabwise") else "-",
                             spread([v / MiB for v in rw_it(a, "residentBytes")], "%.0f"),
                             spread(rw_it(a, "compactions"), "%.0f"),
                             spread([v / MiB for v in rw_it(a, "movedBytes")], "%.1f"),
                             spread([v / 1e6 for v in rw_it(a, "compactionNanos")], "%.0f")]) + " |")
print()

def ratio_rows():
    netty_rw = [a for a in order if not a.startswith("slabwise")]
    rows = []
    if "slabwise" in by and "slabwise_compacting" in by:
        rows.append(("slabwise_compacting / slabwise", "slabwise"))
    for a in order:
        if a.startswith("slabwise") and netty_rw:
            rows.append(("%s / best Netty" % a, None))
    return rows, netty_rw

rows_rw, netty_rw = ratio_rows()
print("Ratios per round (median [min-max] over rounds): ops/s above 1.0 is faster; committed below 1.0 holds less.")
print()
header = ["ratio", "ops/s", "reads/s", "writes/s", "committed"]
print("| " + " | ".join(header) + " |")
print("|" + "---|" * len(header))
for label, base in rows_rw:
    a = label.split(" / ")[0]
    cols = []
    for metric in (None, "read", "write"):
        per = []
        for r in range(min(len(by[a]), min(len(by[n]) for n in ([base] if base else netty_rw)))):
            mine = by[a][r]["primaryMetric"]["score"] if metric is None else med(raw(by[a][r], metric))
            if base:
                other = by[base][r]["primaryMetric"]["score"] if metric is None else med(raw(by[base][r], metric))
            else:
                other = max(by[n][r]["primaryMetric"]["score"] if metric is None else med(raw(by[n][r], metric))
                            for n in netty_rw)
            per.append(mine / other)
        cols.append(spread(per, "%.2f"))
    mem = []
    for r in range(min(len(by[a]), min(len(by[n]) for n in ([base] if base else netty_rw)))):
        mine = med(raw(by[a][r], "committedBytes"))
        other = med(raw(by[base][r], "committedBytes")) if base else min(med(raw(by[n][r], "committedBytes")) for n in netty_rw)
        mem.append(mine / other if other else float("nan"))
    cols.append(spread(mem, "%.2f"))
    print("| " + " | ".join(["**%s**" % label] + cols) + " |")
PYTHON
