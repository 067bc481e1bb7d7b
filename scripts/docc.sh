#!/usr/bin/env bash
# Builds SiloStorage's DocC documentation with the toolchain's own docc (no plugin package): symbol graphs from a
# build of the target in its own build directory, then `docc convert` of the catalog with them. Fails on a broken
# catalog or symbol graph. Output: .build/docc/SiloStorage.doccarchive.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/docc
rm -rf "$out/symbols" "$out/SiloStorage.doccarchive"
mkdir -p "$out/symbols"
swift build --build-path "$out/build" --target SiloStorage \
    -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$PWD/$out/symbols" >/dev/null
docc convert Sources/SiloStorage/SiloStorage.docc --additional-symbol-graph-dir "$out/symbols" \
    --fallback-display-name SiloStorage --fallback-bundle-identifier dev.silo.SiloStorage \
    --output-path "$out/SiloStorage.doccarchive" --warnings-as-errors
echo "docc: $(find "$out/SiloStorage.doccarchive/data/documentation" -name '*.json' | wc -l) pages in $out/SiloStorage.doccarchive"
