"""Turns one run's junit reports, test markers and captured exchanges into OUT/failures.md and OUT/failures.json.

For every failing or erroring test: its id, the error pytest reported, and the HTTP exchanges recorded while it ran
that Silo answered with a status >= 400 (or did not answer), each with method, target, the headers that matter, the
start of the request body and Silo's answer. Tests that skipped themselves are listed with their reasons. Also usable
alone on a finished run: python report.py OUT [skips.txt]

The system tests run twice at most: "system" (the emulator client, anonymous) and "system-sa" (only the tests the
first pass could not run, with a service-account key); for the combined count a test's system-sa outcome replaces
its system one.
"""
import bisect
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

INTERESTING = ("content-type", "content-range", "content-length", "transfer-encoding", "range", "x-upload-",
               "x-goog-", "if-", "x-http-method-override", "authorization", "location")
OUTCOMES = ("passed", "failed", "error", "skipped")


def _nodeid(classname, name, known):
    parts = classname.split(".")
    for i in range(len(parts), 0, -1):
        candidate = "/".join(parts[:i]) + ".py::" + "::".join(parts[i:] + [name])
        if candidate in known:
            return candidate
    return "/".join(parts) + ".py::" + name


def parse_junit(path, known):
    """[{id, outcome, message, detail, time}] or None when there is no report."""
    cases = []
    if not os.path.exists(path):
        return None
    root = ET.parse(path).getroot()
    for tc in root.iter("testcase"):
        nodeid = _nodeid(tc.get("classname", ""), tc.get("name", ""), known)
        outcome, message, detail = "passed", "", ""
        for child in tc:
            if child.tag in ("failure", "error"):
                # A failure wins over a teardown error for the category; both messages are kept.
                outcome = "failed" if child.tag == "failure" or outcome == "failed" else "error"
                message = (message + " | " if message else "") + (child.get("message") or "")
                detail += (child.text or "")
            elif child.tag == "skipped" and outcome == "passed":
                outcome = "skipped"
                message = child.get("message") or ""
        cases.append({"id": nodeid, "outcome": outcome, "message": message, "detail": detail,
                      "time": float(tc.get("time") or 0)})
    return cases


def load_windows(out):
    """{(run label, test id): [start, end]} from the plugin's markers."""
    windows = {}
    path = os.path.join(out, "markers.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                m = json.loads(line)
                w = windows.setdefault((m.get("run", ""), m["test"]), [None, None])
                w[0 if m["phase"] == "start" else 1] = m["t"]
    return windows


def load_exchanges(out):
    path = os.path.join(out, "http.jsonl")
    ex = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                rec = json.loads(line)
                if "method" in rec:
                    ex.append(rec)
    ex.sort(key=lambda r: r["t"])
    return ex


def _short(text, n):
    text = text if len(text) <= n else text[:n] + f"…(+{len(text) - n})"
    return json.dumps(text, ensure_ascii=False)[1:-1]


def describe(rec, body=300):
    hdrs = [f"{k}: {v}" for k, v in rec.get("req_headers", []) if k.lower().startswith(INTERESTING)]
    if rec.get("req_framing") == "chunked":
        hdrs.append(f"(chunked body, {rec.get('req_chunks')} chunks)")
    lines = [f"`{rec['method']} {rec['target']}`"]
    if hdrs:
        lines.append("request headers: " + "; ".join(_short(h, 200) for h in hdrs))
    if rec.get("req_body_len"):
        lines.append(f"request body ({rec['req_body_len']} B): `{_short(rec.get('req_body', ''), body)}`")
    if rec.get("status") is None:
        lines.append("→ no response (connection closed)")
    else:
        lines.append(f"→ **{rec['status']}** ({rec.get('resp_body_len', 0)} B): "
                     f"`{_short(rec.get('resp_body', ''), body)}`")
    return lines


def error_line(case):
    detail = case["detail"].strip().splitlines()
    e_lines = [line[1:].strip() for line in detail if line.startswith("E ")]
    text = " / ".join(e_lines[:4]) if e_lines else case["message"]
    return _short(text, 600)


def _deselected(out, label):
    try:
        with open(os.path.join(out, f"{label}.log")) as f:
            found = re.findall(r"(\d+) deselected", f.read())
        return int(found[-1]) if found else 0
    except OSError:
        return 0


def _counts(cases):
    return {k: sum(1 for c in cases if c["outcome"] == k) for k in OUTCOMES}


def _line(c):
    return f"{c['passed']} passed, {c['failed']} failed, {c['error']} errors, {c['skipped']} skipped"


def merge_junit(out, junits):
    """OUT/junit.xml: every run's <testsuite>, each named after its run, under one <testsuites>."""
    merged = ET.Element("testsuites")
    for junit in junits:
        if not os.path.exists(junit):
            continue
        root = ET.parse(junit).getroot()
        for suite in ([root] if root.tag == "testsuite" else list(root.iter("testsuite"))):
            suite.set("name", os.path.splitext(os.path.basename(junit))[0])
            merged.append(suite)
    ET.ElementTree(merged).write(os.path.join(out, "junit.xml"), encoding="utf-8", xml_declaration=True)


def write(out, junits, skips):
    windows = load_windows(out)
    known = {test for _, test in windows}
    exchanges = load_exchanges(out)
    times = [r["t"] for r in exchanges]
    results, md, data = [], ["# gcs-system failures (generated by report.py)", ""], {}
    combined = {}  # system + system-sa, by test id
    for junit in junits:
        label = os.path.splitext(os.path.basename(junit))[0]
        cases = parse_junit(junit, known)
        if cases is None:
            results.append({"label": label, "missing": True, "passed": 0, "failed": 0, "errors": 0, "skipped": 0})
            md += [f"## {label}: no junit report (the run was stopped or broke)", ""]
            print(f"{label}: no junit report")
            continue
        c = _counts(cases)
        r = {"label": label, "missing": False, "passed": c["passed"], "failed": c["failed"], "errors": c["error"],
             "skipped": c["skipped"], "deselected": _deselected(out, label)}
        results.append(r)
        line = _line(c)
        if r["deselected"]:
            line += f", {r['deselected']} deselected"
            if label == "system":
                line += f" ({len(skips)} skips.txt entries)"
        md += [f"## {label}: {line}", ""]
        print(f"{label}: {line}")
        if label.startswith("system"):
            combined.update({case["id"]: case for case in cases})
        for case in cases:
            if case["outcome"] not in ("failed", "error"):
                continue
            w = windows.get((label, case["id"]), [None, None])
            window = []
            if w[0] is not None:
                lo = bisect.bisect_left(times, w[0])
                hi = bisect.bisect_right(times, w[1] if w[1] is not None else float("inf"))
                window = exchanges[lo:hi]
            failing = [x for x in window if x.get("status") is None or x["status"] >= 400]
            data[f"{label}::{case['id']}"] = {"run": label, "id": case["id"], "outcome": case["outcome"],
                                              "error": error_line(case), "exchanges": window}
            md += [f"### {case['outcome'].upper()} `{case['id']}`", "",
                   f"- error: `{error_line(case)}`",
                   f"- {len(window)} exchanges while it ran, {len(failing)} answered >= 400 or not at all"]
            shown = failing[-6:] if failing else window[-2:]
            if not failing and shown:
                md.append("- no HTTP error; its last exchanges:")
            for x in shown:
                d = describe(x)
                md.append("  - " + d[0])
                md += ["    " + s for s in d[1:]]
            md.append("")
        skipped = [case for case in cases if case["outcome"] == "skipped"]
        if skipped:
            md += [f"### {label}: tests that skipped themselves", ""]
            md += [f"- `{case['id']}`: {_short(case['message'], 300)}" for case in skipped]
            md.append("")
    if any(r["label"] == "system-sa" for r in results):
        c = _counts(combined.values())
        print(f"system, both passes (a test's system-sa outcome replacing its system one): {_line(c)}")
        md.insert(2, f"System tests, both passes (system-sa replacing system): {_line(c)}\n")
    merge_junit(out, junits)
    with open(os.path.join(out, "failures.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(out, "failures.json"), "w") as f:
        json.dump(data, f, indent=1)
    final = list(combined.values())
    for r in results:
        if not r["label"].startswith("system") and not r["missing"]:
            final += parse_junit(os.path.join(out, r["label"] + ".xml"), known)
    t = _counts(final)
    print(f"gcs-system: {t['passed']} passed, {t['failed'] + t['error']} failed, {t['skipped']} skipped")
    return {"runs": results, "total": t, "missing": any(r["missing"] for r in results)}


if __name__ == "__main__":
    out_dir = sys.argv[1]
    sk = []
    if len(sys.argv) > 2:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from run import read_skips
        sk = read_skips(sys.argv[2])
    found = sorted((os.path.join(out_dir, p) for p in os.listdir(out_dir) if p.endswith(".xml") and p != "junit.xml"),
                   key=lambda p: ({"system.xml": 0, "system-sa.xml": 1}.get(os.path.basename(p), 2), p))
    write(out_dir, found, sk)
