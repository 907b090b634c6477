#!/usr/bin/python3
"""hw/hls_checklist.py - the loops a first csynth must report as the kernels
claim them: every labelled loop of kernels/*.c with a PIPELINE pragma, its
function, the II the pragma asks for and the largest trip count its
LOOP_TRIPCOUNT gives, both evaluated for one profile, and the DEPENDENCE
pragma the II leans on where there is one.  The csynth report's loop table
(UG1399 "Synthesis Summary": per loop, achieved II against target, trip
count) is read against it line by line.

usage: /usr/bin/python3 hw/hls_checklist.py [--profile NAME] [--cc CC] [KERNELS_DIR]
       (`make hls-checklist PROFILE=stories260k` runs it; docs/hls-flow.md
       holds its output for stories260k, and tests/test_hls_flow.c checks
       that the two agree)

Output: a Markdown table on stdout.  Exit status 0, 1 when a pragma's value
cannot be evaluated (a macro the profile does not define), 2 on bad usage.

How: the sources are scanned as text (our kernel style: a function's
definition starts in column 0, a loop's label sits alone on the line before
it, its pragmas follow its opening line); the II and trip count
expressions are then evaluated by compiling one small C file against
kernels/tsr_kernel.h with the profile's header, as `make csim-gcc` builds
the kernels (-DTSR_CSIM).
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pragma_literals import eval_exprs  # noqa: E402  (one C evaluator for both)

FUNC_RE = re.compile(r'^(?:static\s+)?(?:inline\s+)?[A-Za-z_][\w\s\*]*?\b([A-Za-z_]\w*)\s*\(')
LABEL_RE = re.compile(r'^\s*([A-Za-z_]\w*):\s*$')
PIPE_RE = re.compile(r'#pragma\s+HLS\s+PIPELINE\s+II=(\S+)')
TRIP_RE = re.compile(r'#pragma\s+HLS\s+LOOP_TRIPCOUNT\s+min=\S+\s+max=(\S+)')
DEP_RE = re.compile(r'#pragma\s+HLS\s+DEPENDENCE\s+(.*)$')

# Functions whose loops run at load or as a debug read, not per token.
NOT_PER_TOKEN = {"op_load": "load", "load_w8_words": "load", "op_read_mem": "debug read", "fwd_read_logits": "debug read",
                 "link_drain": "a refused pass", "tsr_kernel_serve": "per command"}


def scan(kdir):
    """(file, line, function, label, ii, trip, dependence) per pipelined loop
    (the line is the loop's; the table leaves it out, so that an edit
    elsewhere does not change the checklist)."""
    rows = []
    for name in sorted(os.listdir(kdir)):
        if not name.endswith(".c"):
            continue
        with open(os.path.join(kdir, name), encoding="utf-8") as f:
            lines = f.read().split("\n")
        func = None
        for i, line in enumerate(lines):
            m = FUNC_RE.match(line)
            if m and not line.startswith((" ", "#", "/", "}")) and not line.rstrip().endswith(";"):
                func = m.group(1)
            m = LABEL_RE.match(line)
            if not m:
                continue
            ii = trip = dep = None
            # the loop's opening line, then its pragmas, before anything else
            for k in range(i + 2, min(i + 8, len(lines))):
                s = lines[k].strip()
                if not s.startswith("#pragma"):
                    break
                p = PIPE_RE.search(s)
                if p:
                    ii = p.group(1)
                t = TRIP_RE.search(s)
                if t:
                    trip = t.group(1)
                d = DEP_RE.search(s)
                if d:
                    dep = d.group(1)
            if ii:
                rows.append((name, i + 2, func, m.group(1), ii, trip, dep))
    return rows


def evaluate(exprs, kdir, profile, cc):
    """{expr: value} for the profile, compiled and run once."""
    exprs = sorted(set(e for e in exprs if e))
    return dict(zip(exprs, eval_exprs(exprs, kdir, profile, cc, "hls-checklist")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="stories260k")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("kernels", nargs="?", default="kernels")
    a = ap.parse_args()
    if not os.path.isfile(os.path.join(a.kernels, "profiles", "profile_%s.h" % a.profile)):
        sys.stderr.write("hls-checklist: no profile '%s' in %s/profiles\n" % (a.profile, a.kernels))
        return 2
    rows = scan(a.kernels)
    val = evaluate([r[4] for r in rows] + [r[5] for r in rows], a.kernels, a.profile, a.cc)
    print("| loop | function | file | runs | target II | trip count at most | the II leans on |")
    print("|---|---|---|---|---|---|---|")
    for name, line, func, label, ii, trip, dep in rows:
        runs = NOT_PER_TOKEN.get(func, "per token")
        if "_slr_" in label:
            # the SLR crossings' loops (#if TSR_SLRS > 1): built only by a
            # profile that spans SLRs, in place of the loop without _slr_
            runs += ", over SLRs only"
        iiv = val[ii] if ii == val.get(ii) else "%s (`%s`)" % (val[ii], ii)
        tv = "-" if not trip else val[trip] if trip == val.get(trip) else "%s (`%s`)" % (val[trip], trip)
        print("| `%s` | `%s` | %s | %s | %s | %s | %s |"
              % (label, func, name, runs, iiv, tv, "DEPENDENCE " + dep if dep else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
