#!/usr/bin/env bash
# The hot-path table: AllocateReleaseBenchmark.allocateRelease (allocate and release one direct buffer on
# one thread) at every size of the benchmark, for Slabwise (defaults, and recycleBuffers(true) when the
# jar has that AllocatorKind) and Netty's pooled and adaptive allocators in the same JMH run, on three
# kinds of benchmark thread, one JMH run per kind:
#   fast:     Netty FastThreadLocalThreads, as an event loop's (the benchmark's own default executor)
#   platform: plain platform threads (JMH's default executor)
#   virtual:  virtual threads (JMH's VIRTUAL executor; needs Java 21+, reported as skipped before)
# Every run uses -prof gc. Prints a markdown table: size x thread kind -> ns/op ± error (gc.alloc.rate.norm
# in B/op) per allocator, the 1-minute load when the run started, and each Slabwise allocator's ratio to
# the best Netty allocator of that row (below 1.0: Slabwise is faster). The JSON results stay in OUT.
# Usage: benchmarks/run-hot-path.sh [smoke|quick|full] [forks]
#   smoke: -wi 1 -w 500ms -i 2 -r 500ms    (proves the script works; about 5 minutes on 2 cores)
#   quick: -wi 3 -w 1s -i 5 -r 1s          (direction; about 18 minutes on JDK 17, 25 with virtual threads)
#   full:  -wi 5 -w 2s -i 10 -r 2s         (for the record; about 40 minutes per fork)
#   forks: default 1 (3 for full)
# Environment: JAVA_HOME, JAR, JAVA_OPTS (see bench-common.sh); ALLOCATORS (default: slabwise, the
# recycling variant if present, pooled, adaptive); SIZES (comma-separated, default every size of the
# benchmark); THREAD_KINDS (default "fast platform virtual"); LEAK_DETECTION (Netty's
# io.netty.leakDetection.level, default disabled, so that sampled leak records do not count as garbage);
# OUT (default: a new folder under benchmarks/target/hot-path); BENCHMARK (default allocateRelease;
# burstRelease holds four buffers at once and times the four allocations and releases together).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benchmarks/bench-common.sh
source benchmarks/bench-common.sh
mode=${1:-quick}
jmh_mode "$@"
allocators=${ALLOCATORS:-$(default_allocators)}
sizes=${SIZES:-64,1024,4097,8193,65536,131072,524288,1048576,4194304}
kinds=${THREAD_KINDS:-fast platform virtual}
leak=${LEAK_DETECTION:-disabled}
benchmark=${BENCHMARK:-allocateRelease}
out=${OUT:-benchmarks/target/hot-path/$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"
major=$(java_major)
base="-Xmx1g -Dslabwise.noGlibcWarning=true --enable-native-access=ALL-UNNAMED -Dio.netty.leakDetection.level=$leak ${JAVA_OPTS:-}"

describe_stack
echo "benchmark: $benchmark  mode: $mode (${timing[*]} -f $forks -prof gc)  allocators: $allocators  sizes: $sizes  leak detection: $leak"
echo "results: $out"
: > "$out/loads"
files=()
for kind in $kinds; do
  case $kind in
    fast) executor="-Djmh.executor=CUSTOM -Djmh.executor.class=io.slabwise.benchmarks.FastThreadLocalExecutor" ;;
    platform) executor="-Djmh.executor=PLATFORM" ;;
    virtual)
      if (( major < 21 )); then echo "thread kind virtual: skipped (Java $major has no virtual threads; needs 21+)"; continue; fi
      executor="-Djmh.executor=VIRTUAL" ;;
    *) echo "unknown thread kind $kind (fast, platform, virtual)" >&2; exit 2 ;;
  esac
  echo "$kind $(load1)" >> "$out/loads"
  echo "== thread kind $kind: started at load $(load1)"
  # -jvmArgsAppend on the command line replaces the benchmark's @Fork options, executor included
  "$java" -jar "$jar" "AllocateReleaseBenchmark.$benchmark\$" -p allocator="${allocators// /,}" -p size="$sizes" \
      -f "$forks" "${timing[@]}" -foe true -prof gc -rf json -rff "$out/hot-path@$kind.json" -jvmArgsAppend "$base $executor" \
      > "$out/jmh@$kind.log" 2>&1 || { echo "JMH failed for $kind, see $out/jmh@$kind.log" >&2; tail -20 "$out/jmh@$kind.log" >&2; exit 1; }
  files+=("$out/hot-path@$kind.json")
done
echo "finished at load $(load1)"
echo
echo "$benchmark, ns/op ± 99.9% error (gc.alloc.rate.norm, B/op); ratio = Slabwise / best Netty allocator of the row"
echo
ALLOCATORS_ORDER="$allocators" LOADS="$out/loads" jmh_table size,label "${files[@]}" | sed '1s/| label |/| threads |/'
