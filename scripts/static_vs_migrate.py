"""Does `port analyze --static` say what `port migrate` then does, on code
nobody here wrote? FOLDER is read as one program: the static analysis (no
profile, no inputs), then `port migrate` on each function the planner was
asked about, with no types given, so that the program's own calls, in any
of its files, give them (or migrate says it has none). Prints one line per function and a
summary: the static verdict agrees when it is `cuda` exactly where migrate,
having types, does not refuse.

    python scripts/static_vs_migrate.py FOLDER PORT WORKDIR [--timeout S]

It runs in WORKDIR/<FOLDER's name>/ (a copy of FOLDER, with its .port/: a
package keeps its name, so its absolute imports resolve); nothing
is written elsewhere.
"""
import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("port")
    ap.add_argument("work")
    ap.add_argument("--timeout", type=int, default=300)
    a = ap.parse_args()
    folder, work = Path(a.folder).resolve(), Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rows = []
    # The folder is one program: every file, its calls across modules.
    w = work / folder.name
    shutil.copytree(folder, w, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    q = subprocess.run([a.port, "analyze", "--static", "--json", "."], cwd=w,
                       capture_output=True, text=True, timeout=a.timeout)
    try:
        fns = json.loads(q.stdout)["functions"]
    except (json.JSONDecodeError, KeyError):
        sys.exit("analyze failed: %s" % q.stderr.strip()[-300:])
    for fn in fns:
        plan = fn.get("migration_plan")
        local = fn["qualname"]
        if not plan or "." in local:
            continue  # not asked (object mode for good), or a method
        name = fn["module"] + "." + local
        try:
            p = subprocess.run(
                [a.port, "migrate", "--function", name, ".", "--json", "--python", sys.executable],
                cwd=w, capture_output=True, text=True, timeout=a.timeout)
            j = json.loads(p.stdout)
            status = j.get("status", "failed")
            if status == "failed" and j.get("code") == "no_types":
                status = "no types"
            from_ = ",".join(sorted({t.get("from", "?") for t in j.get("arg_types") or []}))
            why = (j.get("reasons") or [{}])[0].get("message", j.get("reason", ""))
        except subprocess.TimeoutExpired:
            status, from_, why = "timeout", "", ""
        except json.JSONDecodeError:
            status, from_, why = "failed", "", (p.stderr.strip().splitlines() or [""])[-1]
        judged = status not in ("no types", "timeout", "failed")
        agree = (fn["verdict"] == "cuda") == (status != "refused") if judged else None
        rows.append((fn["module"], local, fn["verdict"], plan.get("types_from", ""), status, from_, agree))
        print("%-24s %-24s static %-8s (%-7s) migrate %-12s types %-8s %s  %s" % (
            rows[-1][0][:24], rows[-1][1][:24], rows[-1][2], rows[-1][3], status, from_,
            {True: "agrees", False: "DISAGREES", None: "-"}[agree], why[:90]), flush=True)
    judged = [r for r in rows if r[6] is not None]
    counts = {}
    for r in rows:
        counts[r[4]] = counts.get(r[4], 0) + 1
    print("functions asked: %d (%s)" % (len(rows), ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
    print("static verdict agrees with migrate on %d of %d that migrate could type; disagrees on: %s" % (
        sum(1 for r in judged if r[6]), len(judged),
        ", ".join("%s:%s (%s)" % (r[0], r[1], r[2]) for r in judged if not r[6]) or "none"))


if __name__ == "__main__":
    main()
