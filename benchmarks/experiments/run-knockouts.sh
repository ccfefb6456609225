#!/usr/bin/env bash
# Where the small-size hot path's time goes: builds Slabwise at the commit the patch was made against
# (c8ff60c) with hot-path-knockouts.patch applied, in a temporary worktree, and times
# AllocateReleaseBenchmark.allocateRelease (recycleBuffers(true), 64 B and 1 KiB, event-loop threads)
# with one part of the path knocked out at a time. Each knock-out is a system property read into a
# static final, so one jar serves every row and an unset property changes no compiled code:
#   k.checks    the request and category checks and the limit checks of allocation and release
#   k.counters  the thread's accounting of the allocation and of the release
#   k.thread    the calling thread's cache look-up (the first cache found is kept in a static field)
#   k.sweep     the count of operations between two sweeps of the thread cache
#   all         the four above at once
#   k.engine    the pool itself: a released buffer is kept in a static field and handed out again,
#               so the row is the Netty side alone (AbstractByteBufAllocator, the buffer's set-up,
#               the reference count)
# Every knock-out is wrong in general (one thread, one size, no limits): this measures, it ships nothing.
# The first row runs the safe default and Netty's adaptive allocator too, for scale.
# Usage: benchmarks/experiments/run-knockouts.sh [rounds]   (default 2; about 5 minutes a round)
# Environment: JAVA_HOME (the JDK that builds and runs), MAVEN_ARGS (e.g. "-o -Pnetty-4.2").
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-2}
base=c8ff60c
patch=$PWD/benchmarks/experiments/hot-path-knockouts.patch
if [[ -n "${JAVA_HOME:-}" ]]; then java="$JAVA_HOME/bin/java"; else java=java; fi
work=$(mktemp -d)
tree=$work/tree
cleanup() { git worktree remove --force "$tree" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
git worktree add -q --detach "$tree" "$base"
git -C "$tree" apply "$patch"
# shellcheck disable=SC2086 # MAVEN_ARGS is a list of options
(cd "$tree" && mvn -B -q -pl benchmarks -am package -DskipTests -Dcheckstyle.skip ${MAVEN_ARGS:-} >&2)
jar=$work/knockouts.jar
cp "$tree/benchmarks/target/benchmarks.jar" "$jar"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  host: $(nproc) cores  java: $("$java" -version 2>&1 | head -1)"
echo "built at $base with $(basename "$patch"); rounds: $rounds"

jvm="-Xmx1g -Dslabwise.noGlibcWarning=true -Dio.netty.leakDetection.level=disabled"
jvm="$jvm -Djmh.executor=CUSTOM -Djmh.executor.class=io.slabwise.benchmarks.FastThreadLocalExecutor"
: > "$work/results"
for round in $(seq 1 "$rounds"); do
  for row in none k.checks k.counters k.thread k.sweep all k.engine; do
    case $row in
      none) props=""; allocators=slabwise_recycle,slabwise,adaptive ;;
      all) props="-Dk.checks=true -Dk.counters=true -Dk.thread=true -Dk.sweep=true"; allocators=slabwise_recycle ;;
      *) props="-D$row=true"; allocators=slabwise_recycle ;;
    esac
    "$java" -jar "$jar" 'AllocateReleaseBenchmark.allocateRelease$' -p allocator=$allocators -p size=64,1024 \
        -f 2 -wi 3 -w 1s -i 3 -r 1s -foe true -jvmArgsAppend "$jvm $props" 2>&1 \
      | awk -v row="$row" '/^AllocateReleaseBenchmark/ {print row, $2, $3, $(NF-3)}' | tee -a "$work/results"
  done
done

python3 - "$work/results" <<'PYTHON'
import statistics, sys
from collections import defaultdict

scores = defaultdict(list)
for line in open(sys.argv[1]):
    row, allocator, size, ns = line.split()
    scores[(row, allocator, size)].append(float(ns))

def median(row, allocator, size):
    values = scores.get((row, allocator, size))
    return statistics.median(values) if values else None

sizes = ["64", "1024"]
print()
print("allocateRelease, ns/op: median over the rounds (range); slabwise_recycle unless named")
print()
print("| knocked out | " + " | ".join(f"{s} B" for s in sizes) + " | " + " | ".join(f"saved at {s} B" for s in sizes) + " |")
print("|---|" + "---|" * (2 * len(sizes)))
def cell(row, allocator, size):
    values = scores.get((row, allocator, size))
    if not values:
        return "n/a"
    return f"{median(row, allocator, size):.1f} ({min(values):.1f}-{max(values):.1f})"
for row, allocator, label in [("none", "adaptive", "adaptive (Netty)"), ("none", "slabwise", "nothing, safe default"),
                              ("none", "slabwise_recycle", "nothing")] + \
        [(r, "slabwise_recycle", r) for r in ["k.checks", "k.counters", "k.thread", "k.sweep", "all", "k.engine"]]:
    saved = []
    for s in sizes:
        base, here = median("none", "slabwise_recycle", s), median(row, allocator, s)
        saved.append("" if row == "none" or base is None or here is None else f"{base - here:+.1f}")
    print(f"| {label} | " + " | ".join(cell(row, allocator, s) for s in sizes) + " | " + " | ".join(saved) + " |")
PYTHON
