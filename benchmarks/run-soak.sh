#!/usr/bin/env bash
# Soak test: one Slabwise pool at its ceiling, for a chosen time, under an HTTP server and clients on
# loopback, a log cache and a block cache compacted in the background, platform and virtual threads
# starting and ending while they allocate, small pools opened and closed, and a chunk source that refuses
# one request in N (io.slabwise.benchmarks.soak.Soak, whose javadoc says what is checked). Every
# --check-seconds it pauses the workers, checks the pool's invariants and prints one line; at the end it
# releases everything, closes the pool and checks that nothing is committed. Exits 1 at the first violated
# invariant, so CI fails with it.
# Java: $JAVA_HOME/bin/java if JAVA_HOME is set, else java on the PATH (on Java 17 the virtual threads are
# skipped, with the reason printed). Needs the benchmarks jar (benchmarks/build-jar.sh, with -Pnetty-4.2 for
# Netty 4.2). The JVM runs with -Xmx1g and -XX:NativeMemoryTracking=summary (the resident-memory check
# subtracts the JVM's own native memory as tracking reports it).
# Usage: benchmarks/run-soak.sh [soak options...]
#   benchmarks/run-soak.sh --minutes 1 --check-seconds 15      the smoke run CI makes
#   benchmarks/run-soak.sh                                     10 minutes, a check a minute
#   benchmarks/run-soak.sh --minutes 240 --ceiling-mib 4096    hours on a server
#   benchmarks/run-soak.sh --minutes 1 --inject-miscount       must fail: the soak's own tally is off by one
# Options: see benchmarks/README.md or --help. Environment: JAVA_HOME, JAR, JAVA_OPTS (added to the JVM's
# options, e.g. -Xmx4g for a large ceiling); CSV, the CSV file (default target/soak.csv; --csv overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benchmarks/bench-common.sh
source benchmarks/bench-common.sh
csv=${CSV:-target/soak.csv}
# Below Java 22 the chunks are direct memory from malloc, and the soak's refusing chunk source wraps it: a
# pool carves region groups (which glibc unmaps whole) from its built-in source only, so without a fixed
# mmap threshold glibc keeps chunks freed one by one resident and the resident-memory check fails. The
# setting docs/operations.md gives for that case, unless the caller set one.
if (( $(java_major) < 22 )) && [[ -z ${MALLOC_MMAP_THRESHOLD_:-} ]]; then
  export MALLOC_MMAP_THRESHOLD_=131072
  echo "MALLOC_MMAP_THRESHOLD_=131072: direct chunks through a chunk source of the soak's own (see docs/operations.md)"
fi
echo "jar: $jar  java: $("$java" -version 2>&1 | head -1)  netty: $(netty_version)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
# shellcheck disable=SC2086 # JAVA_OPTS is a list of options
exec "$java" -Xmx1g -XX:NativeMemoryTracking=summary --enable-native-access=ALL-UNNAMED -Dslabwise.noGlibcWarning=true \
    ${JAVA_OPTS:-} -cp "$jar" io.slabwise.benchmarks.soak.Soak --csv "$csv" "$@"
