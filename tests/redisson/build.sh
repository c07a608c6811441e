#!/usr/bin/env bash
# Fetches Redisson 4.7.0 from Maven Central (into ~/.m2, then target/lib) and
# compiles the interop driver. Installs a JDK and Maven from Debian when missing.
set -euo pipefail
cd "$(dirname "$0")"
. ../../scripts/lib.sh
ensure_commands java:default-jdk-headless javac:default-jdk-headless mvn:maven
mvn -q -B dependency:copy-dependencies -DoutputDirectory=target/lib
mkdir -p target/classes
javac -d target/classes -cp 'target/lib/*' Interop.java
