#!/usr/bin/env bash
# Throughput per integration: each framework of the examples (Reactor Netty HTTP/1.1 and HTTP/2 over TLS,
# gRPC unary calls and bidirectional streams, Netty's SslHandler with the JDK's SSLEngine and with
# OpenSSL, Spring WebFlux with a WebClient) echoing bodies on loopback, 8 in flight, with Slabwise and with
# Netty's PooledByteBufAllocator and AdaptiveByteBufAllocator in the same run. Each (integration,
# allocator, round) runs in a JVM of its own (io.slabwise.examples.integrations.IntegrationThroughput,
# server and client in that JVM): a warm-up, then the measured seconds; it prints requests or messages
# per second and the JVM's peak resident memory (VmHWM). Allocators take turns within a round and the
# first of each round rotates, so a slow spell of the shared machine does not fall on one of them only.
# Ends with a markdown table per integration: the median over rounds with min-max, and Slabwise's ratio
# to the best Netty allocator (ops/s: above 1.0 is better; peak RSS: below 1.0 is better).
#
# The program lives in examples/ (it sets up the frameworks the way the examples do, and only the examples
# have them on the class path); the script lives here with the other comparisons. It builds the examples
# with the JDK and Maven profile given (mvn package, nothing installed) and copies the class path aside:
#   benchmarks/run-integrations.sh                                               # JDK 17 + Netty 4.1
#   JAVA_HOME=/path/to/jdk-25 PROFILE=netty-4.2 benchmarks/run-integrations.sh   # JDK 25 + Netty 4.2
#   benchmarks/run-integrations.sh 4 2 1                                          # a short run
# Usage: benchmarks/run-integrations.sh [seconds] [warm-up-seconds] [rounds] [body-bytes]
#   defaults 10 s, 3 s, 3 rounds, 16384 B: 7 integrations x 3 allocators x 3 rounds, about 15 min
# Environment: JAVA_HOME (else java on the PATH), PROFILE (a Maven profile of the build, e.g. netty-4.2),
# INTEGRATIONS and ALLOCATORS (space-separated subsets), JAVA_OPTS (added to every JVM's options).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
warmup=${2:-3}
rounds=${3:-3}
body=${4:-16384}
integrations=${INTEGRATIONS:-reactor-http11-tls reactor-h2-tls grpc-unary grpc-streaming tls-jdk tls-openssl webflux}
read -r -a allocators <<< "${ALLOCATORS:-slabwise pooled adaptive}"
if [[ -n "${JAVA_HOME:-}" ]]; then java="$JAVA_HOME/bin/java"; else java=java; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "building the examples (${PROFILE:-default profile}) with $("$java" -version 2>&1 | head -1)"
mvn -B -ntp -q ${PROFILE:+-P"$PROFILE"} -pl examples -am package -DskipTests \
    dependency:build-classpath -Dmdep.outputFile="$work/classpath.txt" > "$work/build.log" 2>&1 \
    || { tail -50 "$work/build.log" >&2; exit 1; }
# the project's own jars and classes, copied: a later build does not change a run under way
mkdir -p "$work/lib"
cp -r examples/target/classes "$work/lib/examples-classes"
classpath="$work/lib/examples-classes"
IFS=: read -r -a entries < "$work/classpath.txt" || true   # no newline at its end
for entry in "${entries[@]}"; do
  if [[ $entry == "$PWD"/* ]]; then
    cp -r "$entry" "$work/lib/$(echo "${entry#"$PWD"/}" | tr / _)"
    entry="$work/lib/$(echo "${entry#"$PWD"/}" | tr / _)"
  fi
  classpath="$classpath:$entry"
done
netty=$(tr : '\n' < "$work/classpath.txt" | grep -o 'netty-buffer/[^/]*' | head -1 | cut -d/ -f2)
# more than 512 MiB of heap: at 512 MiB or less Netty's adaptive allocator runs in its low-memory mode
opts="-Xmx1g -Dslabwise.noGlibcWarning=true --enable-native-access=ALL-UNNAMED ${JAVA_OPTS:-}"

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  host: $(nproc) cores, $(uptime | sed 's/.*load/load/')"
echo "java: $("$java" -version 2>&1 | head -1) ($java)  netty: $netty  profile: ${PROFILE:-none}"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
echo "options: $opts; ${warmup} s warm-up + ${seconds} s measured, ${body} B bodies, 8 in flight, $rounds rounds"
printf '%-6s %-19s %-9s %6s %12s %10s\n' round integration allocator load 'ops/s' 'peak RSS'
for round in $(seq 1 "$rounds"); do
  n=${#allocators[@]}
  for integration in $integrations; do
    for i in $(seq 0 $((n - 1))); do
      allocator=${allocators[$(( (i + round - 1) % n ))]}
      load=$(cut -d' ' -f1 /proc/loadavg)
      # shellcheck disable=SC2086 # opts is a list of options
      out=$("$java" $opts -cp "$classpath" io.slabwise.examples.integrations.IntegrationThroughput \
          "$integration" "$allocator" "$warmup" "$seconds" "$body" 2> "$work/stderr") || {
        echo "$integration on $allocator failed:" >&2; tail -30 "$work/stderr" >&2; echo "$out" >&2; exit 1; }
      line=$(echo "$out" | grep -E '^(RESULT|SKIPPED) ' | tail -1)
      if [[ $line == SKIPPED* ]]; then
        echo "$line"
        continue
      fi
      read -r _ _ _ rate hwm _ <<< "$line"
      printf '%-6s %-19s %-9s %6s %12s %7s MiB\n' "$round" "$integration" "$allocator" "$load" "$rate" "$(( (hwm + 512) / 1024 ))"
      echo "$integration $allocator $rate $hwm" >> "$work/results"
    done
  done
done
echo "finished at load $(cut -d' ' -f1 /proc/loadavg)"
echo
echo "median (min-max) over $rounds rounds; ratio = Slabwise / best Netty allocator (ops/s: highest; peak RSS: lowest)"
echo
ALLOCATORS_ORDER="${allocators[*]}" python3 - "$work/results" <<'PYTHON'
import os, statistics, sys

runs = {}
for line in open(sys.argv[1]):
    integration, allocator, rate, hwm = line.split()
    runs.setdefault(integration, {}).setdefault(allocator, []).append((float(rate), int(hwm) / 1024.0))
order = os.environ["ALLOCATORS_ORDER"].split()
print("| integration | allocator | ops/s | peak RSS (MiB) | ops/s / best Netty | peak RSS / best Netty |")
print("|---|---|---|---|---|---|")
for integration, by in runs.items():
    allocators = [a for a in order if a in by]
    med = {a: [statistics.median(r[i] for r in by[a]) for i in range(2)] for a in allocators}
    netty = [a for a in allocators if not a.startswith("slabwise")]
    for a in allocators:
        rates = [r[0] for r in by[a]]
        rss = [r[1] for r in by[a]]
        cells = ["%.0f (%.0f-%.0f)" % (med[a][0], min(rates), max(rates)),
                 "%.0f (%.0f-%.0f)" % (med[a][1], min(rss), max(rss))]
        for i, pick in ((0, max), (1, min)):
            best = pick(netty, key=lambda n: med[n][i], default=None)
            cells.append("-" if best is None or a in netty else "**%.2f** (vs %s)" % (med[a][i] / med[best][i], best))
        print("| %s | %s | %s |" % (integration, a, " | ".join(cells)))
PYTHON
