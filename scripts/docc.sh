#!/usr/bin/env bash
# Builds SiloStorage's DocC documentation with the toolchain's own docc (no plugin package): SiloStorage's public
# symbol graph (the compiler's, from a build of SiloStorage and what it imports alone, in a build directory of its
# own), then `docc convert` of the catalog with that graph. Warnings are errors, so a broken link or catalog fails.
# Output: .build/docc/SiloStorage.doccarchive.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/docc
rm -rf "$out/SiloStorage.doccarchive" "$out/graphs"
# Only SiloStorage's modules: `swift package dump-symbol-graph` built every target of the package again (70 s of a
# fresh `make test`, against 19 s).
# The compiler writes a graph only when it compiles the module: without the graphs, build again from nothing.
[ -f "$out/raw/SiloStorage.symbols.json" ] || rm -rf "$out/build"
swift build --build-path "$out/build" --target SiloStorage -Xswiftc -emit-symbol-graph \
    -Xswiftc -emit-symbol-graph-dir -Xswiftc "$out/raw" -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public
mkdir -p "$out/graphs"
# SiloStorage's own graph and its extension graphs (`SiloStorage@Foundation…`), not those of what it imports.
find "$out/raw" \( -name 'SiloStorage.symbols.json' -o -name 'SiloStorage@*.symbols.json' \) -exec cp {} "$out/graphs/" \;
docc convert Sources/SiloStorage/SiloStorage.docc --additional-symbol-graph-dir "$out/graphs" \
    --fallback-display-name SiloStorage --fallback-bundle-identifier dev.silo.SiloStorage \
    --output-path "$out/SiloStorage.doccarchive" --warnings-as-errors
echo "docc: $(find "$out/SiloStorage.doccarchive/data/documentation" -name '*.json' | wc -l) pages in $out/SiloStorage.doccarchive"
