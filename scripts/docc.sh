#!/usr/bin/env bash
# Builds SiloStorage's DocC documentation with the toolchain's own docc (no plugin package): the package's public
# symbol graphs (`swift package dump-symbol-graph`, in a build directory of its own), then `docc convert` of the
# catalog with SiloStorage's graph. Warnings are errors, so a broken link or catalog fails.
# Output: .build/docc/SiloStorage.doccarchive.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/docc
rm -rf "$out/SiloStorage.doccarchive" "$out/graphs"
# It also tries the test-runner modules, which have no symbols to give and fail; SiloStorage's graph is what counts.
swift package --build-path "$out/build" dump-symbol-graph --minimum-access-level public >/dev/null 2>&1 || true
mkdir -p "$out/graphs"
# SiloStorage's own graph and its extension graphs (`SiloStorage@Foundation…`), not SiloStorageUI's.
find "$out"/build/*/symbolgraph \( -name 'SiloStorage.symbols.json' -o -name 'SiloStorage@*.symbols.json' \) \
    -exec cp {} "$out/graphs/" \;
docc convert Sources/SiloStorage/SiloStorage.docc --additional-symbol-graph-dir "$out/graphs" \
    --fallback-display-name SiloStorage --fallback-bundle-identifier dev.silo.SiloStorage \
    --output-path "$out/SiloStorage.doccarchive" --warnings-as-errors
echo "docc: $(find "$out/SiloStorage.doccarchive/data/documentation" -name '*.json' | wc -l) pages in $out/SiloStorage.doccarchive"
