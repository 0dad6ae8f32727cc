#!/usr/bin/env bash
# Compile ARX's library from a checkout of its sources, for bench/bench_grid.py.
#
#   bench/arx/build.sh ARX_CHECKOUT OUT_DIR     (prints the class path to use)
#
# ARX_CHECKOUT: a clone of https://github.com/arx-deidentifier/arx at commit aacd487
# (ARX 3.9.2). Nothing of ARX is kept in this repository. Its src/main compiles with
# the jars of its lib/ant once the certificate classes (ARXCertificate, Watermark) are
# left out and two one-line stubs stand for pdfbox's PDFont and hadoop's Writable, whose
# jars are not needed by anonymize() (and are missing from some copies of the repository).
set -euo pipefail
src=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)
jars=$(find "$src/lib/ant" -name '*.jar' | sort | tr '\n' ':')
mkdir -p "$out/stubs/org/apache/pdfbox/pdmodel/font" "$out/stubs/org/apache/hadoop/io" "$out/classes" "$out/stub-classes"
echo 'package org.apache.pdfbox.pdmodel.font; public class PDFont {}' \
  > "$out/stubs/org/apache/pdfbox/pdmodel/font/PDFont.java"
echo 'package org.apache.hadoop.io; public interface Writable { void write(java.io.DataOutput out) throws java.io.IOException; void readFields(java.io.DataInput in) throws java.io.IOException; }' \
  > "$out/stubs/org/apache/hadoop/io/Writable.java"
javac -nowarn -d "$out/stub-classes" $(find "$out/stubs" -name '*.java')
find "$src/src/main" -name '*.java' | grep -v -e 'certificate/ARXCertificate.java' -e 'certificate/resources/Watermark.java' > "$out/sources.txt"
javac -nowarn -encoding UTF-8 -cp "$out/stub-classes:$jars" -d "$out/classes" @"$out/sources.txt" 2>&1 | grep -v '^Note:' >&2 || true
(cd "$src/src/main" && find . -type f ! -name '*.java' -exec cp --parents {} "$out/classes/" \;)
test -f "$out/classes/org/deidentifier/arx/ARXAnonymizer.class" || { echo "ARX did not compile" >&2; exit 1; }
echo "$out/classes:$out/stub-classes:$jars"
