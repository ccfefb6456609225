#!/usr/bin/env bash
# End-to-end HTTP benchmark: each allocator serves the same Netty HTTP server
# (io.slabwise.benchmarks.http.HttpBenchmarkServer, one event loop, 127.0.0.1) while wrk loads it for a
# bounded time after a 3 s warm-up; prints requests/s, p99 latency and the server's peak resident memory
# (VmHWM of the server JVM, read at the end of the round) for every round, then a markdown table of the
# medians per allocator with Slabwise's ratios to the best Netty allocator (requests/s: above 1.0 is
# better; p99 and peak RSS: below 1.0 is better). Rounds interleave the allocators, so a slow spell of
# the shared machine does not fall on one of them only. wrk and the server share the machine's cores.
# The stack is the java and the jar given (see bench-common.sh): JDK 17 + Netty 4.1 by default; for
# JDK 25 + Netty 4.2, build that jar with build-jar.sh and pass both:
#   jar=$(JAVA_HOME=/path/to/jdk-25 benchmarks/build-jar.sh -Pnetty-4.2)
#   JAVA_HOME=/path/to/jdk-25 JAR=$jar benchmarks/run-http-benchmark.sh
# The transport is NIO unless TRANSPORT=epoll, which needs a jar built with the Netty 4.2.18 profile that
# carries Netty's epoll transport and its linux-x86_64 library:
#   jar=$(JAVA_HOME=/path/to/jdk-25 benchmarks/build-jar.sh -Pnetty-4.2-native)
#   JAVA_HOME=/path/to/jdk-25 JAR=$jar TRANSPORT=epoll benchmarks/run-http-benchmark.sh
# The first server's start line shows the transport it runs (its server channel class) and whether the
# allocator's direct buffers report a memory address.
# Needs wrk (Debian: apt-get install wrk) and curl.
# Usage: benchmarks/run-http-benchmark.sh [seconds] [response-bytes] [connections] [rounds]
#   defaults 10 s, 4096 B, 64 connections, 3 rounds: about 40 s per allocator and round
# Environment: JAVA_HOME, JAR, JAVA_OPTS (see bench-common.sh); ALLOCATORS (names of AllocatorKind, e.g.
# "slabwise slabwise_noaddress pooled adaptive"); TRANSPORT (nio or epoll, default nio); PORT (the first port,
# default 18081; each server gets the next one).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benchmarks/bench-common.sh
source benchmarks/bench-common.sh
seconds=${1:-10}
size=${2:-4096}
connections=${3:-64}
rounds=${4:-3}
allocators=${ALLOCATORS:-$(default_allocators)}
port=${PORT:-18081}
transport=${TRANSPORT:-nio}
[[ $transport == nio || $transport == epoll ]] || { echo "TRANSPORT must be nio or epoll, not '$transport'" >&2; exit 2; }
command -v wrk > /dev/null || { echo "wrk is missing (Debian: apt-get install wrk)" >&2; exit 1; }
work=$(mktemp -d)
server=""
trap '[[ -n $server ]] && kill "$server" 2> /dev/null; rm -rf "$work"' EXIT
# more than 512 MiB of heap: at 512 MiB or less Netty's adaptive allocator runs in its low-memory mode (one
# stripe, no magazines of a thread's own, large buffers from a fresh chunk each)
opts="-Xmx1g -Dslabwise.noGlibcWarning=true --enable-native-access=ALL-UNNAMED ${JAVA_OPTS:-}"

describe_stack
echo "server options: $opts"
echo "transport: $transport"
echo "wrk -t1 -c$connections -d${seconds}s, response $size B, $rounds rounds, allocators: $allocators"
printf '%-6s %-19s %6s %12s %10s %14s\n' round allocator load 'requests/s' 'p99' 'peak RSS'
for round in $(seq 1 "$rounds"); do
  for allocator in $allocators; do
    load=$(load1)
    # shellcheck disable=SC2086 # opts is a list of options
    "$java" $opts -cp "$jar" io.slabwise.benchmarks.http.HttpBenchmarkServer "$allocator" "$port" "$transport" \
        > "$work/server.log" 2>&1 &
    server=$!
    up=no
    for _ in $(seq 1 100); do
      if curl -s -o /dev/null "http://127.0.0.1:$port/?size=1"; then up=yes; break; fi
      kill -0 "$server" 2> /dev/null || break
      sleep 0.2
    done
    [[ $up == yes ]] || { echo "the $allocator server did not start:" >&2; cat "$work/server.log" >&2; exit 1; }
    wrk -t1 -c"$connections" -d3s "http://127.0.0.1:$port/?size=$size" > /dev/null   # warm-up
    out=$(wrk -t1 -c"$connections" -d"${seconds}s" --latency "http://127.0.0.1:$port/?size=$size")
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
    errors=$(echo "$out" | awk '/Non-2xx|Socket errors/' | tr -s ' ' | tr '\n' ' ')
    hwm=$(curl -s "http://127.0.0.1:$port/rss" | awk '/VmHWM/ {print $2}')
    curl -s -o /dev/null "http://127.0.0.1:$port/exit" || true
    wait "$server" || true
    server=""
    # the exceptions the server logged, but for the connection resets of wrk closing its connections at the end
    # (NIO's SocketException, epoll's NativeIoException)
    grep -E '^(Exception in thread|[a-z]+(\.[A-Za-z0-9_$]+)+(Exception|Error))' "$work/server.log" \
        | grep -v -E '^(java\.net\.SocketException: Connection reset|io\.netty\.channel\.unix\.Errors\$NativeIoException: .*Connection reset by peer)' \
        | sed "s/^/[$allocator] /" >> "$work/stderr" || true
    if [[ $round == 1 ]]; then # the server's start line: its transport, and whether buffers report an address
      grep -m1 '^serving with' "$work/server.log" | sed 's/^/  /' || true
    fi
    printf '%-6s %-19s %6s %12s %10s %11s MiB %s\n' "$round" "$allocator" "$load" "$rps" "$p99" "$(( (hwm + 512) / 1024 ))" "$errors"
    echo "$allocator $rps $p99 $hwm $load" >> "$work/results"
    port=$((port + 1))
  done
done
echo "finished at load $(load1)"
echo
echo "median over $rounds rounds; ratio = Slabwise / best Netty allocator (requests/s: highest; p99 and peak RSS: lowest)"
echo
ALLOCATORS_ORDER="$allocators" python3 - "$work/results" <<'PYTHON'
import os, statistics, sys

def millis(text):
    for unit, scale in (("us", 1e-3), ("ms", 1.0), ("s", 1e3)):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * scale
    return float("nan")

runs = {}
for line in open(sys.argv[1]):
    allocator, rps, p99, hwm, load = line.split()
    runs.setdefault(allocator, []).append((float(rps), millis(p99), int(hwm) / 1024.0, load))
allocators = [a for a in os.environ["ALLOCATORS_ORDER"].split() if a in runs]
med = {a: [statistics.median(r[i] for r in runs[a]) for i in range(3)] for a in allocators}
netty = [a for a in allocators if not a.startswith("slabwise")]
print("| allocator | requests/s | p99 (ms) | peak RSS (MiB) | requests/s / best Netty | p99 / best Netty | peak RSS / best Netty | loads |")
print("|---|---|---|---|---|---|---|---|")
for a in allocators:
    cells = ["%.0f" % med[a][0], "%.2f" % med[a][1], "%.0f" % med[a][2]]
    for i, pick in ((0, max), (1, min), (2, min)):
        best = pick((n for n in netty), key=lambda n: med[n][i], default=None)
        cells.append("-" if best is None or a in netty else "**%.2f** (vs %s)" % (med[a][i] / med[best][i], best))
    print("| %s | %s | %s |" % (a, " | ".join(cells), " ".join(r[3] for r in runs[a])))
PYTHON
if [[ -s $work/stderr ]]; then
  echo
  echo "exceptions in the servers' output (count, [allocator] exception):"
  sort "$work/stderr" | uniq -c | sort -rn | head -20
fi
