#!/usr/bin/env bash
# Typechecks every fuzz harness against the modules of the debug build (`swift build`, which `make unit` runs; debug
# modules are built with -enable-testing, so the harnesses' `@testable import`s resolve): a harness that stopped
# compiling against the code it checks fails `make test` in seconds, without the sanitizer build of `fuzz/ci.sh`
# (several minutes), which stays the run that actually fuzzes.
#   fuzz/typecheck.sh [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then targets=("$@"); else mapfile -t targets < <(fuzz/run --list); fi
modules=$(swift build --show-bin-path)/Modules
# The package name SwiftPM gave the modules (it follows the checkout's folder), for `package` declarations.
package=$(grep -o -m1 -- '-package-name","[^"]*' .build/debug.yaml | cut -d'"' -f3)
c_includes=()
for dir in Sources/C*/; do
    if [ -d "${dir}include" ]; then c_includes+=(-I "${dir}include"); else c_includes+=(-I "${dir%/}"); fi
done
failed=()
for target in "${targets[@]}"; do
    [ -d "fuzz/$target" ] || { echo "fuzz-typecheck: no harness $target" >&2; exit 2; }
    if swiftc -typecheck -swift-version 6 -parse-as-library -package-name "$package" \
        -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility \
        -enable-upcoming-feature InternalImportsByDefault -I "$modules" "${c_includes[@]}" \
        fuzz/common/*.swift "fuzz/$target"/*.swift; then
        echo "fuzz-typecheck: $target ok"
    else
        failed+=("$target")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz-typecheck: ${failed[*]} no longer compile against Sources/" >&2
    exit 1
fi
