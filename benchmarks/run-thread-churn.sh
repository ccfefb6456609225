#!/usr/bin/env bash
# Thread churn: Slabwise against Netty's pooled and adaptive allocators when the threads that allocate
# are many and short-lived (io.slabwise.benchmarks.threads.ThreadChurnBenchmark, whose javadoc says what
# is measured). Every run is a fresh JVM with one allocator and one scenario; rounds interleave the
# allocators, so a slow spell of the shared machine does not fall on one of them only. Prints every
# run's line, then per scenario a table of medians with the min-max over the rounds, and the ratio of
# Slabwise's median to the best Netty median (lower is better for every figure).
#   virtual:       V virtual threads each allocate, fill and release one 1 KiB buffer (needs Java 21+;
#                  reported as skipped on older JVMs)
#   platform:      P platform threads, 200 at a time, each leave one live 1 KiB buffer behind and die
#   platform-live: L platform threads all alive at once: held at a latch, released together, each
#                  allocating and releasing LIVE_OPS buffers (1 KiB and 64 KiB in turn), then held alive
#                  while the allocator's direct memory and cached bytes are read; then they end
#   virtual-live:  the same with L virtual threads (needs Java 21+)
# Java: $JAVA_HOME/bin/java if JAVA_HOME is set, else java on the PATH. Needs the benchmarks jar
# (benchmarks/build-jar.sh, with -Pnetty-4.2 for Netty 4.2).
# Usage: benchmarks/run-thread-churn.sh [rounds] [virtual-threads] [platform-threads] [live-threads]
#   defaults: 3 rounds, V=100000, P=20000, L=1000
# Environment: SCENARIOS (default "virtual platform platform-live virtual-live"); LIVE_OPS, operations per
# thread of the live scenarios (default 1000); ALLOCATORS (default "slabwise pooled adaptive");
# JAVA_OPTS, added to every JVM's options; JAR, another copy of the benchmarks jar (so that a rebuild
# during the run does not change what is measured). A run that does not end in 15 minutes fails.
# A failed run shows in the tables; unless every failure is an OutOfMemoryError (a result of its own), the
# script then exits with status 1.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
virtual_threads=${2:-100000}
platform_threads=${3:-20000}
live_threads=${4:-1000}
live_ops=${LIVE_OPS:-1000}
for count in "$rounds" "$virtual_threads" "$platform_threads" "$live_threads" "$live_ops"; do
  [[ $count =~ ^[1-9][0-9]*$ ]] || {
    echo "usage: $0 [rounds] [virtual-threads] [platform-threads] [live-threads] (environment: LIVE_OPS," \
        "SCENARIOS, ALLOCATORS, JAVA_OPTS, JAR; see the comment at the top)" >&2
    exit 2
  }
done
scenarios=${SCENARIOS:-virtual platform platform-live virtual-live}
for scenario in $scenarios; do
  [[ $scenario =~ ^(virtual|platform|platform-live|virtual-live)$ ]] || {
    echo "unknown scenario in SCENARIOS: $scenario (virtual, platform, platform-live, virtual-live)" >&2
    exit 2
  }
done
allocators=${ALLOCATORS:-slabwise pooled adaptive}
if [[ -n "${JAVA_HOME:-}" ]]; then java="$JAVA_HOME/bin/java"; else java=java; fi
jar=${JAR:-benchmarks/target/benchmarks.jar}
[[ -f "$jar" ]] || { echo "no $jar: build first (mvn -q -B -pl benchmarks -am package -DskipTests)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results=$work/results
touch "$results"

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  host: $(nproc) cores, $(uptime | sed 's/.*load/load/')"
echo "java: $("$java" -version 2>&1 | head -1) ($java)"
# more than 512 MiB of heap: at 512 MiB or less Netty's adaptive allocator runs in its low-memory mode
echo "options: -Xmx1g --enable-native-access=ALL-UNNAMED -Dslabwise.noGlibcWarning=true ${JAVA_OPTS:-}"
echo "jar: $jar"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
echo "rounds=$rounds virtual threads=$virtual_threads platform threads=$platform_threads" \
    "live threads=$live_threads operations per live thread=$live_ops"
skipped=""
for round in $(seq 1 "$rounds"); do
  for scenario in $scenarios; do
    [[ " $skipped " == *" $scenario "* ]] && continue
    case $scenario in
      virtual) args=(--threads "$virtual_threads") ;;
      platform) args=(--threads "$platform_threads") ;;
      *) args=(--threads "$live_threads" --ops "$live_ops") ;;
    esac
    for allocator in $allocators; do
      out=$work/out err=$work/err
      rc=0
      load=$(cut -d' ' -f1 /proc/loadavg) # the 1-minute load average as the run starts
      # shellcheck disable=SC2086 # JAVA_OPTS is a list of options
      timeout 900 "$java" -Xmx1g --enable-native-access=ALL-UNNAMED -Dslabwise.noGlibcWarning=true ${JAVA_OPTS:-} \
          -cp "$jar" io.slabwise.benchmarks.threads.ThreadChurnBenchmark \
          --allocator "$allocator" --scenario "$scenario" "${args[@]}" > "$out" 2> "$err" || rc=$?
      sed "s/^/[$allocator $scenario] /" "$err" >> "$work/stderr"
      line=$(grep '^scenario=' "$out" || true)
      if [[ $line == *skipped=* ]]; then
        echo "round $round: $line"
        skipped="$skipped $scenario"
        break
      elif [[ -n $line && $rc -eq 0 ]]; then
        echo "round=$round load=$load $line" >> "$results"
        echo "round $round: load=$load $line"
      else
        if grep -q OutOfMemoryError "$err"; then reason=OutOfMemoryError
        elif [[ $rc -eq 124 ]]; then reason=timeout
        else reason="exit-$rc"; fi
        echo "round=$round scenario=$scenario allocator=$allocator failed=$reason" >> "$results"
        echo "round $round: scenario=$scenario allocator=$allocator FAILED ($reason) ${line:+$line}"
      fi
    done
  done
done

table() { # scenario, metrics...
  local scenario=$1; shift
  awk -v sc="$scenario" -v metrics="$*" -v allocators="$allocators" '
    function cell(a, m,   n, i, j, t, v, med) {
      n = cnt[a, m] + 0
      if (n == 0) return ok[a] ? "NA" : "-"
      for (i = 1; i <= n; i++) v[i] = val[a, m, i]
      for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
      med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
      median[a, m] = med
      return sprintf(fmt(m), med) " [" sprintf(fmt(m), v[1]) "-" sprintf(fmt(m), v[n]) "]"
    }
    function fmt(m) { return (m == "bytesPerDeadThread" || m == "millis" || m == "nsPerOp" || m ~ /^threadCaches/) ? "%.0f" \
                             : (m == "load") ? "%.2f" : "%.1f" }
    {
      split("", f)
      for (i = 1; i <= NF; i++) { k = index($i, "="); f[substr($i, 1, k - 1)] = substr($i, k + 1) }
      if (f["scenario"] != sc) next
      a = f["allocator"]
      if ("failed" in f) { failed[a]++; why[a] = f["failed"]; next }
      ok[a]++
      nm = split(metrics, ms, " ")
      # a figure an allocator does not give (NA) or an older jar does not print is left out
      for (i = 1; i <= nm; i++) if (ms[i] in f && f[ms[i]] != "NA") val[a, ms[i], ++cnt[a, ms[i]]] = f[ms[i]] + 0
    }
    END {
      na = split(allocators, as, " ")
      nm = split(metrics, ms, " ")
      printf "%-20s", "metric"
      for (i = 1; i <= na; i++) printf " %-26s", as[i]
      printf " %s\n", "slabwise/best Netty"
      for (k = 1; k <= nm; k++) {
        m = ms[k]
        printf "%-20s", m
        for (i = 1; i <= na; i++) printf " %-26s", cell(as[i], m)
        best = ""
        for (i = 1; i <= na; i++) if (as[i] != "slabwise" && cnt[as[i], m] > 0 && (best == "" || median[as[i], m] < median[best, m])) best = as[i]
        if (m == "load") printf "\n"
        else if (cnt["slabwise", m] == 0 || best == "") printf " n/a\n"
        else if (median[best, m] <= 0) printf " n/a (%s: %s)\n", best, sprintf(fmt(m), median[best, m])
        else printf " %.2f (vs %s)\n", median["slabwise", m] / median[best, m], best
      }
      printf "%-20s", "runs ok/failed"
      for (i = 1; i <= na; i++) printf " %-26s", (ok[as[i]] + 0) "/" (failed[as[i]] + 0) (failed[as[i]] ? " (" why[as[i]] ")" : "")
      printf "\n"
    }' "$results"
}

for scenario in $scenarios; do
  [[ " $skipped " == *" $scenario "* ]] && { echo; echo "scenario=$scenario: skipped (needs Java 21)"; continue; }
  echo
  if [[ $scenario == virtual ]]; then
    echo "scenario=virtual threads=$virtual_threads: median [min-max] over $rounds rounds"
    table virtual load millis heapGrowthMiB heapAfterMiB rssAfterMiB rssPeakMiB heapCommittedMiB directAfterMiB \
        cachedAfterMiB directEndedMiB cachedEndedMiB
  elif [[ $scenario == platform ]]; then
    echo "scenario=platform threads=$platform_threads: median [min-max] over $rounds rounds"
    table platform load millis heapGrowthMiB bytesPerDeadThread rssAfterMiB rssPeakMiB heapCommittedMiB directAfterMiB \
        heapReleasedMiB directReleasedMiB
  else
    echo "scenario=$scenario threads=$live_threads operations=$live_ops each: median [min-max] over $rounds rounds"
    echo "(live: all threads alive and idle; joined: once they ended; ended: then Slabwise stats()+trim(), and a GC)"
    table "$scenario" load millis nsPerOp directLiveMiB cachedLiveMiB threadCachesLive readMicros heapLiveGrowthMiB \
        rssLiveMiB directJoinedMiB cachedJoinedMiB directEndedMiB cachedEndedMiB threadCachesEnded heapEndedGrowthMiB \
        rssPeakMiB
  fi
done
if [[ -s $work/stderr ]]; then
  echo
  echo "standard error of the JVMs (count, [allocator scenario] line):"
  sort "$work/stderr" | uniq -c | sort -rn | head -30
fi
if awk '/ failed=/ && !/ failed=OutOfMemoryError/ {bad = 1} END {exit !bad}' "$results"; then
  echo "runs failed (see the tables and the standard error above)" >&2
  exit 1
fi
