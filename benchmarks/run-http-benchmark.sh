#!/usr/bin/env bash
# End-to-end HTTP benchmark: each allocator serves the same Netty HTTP server on loopback while wrk
# loads it for a bounded time; prints requests/s, p99 latency and the server's peak resident memory
# for every round, then the median requests/s per allocator. Rounds interleave the allocators, so
# a slow spell of the shared machine does not fall on one of them only.
# Needs wrk (Debian: apt-get install wrk) and the benchmarks jar (mvn -q -B install -DskipTests).
# Usage: benchmarks/run-http-benchmark.sh [seconds] [response-bytes] [connections] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
size=${2:-4096}
connections=${3:-64}
rounds=${4:-3}
jar=benchmarks/target/benchmarks.jar
port=18081
results=$(mktemp)
printf '%-6s %-9s %12s %10s %14s\n' round allocator 'requests/s' 'p99' 'peak RSS'
for round in $(seq 1 "$rounds"); do
  for allocator in slabwise pooled adaptive; do
    java -Xmx512m -Dslabwise.noGlibcWarning=true --enable-native-access=ALL-UNNAMED -cp "$jar" io.slabwise.benchmarks.http.HttpBenchmarkServer \
        "$allocator" "$port" > /dev/null 2>&1 &
    server=$!
    for _ in $(seq 1 50); do curl -s -o /dev/null "http://127.0.0.1:$port/?size=1" && break; sleep 0.2; done
    wrk -t1 -c"$connections" -d3s "http://127.0.0.1:$port/?size=$size" > /dev/null   # warm-up
    out=$(wrk -t1 -c"$connections" -d"${seconds}s" --latency "http://127.0.0.1:$port/?size=$size")
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
    hwm=$(curl -s "http://127.0.0.1:$port/rss" | awk '/VmHWM/ {print $2 " " $3}')
    curl -s -o /dev/null "http://127.0.0.1:$port/exit" || true
    wait "$server" || true
    printf '%-6s %-9s %12s %10s %14s\n' "$round" "$allocator" "$rps" "$p99" "$hwm"
    echo "$allocator $rps" >> "$results"
    port=$((port + 1))
  done
done
echo "median requests/s:"
for allocator in slabwise pooled adaptive; do
  awk -v a="$allocator" '$1 == a {print $2}' "$results" | sort -n | awk -v a="$allocator" \
      '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "  %-9s %12.0f\n", a, m}'
done
rm -f "$results"
