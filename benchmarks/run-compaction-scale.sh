#!/usr/bin/env bash
# What one compaction costs against the size of the cache (CompactionScaleBenchmark, Slabwise only: Netty's
# allocators cannot compact), with an owner that walks all its entries and asks the evacuation about each, and
# one that files its entries by region key and looks only at those under the keys being emptied. Every
# iteration fills a fresh allocator's cache with CACHE_MIB of 1-16 KiB entries and releases 90% of the entries
# of a fixed 32 MiB window from the middle of the fill, so that what must move is the same at every size; the
# measured operation is one SlabwiseAllocator.compact(). A round runs every size, owner and layout once (-f 1
# per combination), the owners in reverse order every other round; the tables give the median over every
# measured compaction of all rounds [min-max], and the walk/keyed ratios per round, median [min-max] over rounds.
# Round 1 also fills and thins the same caches on Netty's pooled and adaptive allocators for the memory they
# hold (NETTY=no skips it).
# Usage: benchmarks/run-compaction-scale.sh [smoke|quick|full] [rounds]
#   smoke: -wi 1 -i 2, 64 and 256 MiB, general pool, 1 round              (about 1 minute)
#   quick: -wi 2 -i 5, 64, 256 and 1024 MiB, general and sequential, 2 rounds   (about 8 minutes)
#   full:  -wi 3 -i 10, the same, 3 rounds                                  (about 20 minutes)
# Environment: JAVA_HOME, JAR, JAVA_OPTS (see bench-common.sh); CACHE_MIB (comma-separated, e.g. 64,1024,4096;
# the fork's MaxDirectMemorySize is twice the largest plus 1 GiB); LAYOUTS (general,sequential); OWNERS
# (walk,keyed); THIN_MIB (32); FREED (0.9); SIZES_KIB (1-16); CHECK (warmup: the keyed owner proves its filing
# in warm-up iterations; always; never); NETTY (yes); REGION_GROUPS (no: MALLOC_MMAP_THRESHOLD_ is 131072
# unless set, so direct chunks stand alone and a compaction empties the thinned chunks only; yes: the
# variable is removed, and on glibc direct chunks come in 32 MiB region groups, which a compaction empties
# whole, dense chunks too); OUT (default: a new folder under benchmarks/target/compaction-scale).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benchmarks/bench-common.sh
source benchmarks/bench-common.sh
mode=${1:-quick}
case $mode in
  smoke) timing=(-wi 1 -i 2); rounds=${2:-1}; sizes=${CACHE_MIB:-64,256}; layouts=${LAYOUTS:-general} ;;
  quick) timing=(-wi 2 -i 5); rounds=${2:-2}; sizes=${CACHE_MIB:-64,256,1024}; layouts=${LAYOUTS:-general,sequential} ;;
  full) timing=(-wi 3 -i 10); rounds=${2:-3}; sizes=${CACHE_MIB:-64,256,1024}; layouts=${LAYOUTS:-general,sequential} ;;
  *) echo "usage: $0 [smoke|quick|full] [rounds]" >&2; exit 2 ;;
esac
owners=${OWNERS:-walk,keyed}
thin=${THIN_MIB:-32}
freed=${FREED:-0.9}
entry_kib=${SIZES_KIB:-1-16}
check=${CHECK:-warmup}
netty=${NETTY:-yes}
if [[ ${REGION_GROUPS:-no} == yes ]]; then
  unset MALLOC_MMAP_THRESHOLD_
else
  export MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-131072}
fi
out=${OUT:-benchmarks/target/compaction-scale/$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"
largest=$(tr ',' '\n' <<< "$sizes" | sort -n | tail -1)
# -jvmArgsAppend on the command line replaces the benchmark's @Fork options: repeat them
jvm="-Xmx1g -XX:MaxDirectMemorySize=$((2 * largest + 1024))m -Dslabwise.noGlibcWarning=true --enable-native-access=ALL-UNNAMED"
jvm="$jvm -Djmh.executor=CUSTOM -Djmh.executor.class=io.slabwise.benchmarks.FastThreadLocalExecutor ${JAVA_OPTS:-}"

reverse() { local word result=""; for word in ${1//,/ }; do result="$word${result:+,$result}"; done; echo "$result"; }

describe_stack
echo "mode: $mode, $rounds round(s), ${timing[*]} -f 1; cache $sizes MiB of $entry_kib KiB entries, $freed of a" \
     "$thin MiB window released; layouts $layouts; owners $owners; check $check;" \
     "MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-(unset)}"
echo "results: $out"
params=(-p cacheMiB="$sizes" -p layout="$layouts" -p thinMiB="$thin" -p freed="$freed" -p sizesKiB="$entry_kib")
: > "$out/loads"
for ((round = 1; round <= rounds; round++)); do
  order=$owners
  ((round % 2 == 0)) && order=$(reverse "$owners")
  echo "round$round $(load1)" >> "$out/loads"
  echo "== round $round: started at load $(load1); owners $order"
  "$java" -jar "$jar" 'CompactionScaleBenchmark.compact$' -p allocator=slabwise -p owner="$order" -p check="$check" \
      "${params[@]}" -f 1 "${timing[@]}" -foe true -rf json -rff "$out/scale@round$round.json" -jvmArgsAppend "$jvm" \
      > "$out/scale@round$round.log" 2>&1 \
      || { echo "JMH failed, see $out/scale@round$round.log" >&2; tail -20 "$out/scale@round$round.log" >&2; exit 1; }
done
if [[ $netty == yes ]]; then
  echo "== Netty pooled and adaptive, the same fill and thinning (memory only) at load $(load1)"
  "$java" -jar "$jar" 'CompactionScaleBenchmark.compact$' -p allocator=pooled,adaptive -p owner=walk -p check=never \
      "${params[@]}" -p layout=general -f 1 -wi 0 -i 1 -foe true -rf json -rff "$out/netty.json" -jvmArgsAppend "$jvm" \
      > "$out/netty.log" 2>&1 \
      || { echo "JMH failed, see $out/netty.log" >&2; tail -20 "$out/netty.log" >&2; exit 1; }
fi
echo "finished at load $(load1)"
echo

python3 - "$out" "$rounds" <<'PYTHON'
import json, os, statistics, sys

out, rounds = sys.argv[1], int(sys.argv[2])
MiB = float(1 << 20)
loads = dict(line.split()[:2] for line in open(os.path.join(out, "loads")) if len(line.split()) >= 2)
load_list = ", ".join(loads.get("round%d" % r, "?") for r in range(1, rounds + 1))

def raw(result, metric):
    m = result["primaryMetric"] if metric is None else result["secondaryMetrics"].get(metric)
    return [v for fork in m["rawData"] for v in fork] if m else []

def med(values):
    return statistics.median(values) if values else float("nan")

def spread(values, fmt):
    values = [v for v in values if v == v]
    if not values:
        return "-"
    if len(values) == 1 or min(values) == max(values):
        return fmt % values[0]
    return (fmt + " [" + fmt + "-" + fmt + "]") % (med(values), min(values), max(values))

cells, rows = {}, []   # (layout, cacheMiB, owner) -> [result per round]
for r in range(1, rounds + 1):
    for res in json.load(open(os.path.join(out, "scale@round%d.json" % r))):
        p = res["params"]
        key = (p["layout"], int(p["cacheMiB"]), p["owner"])
        cells.setdefault(key, []).append((r, res))
        if key not in rows:
            rows.append(key)
rows.sort(key=lambda k: (k[0], k[1], k[2] != "walk"))

def it(key, metric, scale=1.0):
    return [v / scale for _, res in cells.get(key, []) for v in raw(res, metric)]

def looking(key):
    return [(o - m) / 1e6 for o, m in zip(it(key, "ownerNanos"), it(key, "movingNanos"))]

print("### One compaction against the size of the cache (CompactionScaleBenchmark, SingleShotTime, %d round(s),"
      " load at the start of each: %s)" % (rounds, load_list))
print()
print("Median over every measured compaction of all rounds [min-max]. time: JMH's; owner: the relocator's call; looking:")
print("the owner's time less what it spent on entries that moved (copy, release of the old buffer, which gives back a")
print("chunk its last entry leaves, re-filing); looked at: entries the owner asked the evacuation about; freed: bytes")
print("that left the pool; garbage: heap bytes the compacting thread allocated during the call.")
print()
header = ["layout", "cache MiB", "owner", "entries", "load", "time ms", "owner ms", "looking ms", "looked at",
          "moved", "moved MiB", "freed MiB", "chunks emptied", "keys", "garbage KiB"]
print("| " + " | ".join(header) + " |")
print("|" + "---|" * len(header))
for key in rows:
    print("| " + " | ".join([key[0], str(key[1]), key[2], spread(it(key, "entries"), "%.0f"),
                             ", ".join(loads.get("round%d" % r, "?") for r, _ in cells[key]),
                             spread(it(key, None), "%.1f"), spread(it(key, "ownerNanos", 1e6), "%.1f"),
                             spread(looking(key), "%.2f"), spread(it(key, "lookedAt"), "%.0f"),
                             spread(it(key, "movedEntries"), "%.0f"), spread(it(key, "movedBytes", MiB), "%.1f"),
                             spread(it(key, "freedBytes", MiB), "%.0f"), spread(it(key, "chunksEvacuated"), "%.0f"),
                             spread(it(key, "regionKeys"), "%.0f"), spread(it(key, "garbageBytes", 1024), "%.0f")]) + " |")
print()

def per_round(key, f):
    return {r: f(res) for r, res in cells.get(key, [])}

print("Walk over keyed, per round (each the ratio of the two owners' medians in that round), median [min-max] over rounds;")
print("looking ns/entry: the walking owner's looking time per entry it looked at.")
print()
header = ["layout", "cache MiB", "load", "time walk/keyed", "owner walk/keyed", "looking walk/keyed", "walk looking ns/entry",
          "keyed time / smallest cache's"]
print("| " + " | ".join(header) + " |")
print("|" + "---|" * len(header))
pairs = sorted({(k[0], k[1]) for k in rows})
smallest = {}
for layout, size in pairs:
    smallest.setdefault(layout, size)
for layout, size in pairs:
    walk, keyed = (layout, size, "walk"), (layout, size, "keyed")
    if walk not in cells or keyed not in cells:
        continue
    def ratio(f):
        w, k = per_round(walk, f), per_round(keyed, f)
        return [w[r] / k[r] for r in w if r in k and k[r] > 0]
    look = lambda res: med([(o - m) / 1e6 for o, m in zip(raw(res, "ownerNanos"), raw(res, "movingNanos"))])
    per_entry = [(o - m) / n for o, m, n in zip(it(walk, "ownerNanos"), it(walk, "movingNanos"), it(walk, "lookedAt")) if n]
    base = per_round((layout, smallest[layout], "keyed"), lambda res: med(raw(res, None)))
    mine = per_round(keyed, lambda res: med(raw(res, None)))
    growth = [mine[r] / base[r] for r in mine if r in base and base[r] > 0]
    print("| " + " | ".join([layout, str(size), ", ".join(loads.get("round%d" % r, "?") for r, _ in cells[walk]),
                             spread(ratio(lambda res: med(raw(res, None))), "%.2f"),
                             spread(ratio(lambda res: med(raw(res, "ownerNanos"))), "%.2f"),
                             spread(ratio(look), "%.1f"), spread(per_entry, "%.0f"), spread(growth, "%.2f")]) + " |")
print()

netty_path = os.path.join(out, "netty.json")
if os.path.exists(netty_path):
    netty = {}
    for res in json.load(open(netty_path)):
        p = res["params"]
        netty[(int(p["cacheMiB"]), p["allocator"])] = raw(res, "committedTrimmed")
    print("### Memory held for the same fill and thinning (general pool; MiB)")
    print()
    print("Slabwise committed before the compaction (after a trim) and after it and one more trim (every iteration of")
    print("both owners); Netty's usedDirectMemory after the thinning and a trim of the pooled allocator's thread cache")
    print("(round 1, one iteration each): they cannot compact.")
    print()
    header = ["cache MiB", "live MiB", "Slabwise before", "Slabwise after", "pooled", "adaptive"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for layout, size in pairs:
        if layout != "general":
            continue
        keys = [k for k in rows if k[0] == layout and k[1] == size]
        col = lambda m: [v / MiB for k in keys for v in it(k, m)]
        print("| " + " | ".join([str(size), spread(col("liveBytes"), "%.0f"), spread(col("committedBefore"), "%.0f"),
                                 spread(col("committedTrimmed"), "%.0f"),
                                 spread([v / MiB for v in netty.get((size, "pooled"), [])], "%.0f"),
                                 spread([v / MiB for v in netty.get((size, "adaptive"), [])], "%.0f")]) + " |")
PYTHON
