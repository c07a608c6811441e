#!/usr/bin/env bash
# Fetches each Redisson version the interop tests run against from Maven Central
# (into ~/.m2, then target/lib-<version>) and compiles the driver against it into
# target/classes-<version>. Installs a JDK and Maven from Debian when missing.
set -euo pipefail
cd "$(dirname "$0")"
. ../../scripts/lib.sh
ensure_commands java:default-jdk-headless javac:default-jdk-headless mvn:maven
# Keep in step with for_each_version! in tests/redisson.rs.
for version in 4.7.0 3.52.0; do
  rm -rf "target/lib-$version" "target/classes-$version"
  mvn -q -B -Dredisson.version="$version" dependency:copy-dependencies -DoutputDirectory="target/lib-$version"
  mkdir -p "target/classes-$version"
  javac -Xlint:all -Werror -d "target/classes-$version" -cp "target/lib-$version/*" Interop.java
done
