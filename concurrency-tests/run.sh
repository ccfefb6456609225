#!/usr/bin/env bash
# Runs the jcstress tests of the Slabwise engine from concurrency-tests/target/jcstress.jar.
#
#   concurrency-tests/run.sh [mode] [more jcstress options]
#
# mode is a jcstress preset: sanity, quick (the default), default, tough or stress.
# quick is the CI run, under two minutes on 2 cores: instead of jcstress's matrix of JVM
# configurations it runs one, the tiered compilers with C2's randomizers of instruction scheduling
# and value numbering on (C2 is the compiler that reorders; the randomizers make it reorder
# differently in every fork), without per-actor split compilation, in epochs small enough for the
# tests whose states build a pool, 5 iterations of 500 ms per fork (two forks per test on JDK 17,
# which also toggles biased locking; one on later JDKs). The other modes run jcstress's full
# matrix of JVM configurations and compilation modes: sanity (one state per configuration, a
# minute or two) only shows that every test runs everywhere; default, tough and stress take
# from tens of minutes to hours on 2 cores.
# Options after the mode go to jcstress as they are, e.g. -t SnapshotTest to run one test.
#
# Uses $JAVA_HOME/bin/java when JAVA_HOME is set, else java on the PATH. Exits non-zero when a
# test FAILED or had an ERROR, when jcstress did not finish, or when the jar is missing.
# Reports go to concurrency-tests/target/jcstress-results/ (index.html), the log to
# concurrency-tests/target/jcstress.log.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
mode="${1:-quick}"
[ $# -gt 0 ] && shift

jar="$here/target/jcstress.jar"
if [ ! -f "$jar" ]; then
    echo "run.sh: $jar is missing; build it first: mvn -B -ntp install -DskipTests (in the repository root)" >&2
    exit 2
fi
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"

# Every forked test JVM: no glibc warning from the pool's default chunk source, and no native-access
# warning on Java 22+ (a pool builder looks up the mmap chunk source even when a test brings its own).
fork_flags="-Dslabwise.noGlibcWarning=true --enable-native-access=ALL-UNNAMED"
c2_stress="-XX:+UnlockDiagnosticVMOptions -XX:+StressLCM -XX:+StressGCM -XX:+StressIGVN -XX:+StressCCP"

case "$mode" in
    quick)
        preset=(-m quick -sc false -jvmArgs "$fork_flags $c2_stress" -strideCount 10 -iters 5 -time 500 -v)
        limit="${JCSTRESS_TIMEOUT:-15m}"
        ;;
    sanity|default|tough|stress)
        preset=(-m "$mode" -jvmArgsPrepend "$fork_flags")
        limit="${JCSTRESS_TIMEOUT:-0}"
        ;;
    *)
        echo "usage: $0 [sanity|quick|default|tough|stress] [more jcstress options]" >&2
        exit 2
        ;;
esac

# jcstress writes its result blob into the working directory: keep it under target/
cd "$here/target"
log="$here/target/jcstress.log"
rm -rf jcstress-results jcstress-results-*.bin.gz
set +e
timeout --foreground "$limit" "$java" -jar "$jar" "${preset[@]}" -r jcstress-results "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

if [ "$status" -eq 124 ]; then
    echo "run.sh: jcstress did not finish within $limit" >&2
    exit 1
fi
if ! grep -q '^RUN RESULTS:' "$log"; then
    echo "run.sh: jcstress ran no test (exit code $status); see $log" >&2
    exit 1
fi
# besides the exit code, read the summary: both lists must be empty
if [ "$status" -ne 0 ] || ! grep -q '^  Failed tests: No matches\.' "$log" || ! grep -q '^  Error tests: No matches\.' "$log"; then
    echo "run.sh: some jcstress tests FAILED or had an ERROR (exit code $status); see $log and" \
         "$here/target/jcstress-results/index.html" >&2
    exit 1
fi
echo "run.sh: every jcstress test passed ($mode mode)"
