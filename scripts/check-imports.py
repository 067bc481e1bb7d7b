#!/usr/bin/env python3
"""Fails when a Swift target imports a module of this package that Package.swift does not declare as its dependency,
or when the declared graph breaks the server's layering (an API target depending on another, the kit on an API).

SwiftPM lets a target import any module that happens to be built before it (a dependency of a dependency), so an
import can work today without being declared and break when the graph changes; it also hides who really depends on
whom (which backends a target reaches, which C library it wraps). This check reads the declared graph from
`swift package dump-package` and every `import` in each target's sources, and reports each import of a package
module (a Swift or C target of this package) that is neither the target itself nor one of its declared
dependencies. Modules from outside the package (Foundation, Glibc, Testing, ...) are the compiler's business.

    scripts/check-imports.py               check the checker, then the package (run by `make unit`)
    scripts/check-imports.py --self-test   only check the checker: a made-up undeclared import must be reported

Environment: SWIFT (default `swift`) is the toolchain's driver.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# `import X`, `@testable import X`, `public import X`, `@_spi(Testing) import X`, `import struct X.Y`, with
# attributes and an access level in any combination; the module is the first component.
IMPORT = re.compile(
    r"^\s*(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*"
    r"(?:(?:public|package|internal|fileprivate|private)\s+)?"
    r"import\s+(?:(?:typealias|struct|class|enum|protocol|let|var|func)\s+)?"
    r"([A-Za-z_][A-Za-z0-9_]*)"
)


def describe_package():
    swift = os.environ.get("SWIFT", "swift")
    out = subprocess.run(
        [swift, "package", "--package-path", ROOT, "dump-package"], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out)


def dependency_names(target):
    """The names a target declares: `"X"`, `.target(name: "X", condition: ...)` and `.product(name: "X", ...)`."""
    names = set()
    for dependency in target.get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in dependency:
                names.add(dependency[kind][0])
    return names


def source_directory(target):
    if target.get("path"):
        return os.path.join(ROOT, target["path"])
    return os.path.join(ROOT, "Tests" if target["type"] == "test" else "Sources", target["name"])


def imports_in(directory):
    """(file, line number, module) for every import in the Swift files under `directory`."""
    found = []
    for base, _, files in os.walk(directory):
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(base, name)
            with open(path, encoding="utf-8") as source:
                for number, line in enumerate(source, 1):
                    match = IMPORT.match(line)
                    if match:
                        found.append((os.path.relpath(path, ROOT), number, match.group(1)))
    return found


def violations(targets, imports_of):
    """Each import of a package module that its target does not declare, as a message."""
    package_modules = {t["name"] for t in targets}
    problems = []
    for target in targets:
        if target["type"] in ("system", "binary", "plugin", "macro"):
            continue
        allowed = dependency_names(target) | {target["name"]}
        for path, number, module in imports_of(target):
            if module in package_modules and module not in allowed:
                problems.append(
                    f"{path}:{number}: {target['name']} imports {module}, which is not among its dependencies in "
                    "Package.swift"
                )
    return problems


# The server's layering (docs/architecture.md): an API target builds on the kit and never on another API, and the kit
# on none of them. Checked on the declared graph, which the imports above are held to.
API_TARGETS = {"SiloFirebaseAPI", "SiloGCSAPI", "SiloConsole", "SiloTestFaults"}
KIT_MUST_NOT_USE = API_TARGETS | {"SiloThumbnails", "SiloServer"}


def layer_violations(targets):
    problems = []
    for target in targets:
        declared = dependency_names(target)
        if target["name"] in API_TARGETS:
            for other in sorted(declared & (API_TARGETS - {target["name"]})):
                problems.append(f"Package.swift: {target['name']} depends on {other}: an API never uses another API")
        if target["name"] == "SiloServerKit":
            for other in sorted(declared & KIT_MUST_NOT_USE):
                problems.append(f"Package.swift: SiloServerKit depends on {other}: the kit names no API")
    return problems


def check(targets):
    problems = layer_violations(targets)
    problems += violations(targets, lambda target: imports_in(source_directory(target)))
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"check-imports: {len(problems)} undeclared import(s)", file=sys.stderr)
        return 1
    print(f"check-imports: {len(targets)} targets, every package import declared")
    return 0


def self_test(targets):
    """The real package graph, with sources made up in a temporary directory: one target importing a package
    module it does not declare (reported), the same imports declared (not reported)."""
    core = next(t for t in targets if t["name"] == "SiloCore")
    with tempfile.TemporaryDirectory() as directory:
        with open(os.path.join(directory, "Bad.swift"), "w", encoding="utf-8") as source:
            source.write("import Foundation\n@_spi(Testing) public import SiloSQLite\nimport struct SiloCore.Thing\n")
        made_up = lambda target: imports_in(directory) if target is core else []
        reported = violations(targets, made_up)
        declared = dict(core, dependencies=[{"byName": ["SiloSQLite", None]}])
        quiet = violations([declared] + [t for t in targets if t is not core], made_up)
    expected = "SiloCore imports SiloSQLite"
    if len(reported) != 1 or expected not in reported[0] or quiet:
        print(f"check-imports self-test FAILED: reported {reported}, once declared {quiet}", file=sys.stderr)
        return 1
    # An API made to depend on another is reported; the real graph is not.
    firebase = next(t for t in targets if t["name"] == "SiloFirebaseAPI")
    crossed = dict(firebase, dependencies=firebase["dependencies"] + [{"byName": ["SiloGCSAPI", None]}])
    layered = layer_violations([crossed] + [t for t in targets if t is not firebase])
    if len(layered) != 1 or "SiloFirebaseAPI depends on SiloGCSAPI" not in layered[0]:
        print(f"check-imports self-test FAILED: an API depending on another gave {layered}", file=sys.stderr)
        return 1
    print(f"check-imports self-test: reported '{reported[0].split(': ', 1)[1]}'")
    return 0


if __name__ == "__main__":
    package_targets = describe_package()["targets"]
    status = self_test(package_targets)
    if status == 0 and sys.argv[1:] != ["--self-test"]:
        status = check(package_targets)
    sys.exit(status)
