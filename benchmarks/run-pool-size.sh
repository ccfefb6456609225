#!/usr/bin/env bash
# Pool size: Slabwise against Netty's pooled allocator when the pool holds 1 GiB of live buffers and when it
# holds hundreds of GiB (io.slabwise.benchmarks.poolsize.PoolSizeBenchmark, whose javadoc says what is
# measured). Chunks are mapped and never touched, so a pool of 256 GiB runs on a small machine: Slabwise's
# chunks are mmap'ed (Java 22 or later, with a jar built there), Netty's come from malloc as direct buffers
# without a cleaner. One JVM per pool size and round runs both allocators one after the other, in an order
# that alternates over the rounds. Prints every run's lines, then tables: medians with the [min-max] over
# the rounds and the ratio of Slabwise's median to Netty's (lower is better for every figure).
# Usage: benchmarks/run-pool-size.sh [smoke|quick|full|POOL_GIBS] [rounds]
#   smoke  1 GiB, 256 KiB buffers only, 1 round, fewer latency samples (under 30 s)
#   quick  1 and 16 GiB
#   full   1, 16, 64 and 256 GiB (the default), then the mapping trials once (see TRIAL)
#   POOL_GIBS a comma-separated list of pool sizes in GiB, e.g. 1,16,128
# Pools of more than 60,000 chunks of 4 MiB (above 234 GiB) use 16 MiB chunks, for both allocators, as such a
# pool would be set up (the kernel's default limit of mappings per process, vm.max_map_count, is 65,530; the
# trials show how many mappings chunks really take); CHUNK_SIZE sets the chunk size of every pool instead. Buffers: 256 KiB, 64 KiB and, up to 16 GiB, 4 KiB (SIZES sets them
# for every pool, the first one being the one the probes run after).
# Environment: ROUNDS (3, or the second argument); WARMUP_MAX_GIB (64): the warm-up fill (repeated until 250,000 buffers) is the whole pool up
# to that many GiB; THREADS (8; 0 for no fill by several threads); HEAP (4g); LATENCY_OPS (100000: the p99 of
# 20,000 operations moved between two modes, about 0.5 and 2.5 µs, from one run to the next, for both allocators);
# TRIAL (yes in full mode, else no): the mapping trials, each one JVM with no warm-up, whose fill ends by
# releasing every other chunk's buffers (--holes), reported on their own and never changing the exit status:
# 256 GiB of 256 KiB buffers in 4 MiB chunks (65,536 chunks), and 12 GiB of 64 KiB buffers in 64 KiB chunks
# (196,608 chunks: every other one released cuts their mappings into more than the kernel allows);
# TIMEOUT (7200 s per JVM); KEEP_GOING (no: the first failed run stops the script, after its tables);
# JAVA_OPTS, added to every JVM's options; and those of bench-common.sh (JAVA_HOME, JAR).
# Exit status: 0, or 1 when a run failed (a step threw, the JVM exited with an error or timed out).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench-common.sh
source benchmarks/bench-common.sh

mode=${1:-full}
rounds=${2:-${ROUNDS:-3}}
latency_ops=${LATENCY_OPS:-100000}
trial=no
case $mode in
  smoke) pools=1; rounds=${2:-1}; latency_ops=${LATENCY_OPS:-5000}; default_sizes=262144 ;;
  quick) pools=1,16 ;;
  full) pools=1,16,64,256; trial=yes ;;
  *)
    [[ $mode =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] \
        || { echo "usage: $0 [smoke|quick|full|POOL_GIBS] [rounds]" >&2; exit 2; }
    pools=$mode ;;
esac
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [smoke|quick|full|POOL_GIBS] [rounds]" >&2; exit 2; }
trial=${TRIAL:-$trial}
threads=${THREADS:-8}
heap=${HEAP:-4g}
warmup_max=${WARMUP_MAX_GIB:-64}
major=$(java_major)

# The options every JVM gets: Netty's direct buffers without a cleaner (Unsafe, reflective access), native
# access for Slabwise's mmap, leak detection off, a modest heap.
opts=(-Xmx"$heap" --enable-native-access=ALL-UNNAMED -Dio.netty.tryReflectionSetAccessible=true
      --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/jdk.internal.misc=ALL-UNNAMED
      -Dio.netty.leakDetection.level=disabled)
if (( major >= 23 )); then
  opts+=(--sun-misc-unsafe-memory-access=allow) # Netty 4.2 uses Unsafe on Java 24+ only when allowed
fi
if (( major < 22 )); then
  echo "note: Java $major has no mapped chunks for Slabwise: pools above 2 GiB are refused (run on Java 22+ with a jar built there)"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results=$work/results
touch "$results" "$work/stderr" "$work/commands"

describe_stack
echo "mode: $mode  pools (GiB): $pools  rounds: $rounds  threads: $threads  heap: -Xmx$heap  warm-up: the whole pool up to $warmup_max GiB"

chunk_for() { # pool GiB -> chunk size in bytes
  if [[ -n ${CHUNK_SIZE:-} ]]; then echo "$CHUNK_SIZE"
  elif (( $1 * 256 > 60000 )); then echo $((16 << 20))
  else echo $((4 << 20)); fi
}
sizes_for() { # pool GiB -> buffer sizes
  if [[ -n ${SIZES:-${default_sizes:-}} ]]; then echo "${SIZES:-$default_sizes}"
  elif (( $1 <= 16 )); then echo 262144,65536,4096
  else echo 262144,65536; fi
}

failed_runs=0
# run LABEL ROUND POOL ALLOCATORS ARGS...: one JVM; its lines go to the results, tagged with the label, round and load
run() {
  local label=$1 round=$2 pool=$3 allocators=$4; shift 4
  local out=$work/out err=$work/err rc=0 load direct
  load=$(load1)
  direct=$((pool + pool / 4 + 2))
  local cmd=("$java" "${opts[@]}" -XX:MaxDirectMemorySize="${direct}g" -XX:ErrorFile="$work/hs_err_%p.log")
  # shellcheck disable=SC2206 # JAVA_OPTS is a list of options
  cmd+=(${JAVA_OPTS:-} -cp "$jar" io.slabwise.benchmarks.poolsize.PoolSizeBenchmark --pool-gib "$pool"
        --allocators "$allocators" "$@")
  grep -qxF "$label $pool: ${cmd[*]}" "$work/commands" || echo "$label $pool: ${cmd[*]}" >> "$work/commands"
  echo "[$label round $round, $pool GiB, $allocators, load $load] $(date -u +%H:%M:%S)"
  timeout "${TIMEOUT:-7200}" "${cmd[@]}" > "$out" 2> "$err" || rc=$?
  sed "s/^/  /" "$out"
  grep -v -e 'io\.slabwise\.MemoryPool close$' -e 'pool closed with live buffers' "$err" \
      | sed "s/^/[$label $pool GiB] /" >> "$work/stderr" || true
  sed "s/^/label=$label round=$round load=$load /" "$out" >> "$results"
  # a chunk source that fails to give a region back is logged, not thrown (the region stays mapped)
  echo "label=$label round=$round load=$load warnings poolGiB=$pool" \
      "regionsNotGivenBack=$(grep -c 'failed to release a region' "$err" || true)" >> "$results"
  local why=""
  if (( rc == 124 )); then why="timeout after ${TIMEOUT:-7200} s"
  elif (( rc != 0 )); then why="exit $rc"; fi
  if ls "$work"/hs_err_*.log > /dev/null 2>&1; then
    why="$why, JVM crash: $( { grep -h -m1 -E '^# (Native memory|There is insufficient|[A-Z]+ .* at pc|Internal Error|Out of Memory)' \
        "$work"/hs_err_*.log || true; } | sed 's/^# //')"
    sed -n '1,15p' "$work"/hs_err_*.log | sed 's/^/  hs_err: /'
    rm -f "$work"/hs_err_*.log
  fi
  if [[ -n $why ]]; then
    echo "label=$label round=$round load=$load crashed poolGiB=$pool allocators=$allocators why=${why//[[:space:]]/_}" >> "$results"
    echo "  RUN FAILED: $why"
    tail -5 "$err" | sed 's/^/  stderr: /'
    return 1
  fi
}

stop=no
IFS=, read -r -a pool_list <<< "$pools"
for round in $(seq 1 "$rounds"); do
  if (( round % 2 )); then order=slabwise,pooled; else order=pooled,slabwise; fi
  for pool in "${pool_list[@]}"; do
    warmup=$(( pool < warmup_max ? pool : warmup_max ))
    if ! run main "$round" "$pool" "$order" --sizes "$(sizes_for "$pool")" --chunk-size "$(chunk_for "$pool")" \
        --warmup-gib "$warmup" --threads "$threads" --latency-ops "$latency_ops"; then
      failed_runs=$((failed_runs + 1))
      [[ ${KEEP_GOING:-no} == yes ]] || { stop=yes; break 2; }
    fi
  done
done
if [[ $trial == yes && $stop == no ]]; then
  # 65,536 chunks of 4 MiB, the kernel's default limit being 65,530 mappings per process; then every other
  # chunk released, which cuts the chunks' merged mappings apart (32,768 mappings at most)
  run trial-256 1 256 slabwise,pooled --sizes 262144 --chunk-size $((4 << 20)) --warmup-gib 0 --threads 0 \
      --latency-sizes none --holes || true
  # 196,608 chunks of 64 KiB, every other one released: more mappings than the limit allows
  run trial-12 1 12 slabwise,pooled --sizes 65536 --chunk-size 65536 --warmup-gib 0 --threads 0 \
      --latency-sizes none --holes || true
fi

echo
echo "## Pool size: Slabwise / Netty pooled, median [min-max] over the rounds (each a fresh JVM per pool size)"
echo
describe_stack | sed 's/^/    /'
echo
echo "Commands (one JVM per pool size and round; the allocators alternate their order over the rounds):"
echo
sed 's/^/    /' "$work/commands"
echo
python3 - "$results" <<'PYTHON'
import re, statistics, sys

runs = []
for line in open(sys.argv[1]):
    head, _, error = line.rstrip("\n").partition(" error=")  # an exception's text comes last, spaces and all
    fields = dict(re.findall(r"(\w+)=(\S+)", head))
    fields["kind"] = next((w for w in head.split() if "=" not in w), "")
    if error:
        fields["error"] = error
    runs.append(fields)

def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None

def size_name(v):
    if v == "mixed":
        return "96-448 KiB mixed"
    b = int(v)
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale and b % scale == 0:
            return "%d %s" % (b // scale, unit)
    return "%d B" % b

def fmt(x):
    if x is None:
        return "-"
    if abs(x) >= 100:
        return "%.0f" % x
    if abs(x) >= 10:
        return "%.1f" % x
    return "%.2f" % x

def cell(values):
    values = [v for v in values if v is not None]
    if not values:
        return "-", None
    m = statistics.median(values)
    if len(values) == 1:
        return fmt(m), m
    return "%s [%s-%s]" % (fmt(m), fmt(min(values)), fmt(max(values))), m

def ratio(a, b):
    return "**%.2f**" % (a / b) if a is not None and b not in (None, 0) else "n/a"

def select(label, kind, **match):
    return [r for r in runs if r.get("label") == label and r.get("kind") == kind
            and all(r.get(k) == v for k, v in match.items())]

def loads(rows):
    ls = sorted({r["load"] for r in rows})
    return ",".join(ls) if ls else "-"

def table(title, header, rows):
    if not rows:
        return
    print("### " + title)
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()

main_fills = select("main", "fill")
keys = []
for r in main_fills:
    k = (int(r["poolGiB"]), int(r["threads"]), int(r["size"]))
    if k not in keys:
        keys.append(k)
keys.sort(key=lambda k: (k[1], k[0], -k[2]))

def fill_rows(threads):
    rows = []
    for pool, t, size in keys:
        if t != threads:
            continue
        found = select("main", "fill", poolGiB=str(pool), threads=str(t), size=str(size))
        s = [r for r in found if r["allocator"] == "slabwise"]
        n = [r for r in found if r["allocator"] == "pooled"]
        chunk = sorted({size_name(r["chunkSize"]) for r in found})
        sc, sm = cell([num(r["msPerGiB"]) for r in s])
        nc, nm = cell([num(r["msPerGiB"]) for r in n])
        sf, _ = cell([num(r["fillMs"]) / 1000 for r in s])
        nf, _ = cell([num(r["fillMs"]) / 1000 for r in n])
        rows.append(["%d GiB" % pool, size_name(size), "/".join(chunk), loads(found), sc, nc, ratio(sm, nm), sf, nf])
    return rows

header = ["pool", "buffer", "chunk", "load", "Slabwise ms/GiB", "Netty ms/GiB", "Slabwise/Netty",
          "Slabwise whole fill s", "Netty whole fill s"]
table("Fill on one thread: time per GiB (median of the fill's last 3 GiB; a 1 GiB pool: the whole fill)",
      header, fill_rows(1))
threads = sorted({k[1] for k in keys if k[1] > 1})
for t in threads:
    table("Fill by %d threads on %d arenas together: time per GiB of the whole pool (as above)" % (t, t),
          header, fill_rows(t))

lat = select("main", "latency")
lat_keys = []
for r in lat:
    k = (int(r["poolGiB"]), r["size"])
    if k not in lat_keys:
        lat_keys.append(k)
lat_keys.sort(key=lambda k: (k[0], k[1] == "mixed", int(k[1]) if k[1] != "mixed" else 0))
rows = []
for pool, size in lat_keys:
    found = [r for r in lat if r["poolGiB"] == str(pool) and r["size"] == size]
    line = ["%d GiB" % pool, size_name(size), loads(found)]
    med = {}
    for a in ("slabwise", "pooled"):
        for p in ("p50", "p99", "p999"):
            c, m = cell([num(r[p]) for r in found if r["allocator"] == a])
            med[a, p] = m
            line.append(c)
    line += [ratio(med["slabwise", "p50"], med["pooled", "p50"]), ratio(med["slabwise", "p99"], med["pooled", "p99"])]
    rows.append(line)
table("Allocate+release at full size (the pool full of its first buffer size), ns, every operation timed",
      ["pool", "size", "load", "Slabwise p50", "Slabwise p99", "Slabwise p99.9", "Netty p50", "Netty p99",
       "Netty p99.9", "Slabwise/Netty p50", "Slabwise/Netty p99"], rows)

ops = select("main", "ops")
rows = []
names = [("chunks", "chunks"), ("statsUs", "statistics read, µs (Slabwise stats(); Netty metric() and its arenas' active counts)"),
         ("trimUs", "trim with nothing idle, µs (Slabwise trim(); Netty trimCurrentThreadCache())"),
         ("releaseHalfOpenMs", "release of the older half of the buffers, ms"),
         ("closeUs", "close() with the other half live, µs"),
         ("releaseHalfClosedMs", "release of the other half after close(), ms")]
for pool in sorted({int(r["poolGiB"]) for r in ops}):
    found = [r for r in ops if r["poolGiB"] == str(pool)]
    for key, name in names:
        sc, sm = cell([num(r.get(key)) for r in found if r["allocator"] == "slabwise"])
        nc, nm = cell([num(r.get(key)) for r in found if r["allocator"] == "pooled"])
        rows.append(["%d GiB" % pool, name, loads(found), sc, nc, ratio(sm, nm)])
table("Operations at full size (the pool full of its first buffer size), median of %s calls for the statistics and the trim" % "5",
      ["pool", "operation", "load", "Slabwise", "Netty", "Slabwise/Netty"], rows)

rows = []
for pool, t, size in sorted(keys, key=lambda k: (k[0], k[1], -k[2])):
    if t > 1:
        continue  # several threads: caches of the warm-up's dead threads are in the baseline, freed during the fill
    found = select("main", "fill", poolGiB=str(pool), threads=str(t), size=str(size))
    line = ["%d GiB" % pool, size_name(size)]
    med = {}
    for key in ("heapKiBPerGiB", "heapBytesPerBuffer"):
        for a in ("slabwise", "pooled"):
            c, m = cell([num(r[key]) for r in found if r["allocator"] == a])
            med[a, key] = m
            line.append(c)
        line.append(ratio(med["slabwise", key], med["pooled", key]))
    for key in ("maps", "rssMiB"):
        for a in ("slabwise", "pooled"):
            line.append(cell([num(r[key]) for r in found if r["allocator"] == a])[0])
    rows.append(line)
table("After the fill on one thread: heap the fill added (after a full GC) per GiB and per live buffer, "
      "mappings (lines of /proc/self/maps) and resident memory of the JVM",
      ["pool", "buffer", "Slabwise heap KiB/GiB", "Netty heap KiB/GiB", "Slabwise/Netty",
       "Slabwise B/buffer", "Netty B/buffer", "Slabwise/Netty", "Slabwise maps", "Netty maps",
       "Slabwise RSS MiB", "Netty RSS MiB"], rows)

trials = [label for label in dict.fromkeys(r.get("label", "") for r in runs) if label.startswith("trial")]
rows = []
for label in trials:
    found = [r for r in runs if r.get("label") == label]
    env = next((r for r in found if r["kind"] == "env"), {})
    pool, chunk = int(env.get("poolGiB", 0)), int(env.get("chunkSize", 1))
    for r in found:
        if r["kind"] == "crashed":
            rows.append(["%d GiB" % int(r["poolGiB"]), "-", "-", r.get("allocators", "?"), "-", "-", "-", "-",
                         "JVM ended: " + r.get("why", "?").replace("_", " ")])
    for allocator in ("slabwise", "pooled"):
        fill = next((r for r in found if r["kind"] == "fill" and r["allocator"] == allocator), None)
        holes = next((r for r in found if r["kind"] == "holes" and r["allocator"] == allocator), None)
        failed = [r for r in found if r["kind"] == "failed" and r["allocator"] == allocator]
        if not (fill or holes or failed):
            continue
        outcome = "; ".join("%s failed at %s GiB with %s mappings: %s" % (f["step"], f["atGiB"], f["maps"], f.get("error", "?"))
                            for f in failed)
        if allocator == "slabwise":
            lost = sum(int(r.get("regionsNotGivenBack", 0)) for r in found if r["kind"] == "warnings")
            if lost:
                outcome += ("; " if outcome else "") + ("%d chunks not given back (munmap refused; logged, counted as "
                                                        "given back, still mapped)" % lost)
        rows.append(["%d GiB" % pool, size_name(chunk), "{:,}".format(pool * (1 << 30) // chunk), allocator,
                     fill["msPerGiB"] if fill else "-", "%.1f" % (num(fill["fillMs"]) / 1000) if fill else "-",
                     fill["maps"] if fill else "-", holes["maps"] if holes else "-", outcome or "ok"])
max_maps = next((r.get("maxMapCount") for r in runs if r.get("kind") == "env"), "?")
table("Mappings: pools of more chunks than vm.max_map_count (%s here), no warm-up, then every other chunk's buffers "
      "released (one run)" % max_maps,
      ["pool", "chunk", "chunks", "allocator", "ms/GiB", "whole fill s", "maps after the fill",
       "maps after every other chunk went back", "outcome"], rows)

envs = {(r.get("java"), r.get("netty"), r.get("slabwiseChunkSource"), r.get("noCleaner"), r.get("maxMapCount"))
        for r in runs if r.get("kind") == "env"}
for java, netty, source, no_cleaner, max_maps in sorted(envs, key=str):
    print("JVM: Java %s, Netty %s, Slabwise's chunk source: %s, Netty's direct buffers without a cleaner: %s, "
          "vm.max_map_count %s" % (java, netty, source, no_cleaner, max_maps))
bad = [r for r in runs if r.get("kind") in ("failed", "crashed") and r.get("label") == "main"]
for r in bad:
    print("FAILED: round %s, %s GiB, %s: %s" % (r.get("round"), r.get("poolGiB"), r.get("allocator", r.get("allocators")),
                                                 r.get("error", r.get("why", "").replace("_", " "))))
PYTHON

if [[ -s $work/stderr ]]; then
  echo
  echo "standard error of the JVMs (count, [run] line; the warning of each close() with live buffers left out):"
  # the first 30 lines only: head closes the pipe early, which is no failure
  { sort "$work/stderr" | uniq -c | sort -rn | head -30; } || true
fi
main_failed=$(grep -c -E '^label=main .* (failed|crashed) ' "$results" || true)
if (( failed_runs > 0 || main_failed > 0 )); then
  echo "runs failed (see above)" >&2
  exit 1
fi
