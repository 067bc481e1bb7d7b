"""What scripts/embed-console.sh and scripts/embed-openapi.sh share: a text as a Swift raw multi-line string literal,
and writing the generated file (or, with --check, failing when the committed one is stale)."""
import sys


def raw_literal(text, source, indent):
    """(fence, body): the '#'s of a raw literal that holds `text` byte for byte, and its lines indented by `indent`
    spaces (the closing delimiter's, which the compiler strips again; an empty line stays empty, and a final newline
    survives as a last empty line). Nothing in a raw literal is an escape unless followed by the fence, so the fence
    takes more '#'s than any run that follows a quote or a backslash in the text."""
    if "\r" in text:
        sys.exit(f"{source}: carriage returns cannot be embedded byte for byte in a multi-line literal")
    hashes = 1
    while ('"' + "#" * hashes) in text or ("\\" + "#" * hashes) in text:
        hashes += 1
    pad = " " * indent
    return "#" * hashes, "\n".join((pad + line) if line else "" for line in text.split("\n"))


def write_or_check(target, swift, script, summary, check):
    """With `check`, exits 1 unless `target` holds `swift` already; else writes it."""
    if check:
        try:
            current = open(target, encoding="utf-8").read()
        except FileNotFoundError:
            current = None
        if current != swift:
            sys.exit(f"{target} is stale: run {script}")
        sys.exit(0)
    with open(target, "w", encoding="utf-8") as f:
        f.write(swift)
    print(f"wrote {target} ({summary})")
