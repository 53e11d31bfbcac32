"""`port migrate` on a corpus of benchmark files that say how they are run,
as pythran's numpy-benchmarks do: each `NAME.py` defines `NAME` and holds
the comment lines `#setup: STATEMENTS` and `#run: CALL`.

Each file becomes a program, `NAME.py` with a main block that runs the
setup and the call, and `port` is asked about the function `NAME` in one
of two ways a user would:

- `--calls`: `port migrate --function NAME` with no types given, so the
  program's own call (or, where it types none, the body's use) gives them
  and verification runs on generated inputs;
- `--profile` (the default): `port analyze NAME.py` runs the program under
  the profiler, which captures the call's types and arrays, then
  `port migrate --function NAME` verifies on them.

With `--all`, every function of the program the analysis asked the planner
about is migrated (after the profile: the user who ranks hotspots and
migrates each), not only `NAME`; the run line names the call.

Prints one line per function and the summary line
`functions N, verified V, refused R, mismatch M, failed F`.

    python scripts/setup_run_corpus.py FOLDER PORT WORKDIR [--calls] [--all] [--timeout S]

It writes only under WORKDIR (one folder per benchmark, with its .port/).
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path


def program(src):
    """The benchmark with a main block that runs its setup and its call;
    None when it does not say how it is run."""
    setup = re.search(r"^#\s*setup:\s*(.+)$", src, re.M)
    run = re.search(r"^#\s*run:\s*(.+)$", src, re.M)
    if not setup or not run:
        return None
    return src.rstrip() + "\n\n\nif __name__ == \"__main__\":\n    %s\n    %s\n" % (
        setup.group(1).strip(), run.group(1).strip())


def port_json(what, cmd, cwd, timeout):
    """port's one JSON document; RuntimeError with its last line of stderr
    when there is none."""
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        raise RuntimeError("%s: %s" % (what, (p.stderr.strip().splitlines() or ["?"])[-1]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("port")
    ap.add_argument("work")
    ap.add_argument("--calls", action="store_true",
                    help="no profile: types from the program's call or the body")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--only", help="comma-separated benchmark names")
    ap.add_argument("--all", action="store_true",
                    help="migrate every function the analysis planned or refused, after the profile")
    a = ap.parse_args()
    folder, work = Path(a.folder).resolve(), Path(a.work).resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    only = set(a.only.split(",")) if a.only else None
    counts = {"verified": 0, "refused": 0, "mismatch": 0, "failed": 0}
    for f in sorted(folder.glob("*.py")):
        name = f.stem
        if only and name not in only:
            continue
        prog = program(f.read_text())
        if prog is None:
            continue
        w = work / name
        w.mkdir()
        (w / f.name).write_text(prog)
        analyze = [a.port, "analyze", f.name, "--json", "--python", sys.executable]
        names = [name]
        if a.all:
            try:
                fns = port_json("analyze", analyze, w, a.timeout)["functions"]
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                counts["failed"] += 1
                print("%-26s failed    %s" % (name, e))
                continue
            names = [fn["qualname"] for fn in fns
                     if fn.get("migration_plan") and "." not in fn["qualname"].split(fn["module"] + ".", 1)[-1]]
        for fname in names:
            started = time.time()
            from_, why = "", ""
            try:
                if not a.calls and not a.all:
                    port_json("analyze", analyze, w, a.timeout)
                j = port_json("migrate", [a.port, "migrate", "--function", fname, f.name, "--json",
                                          "--python", sys.executable], w, a.timeout)
                status = j.get("status", "failed")
                if status == "failed" and (j.get("verification") or {}).get("mismatch"):
                    status = "mismatch"
                from_ = ",".join(sorted({t.get("from", "?") for t in j.get("arg_types") or []}))
                why = (j.get("reasons") or [{}])[0].get("message", j.get("reason", ""))
                if status == "failed" and not why:
                    why = j.get("error") or json.dumps(j.get("verification"))[:200]
            except subprocess.TimeoutExpired:
                status, why = "failed", "timed out after %d s" % a.timeout
            except RuntimeError as e:
                status, why = "failed", str(e)
            counts[status if status in counts else "failed"] += 1
            print("%-26s %-9s %-14s %5.1fs  %s" % (fname if a.all else name, status, from_,
                                                  time.time() - started,
                                                  why.replace("\n", " ")[:160]), flush=True)
    print("%s %d, verified %d, refused %d, mismatch %d, failed %d" % (
        "functions" if a.all else "benchmarks", sum(counts.values()),
        counts["verified"], counts["refused"], counts["mismatch"], counts["failed"]))


if __name__ == "__main__":
    main()
