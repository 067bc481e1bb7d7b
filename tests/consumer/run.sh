#!/usr/bin/env bash
# An app that depends on SiloStorage and SiloStorageUI the way apps do: by version, from a tagged git checkout.
# Clones this repository's HEAD, tags it with the CHANGELOG's latest version when the clone lacks that tag, writes
# a consumer package depending on it `from:` that version, builds it (SwiftPM refuses unsafe build flags in such a
# dependency), and runs its top-level seed code and an image-loading program against a live `silo serve` that
# serves thumbnails.
#   tests/consumer/run.sh [SILO_BINARY]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
binary=${1:-$repo/.build/release/silo}
version=$(sed -n 's/^## \([0-9][0-9.]*\).*/\1/p' "$repo/CHANGELOG.md" | head -1)
work=$(mktemp -d)
server=
trap 'if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
git clone --quiet "$repo" "$work/silo"
# What SwiftPM sees of the dependency: no target of it may carry an unsafe flag (the build below would refuse one).
if (cd "$work/silo" && swift package dump-package) | grep -q '"unsafeFlags"'; then
    echo "consumer: the package declares unsafe flags for a dependent" >&2
    exit 1
fi
git -C "$work/silo" rev-parse -q --verify "refs/tags/$version" >/dev/null || git -C "$work/silo" tag "$version"
mkdir -p "$work/app"
cp -R "$repo/tests/consumer/Sources" "$work/app/"
sed -e "s|@SILO_URL@|file://$work/silo|" -e "s|@SILO_VERSION@|$version|" -e "s|@SILO_PACKAGE@|silo|" \
    "$repo/tests/consumer/Package.swift.template" > "$work/app/Package.swift"
echo "consumer: building against silo $version (a tagged clone of $(git -C "$repo" rev-parse --short HEAD))"
(cd "$work/app" && swift build -Xswiftc -warnings-as-errors 2>&1 | grep -E "error|warning|Compiling (Seed|Image)Consumer|Build complete" | head -20)
# Thumbnails for the consumer's bucket: 128x128 on demand, and a 64x64 preset for photos/ (docs/images.md). The
# photo is made here with libvips' own tool, as the server's tests make theirs.
cat > "$work/images.json" <<'JSON'
{"buckets": {"consumer.appspot.com": {"sizes": ["128x128"],
  "presets": [{"path": "photos/**", "sizes": ["64x64"]}]}}}
JSON
vips zone "$work/zone.v" 640 480
vips linear "$work/zone.v" "$work/photo.jpg[Q=90]" 127.5 127.5 --uchar
"$binary" serve --port 0 --data "$work/data" --images "$work/images.json" > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do
    port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/serve.log" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
done
SILO_HOST=127.0.0.1 SILO_PORT=$port "$work/app/.build/debug/SeedConsumer"
# SiloStorageUI through the same tagged dependency: the loader and its caches (its Apple glue is not built here).
SILO_HOST=127.0.0.1 SILO_PORT=$port SILO_PHOTO="$work/photo.jpg" "$work/app/.build/debug/ImageConsumer"
