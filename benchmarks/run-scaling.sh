#!/usr/bin/env bash
# The scaling table: ScalingBenchmark with JMH's -t 1, 2, 4 and 8 at 1 KiB and 64 KiB, one allocator shared
# by all the benchmark threads (Netty FastThreadLocalThreads), Slabwise (defaults, and recycleBuffers(true)
# when the jar has that AllocatorKind) and Netty's pooled and adaptive allocators in the same JMH run per
# thread count:
#   allocateRelease: every thread allocates and releases its own buffers
#   crossThread:     N/2 pairs, one thread of each allocating, the other releasing (from 2 threads up)
# Every run uses -prof gc. Prints a markdown table: benchmark x size x threads -> ns/op ± error
# (gc.alloc.rate.norm in B/op) per allocator, the 1-minute load when the run started, and each Slabwise
# allocator's ratio to the best Netty allocator of that row. On 2 cores, 4 and 8 threads oversubscribe
# the machine: every allocator slows down; the ratios show which one suffers more from contention.
# Usage: benchmarks/run-scaling.sh [smoke|quick|full] [forks]
#   smoke: -wi 1 -w 500ms -i 2 -r 500ms    (proves the script works; about 3 minutes)
#   quick: -wi 3 -w 1s -i 5 -r 1s          (direction; about 10 minutes)
#   full:  -wi 5 -w 2s -i 10 -r 2s         (for the record; about 25 minutes per fork)
#   forks: default 1 (3 for full)
# Environment: JAVA_HOME, JAR, JAVA_OPTS (see bench-common.sh); ALLOCATORS; SIZES (default 1024,65536);
# THREADS (default "1 2 4 8"); CROSS_THREAD (default yes; no drops the crossThread rows); LEAK_DETECTION
# (default disabled); OUT (default: a new folder under benchmarks/target/scaling).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benchmarks/bench-common.sh
source benchmarks/bench-common.sh
mode=${1:-quick}
jmh_mode "$@"
allocators=${ALLOCATORS:-$(default_allocators)}
sizes=${SIZES:-1024,65536}
thread_counts=${THREADS:-1 2 4 8}
leak=${LEAK_DETECTION:-disabled}
out=${OUT:-benchmarks/target/scaling/$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"
jvm="-Xmx1g -Dslabwise.noGlibcWarning=true --enable-native-access=ALL-UNNAMED -Dio.netty.leakDetection.level=$leak"
jvm="$jvm -Djmh.executor=CUSTOM -Djmh.executor.class=io.slabwise.benchmarks.FastThreadLocalExecutor ${JAVA_OPTS:-}"

describe_stack
echo "mode: $mode (${timing[*]} -f $forks -prof gc)  allocators: $allocators  sizes: $sizes  threads: $thread_counts"
echo "results: $out"
: > "$out/loads"
files=()
for threads in $thread_counts; do
  if (( threads >= 2 )) && [[ ${CROSS_THREAD:-yes} == yes ]]; then
    pattern='ScalingBenchmark\.(allocateRelease|crossThread)$'
  else
    pattern='ScalingBenchmark\.allocateRelease$'
  fi
  echo "t$threads $(load1)" >> "$out/loads"
  echo "== $threads threads: started at load $(load1)"
  "$java" -jar "$jar" "$pattern" -t "$threads" -p allocator="${allocators// /,}" -p size="$sizes" \
      -f "$forks" "${timing[@]}" -foe true -prof gc -rf json -rff "$out/scaling@t$threads.json" -jvmArgsAppend "$jvm" \
      > "$out/jmh@t$threads.log" 2>&1 || { echo "JMH failed for -t $threads, see $out/jmh@t$threads.log" >&2; tail -20 "$out/jmh@t$threads.log" >&2; exit 1; }
  files+=("$out/scaling@t$threads.json")
done
echo "finished at load $(load1)"
echo
echo "ns/op ± 99.9% error (gc.alloc.rate.norm, B/op); ratio = Slabwise / best Netty allocator of the row."
echo "allocateRelease: time per allocate+release on one thread; crossThread: time per buffer handed over in one pair."
echo
table=$(ALLOCATORS_ORDER="$allocators" LOADS="$out/loads" jmh_table benchmark,size,threads "${files[@]}")
# group the rows by benchmark and size, thread counts ascending
{ echo "$table" | head -2; echo "$table" | tail -n +3 | sort -t'|' -k2,2 -k3,3V -k4,4n; }
