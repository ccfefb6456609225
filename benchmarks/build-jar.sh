#!/usr/bin/env bash
# Builds the benchmarks jar with the reactor (nothing is installed into the local Maven repository) and
# keeps a copy named after the JDK that built it and the Netty version in it, so that jars for the two
# stacks live side by side and a later rebuild does not change a jar a run is using. Prints the copy's path.
# The JDK is $JAVA_HOME's if set, else Maven's default; extra arguments go to Maven.
# Usage: benchmarks/build-jar.sh [maven options...]
#   benchmarks/build-jar.sh                                  JDK 17 + Netty 4.1 (the default stack)
#   JAVA_HOME=/path/to/jdk-25 benchmarks/build-jar.sh -Pnetty-4.2   the modern stack (with the Java 22 classes)
#   JAVA_HOME=/path/to/jdk-25 benchmarks/build-jar.sh -Pnetty-4.2-native   Netty 4.2.18 with its epoll transport
# Then run any script with JAR=<printed path> (and the same JAVA_HOME).
set -euo pipefail
cd "$(dirname "$0")/.."
mvn -B -q -pl benchmarks -am package -DskipTests "$@" >&2
jar=benchmarks/target/benchmarks.jar
if [[ -n "${JAVA_HOME:-}" ]]; then java="$JAVA_HOME/bin/java"; else java=java; fi
major=$("$java" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2; exit}')
netty=$(python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
    "$jar" META-INF/maven/io.netty/netty-buffer/pom.properties | awk -F= '$1 == "version" {print $2}')
copy=benchmarks/target/benchmarks-jdk$major-netty-$netty.jar
cp "$jar" "$copy"
echo "$copy"
