# Sourced by the run-*.sh scripts of this folder (not run on its own): the java and the jar to use,
# the allocators to compare, and the table of a JMH JSON result with ratios to the best Netty allocator.
#   JAVA_HOME  the JDK to run (else java on the PATH)
#   JAR        the benchmarks jar (default benchmarks/target/benchmarks.jar; see build-jar.sh for a copy
#              per JDK and Netty version, which a later rebuild does not change)
#   JAVA_OPTS  added to every benchmark JVM's options

if [[ -n "${JAVA_HOME:-}" ]]; then java="$JAVA_HOME/bin/java"; else java=java; fi
jar=${JAR:-benchmarks/target/benchmarks.jar}
[[ -f "$jar" ]] || { echo "no $jar: build first (mvn -B -q -pl benchmarks -am package -DskipTests, or benchmarks/build-jar.sh)" >&2; exit 1; }

# The major version of $java (17, 21, 25...).
java_major() {
  "$java" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2; exit}'
}

# jar_entry JAR NAME: prints an entry of a jar (python3's zipfile: the scripts need python3 anyway, and a
# missing unzip must not silently drop a column); fails when the jar has no such entry.
jar_entry() {
  python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' "$1" "$2"
}

# The Netty version the jar was built with.
netty_version() {
  jar_entry "$jar" META-INF/maven/io.netty/netty-buffer/pom.properties | awk -F= '$1 == "version" {print $2}'
}

# The name of the AllocatorKind that is Slabwise with recycleBuffers(true), if the jar has one, else nothing.
recycle_kind() {
  jar_entry "$jar" io/slabwise/benchmarks/AllocatorKind.class \
      | grep -a -o 'slabwise[A-Za-z_]*[Rr]ecycle[A-Za-z_]*' | head -1 || true
}

# The default allocators: Slabwise, its recycling variant if the jar has it, Netty pooled and adaptive.
default_allocators() {
  local recycle
  recycle=$(recycle_kind)
  echo "slabwise${recycle:+ $recycle} pooled adaptive"
}

# jmh_mode MODE [FORKS]: sets the arrays/values timing and forks of a run mode (smoke, quick or full), or
# exits with a usage line naming the calling script.
jmh_mode() {
  case ${1:-quick} in
    smoke) timing=(-wi 1 -w 500ms -i 2 -r 500ms); forks=${2:-1} ;;
    quick) timing=(-wi 3 -w 1s -i 5 -r 1s); forks=${2:-1} ;;
    full) timing=(-wi 5 -w 2s -i 10 -r 2s); forks=${2:-3} ;;
    *) echo "usage: $0 [smoke|quick|full] [forks]" >&2; exit 2 ;;
  esac
}

# The 1-minute load average.
load1() { cut -d' ' -f1 /proc/loadavg; }

# Prints what every table depends on.
describe_stack() {
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  host: $(nproc) cores, $(uptime | sed 's/.*load/load/')"
  echo "java: $("$java" -version 2>&1 | head -1) ($java)"
  echo "netty: $(netty_version)  jar: $jar"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
}

# jmh_table ROW_PARAMS JSON... : a markdown table of JMH results (python3). One row per distinct value of
# the comma-separated ROW_PARAMS (JMH params, or "threads", "benchmark", or "label", which is the part of
# the file name after the last '@', e.g. result@fast.json), one column per allocator with the score and
# gc.alloc.rate.norm (from -prof gc) as "ns (B/op)", then for each Slabwise allocator its ratio to the
# best (lowest) Netty allocator of that row. A LOADS file of "label load" lines adds the load column.
jmh_table() {
  local rows=$1; shift
  ALLOCATORS_ORDER="${ALLOCATORS_ORDER:-}" LOADS="${LOADS:-}" python3 - "$rows" "$@" <<'PYTHON'
import json, os, sys

rows = sys.argv[1].split(",")
loads = {}
if os.environ.get("LOADS") and os.path.exists(os.environ["LOADS"]):
    for line in open(os.environ["LOADS"]):
        parts = line.split()
        if len(parts) >= 2:
            loads[parts[0]] = parts[1]
cells, row_keys, allocators = {}, [], [a for a in os.environ.get("ALLOCATORS_ORDER", "").split() if a]
for path in sys.argv[2:]:
    label = os.path.basename(path).rsplit(".", 1)[0].rsplit("@", 1)[-1]
    for result in json.load(open(path)):
        params = dict(result.get("params", {}))
        allocator = params.pop("allocator")
        params["threads"] = str(result["threads"])
        params["benchmark"] = result["benchmark"].rsplit(".", 1)[-1]
        params["label"] = label
        key = tuple(params.get(r, "") for r in rows) + (label,)
        if key not in row_keys:
            row_keys.append(key)
        if allocator not in allocators:
            allocators.append(allocator)
        secondary = result.get("secondaryMetrics", {})
        norm = secondary.get("gc.alloc.rate.norm") or secondary.get("\u00b7gc.alloc.rate.norm")
        cells[key, allocator] = (float(result["primaryMetric"]["score"]), float(result["primaryMetric"]["scoreError"]),
                                 float(norm["score"]) if norm else None, result["primaryMetric"]["scoreUnit"])

def number(key, value):
    if key == "size":
        v = int(value)
        for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
            if v >= scale and v % scale == 0:
                return "%d %s" % (v // scale, unit)
        return "%d B" % v
    return value

netty = [a for a in allocators if not a.startswith("slabwise")]
slabwise = [a for a in allocators if a.startswith("slabwise")]
unit = next(iter(cells.values()))[3] if cells else "ns/op"
header = rows + (["load"] if loads else []) + ["%s %s (B/op)" % (a, unit) for a in allocators] \
    + ["%s / best Netty" % a for a in slabwise]
print("| " + " | ".join(header) + " |")
print("|" + "---|" * len(header))
for key in row_keys:
    line = [number(r, v) for r, v in zip(rows, key)]
    if loads:
        line.append(loads.get(key[-1], ""))
    for a in allocators:
        c = cells.get((key, a))
        if c is None:
            line.append("-")
        else:
            score = "%.1f" % c[0] if c[0] < 1000 else "%.0f" % c[0]
            error = "" if c[1] != c[1] else " ± %.1f" % c[1]   # NaN with a single iteration
            line.append("%s%s (%s)" % (score, error, "%.0f" % c[2] if c[2] is not None else "?"))
    best = min((a for a in netty if (key, a) in cells), key=lambda a: cells[key, a][0], default=None)
    for a in slabwise:
        if best is None or (key, a) not in cells:
            line.append("n/a")
        else:
            line.append("**%.2f** (vs %s)" % (cells[key, a][0] / cells[key, best][0], best))
    print("| " + " | ".join(line) + " |")
PYTHON
}
