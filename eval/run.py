#!/usr/bin/env python3
"""ddplint's evaluation on real code: lints each program of eval/manifest.json
and scores the findings against eval/triage.json.

Prints, over every finding of every program:
  - findings, triaged and untriaged;
  - precision: true / (true + false), over triaged findings (debatable ones
    are counted apart, not as true), and the same without the findings of
    rules about deprecated APIs (--list-rules marks them);
  - the debatable share: debatable / triaged;
  - false findings at error severity (the goal is none);
  - true findings of the triage that ddplint no longer reports ("lost");
  - known misses: what should fire and where; how many are found now (a miss
    marked "withdrawn" was re-triaged as no finding and is not counted; those
    marked "scope": "project" are the per-step costs in engine-style files and
    helpers that only project-wide analysis can see, counted apart too).
Each figure twice: with the default selection (what a user sees), and with
the opt-in rules too (--list-rules marks them; they are off by default
because these figures found them mostly debatable). The programs are linted
once with every rule; rules do not depend on each other, so the default
selection's findings are the others.

Usage:
  eval/materialize.py --from-git /path/to/mirrors CORPUS   (once; or --clone CORPUS)
  eval/run.py --corpus CORPUS [--bin build/release/ddplint] [--show untriaged|false|debatable|lost|misses|all]
              [--only ID,ID] [--json]
A finding is keyed by (program, path, line, code); the triage records a
verdict and the reason for each. The programs are linted as given in the
manifest, with --isolated (their own configuration files, if any, are not ddplint's);
a program whose paths are ["."] is a whole repository, linted at its root with
what git ignores left out (`ddplint .`, as its maintainer would), and reported
per batch ("batch" in the manifest). Every figure is also given per severity.
"""
import argparse
import collections
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VERDICTS = ("true", "false", "debatable")


# the frameworks of manifest programs' "framework" field that the framework figure counts
FRAMEWORKS = ("accelerate", "lightning", "fabric", "hf-trainer")


def load(name):
    with open(os.path.join(HERE, name)) as f:
        return json.load(f)


def rule_codes(binary, flag):
    out = subprocess.run([binary, "rule", "--all", "--format", "json"], capture_output=True, text=True, check=True).stdout
    return {r["code"] for r in json.loads(out) if r.get(flag)}


def lint(binary, corpus, program, opt_in):
    where = os.path.join(corpus, program["repo"].replace("/", "+"))
    stamp = os.path.join(where, ".eval-commit")
    if not os.path.isfile(stamp):
        sys.exit(f"{where}: not laid out (run eval/materialize.py first)")
    with open(stamp) as f:
        commit = f.read().strip()
    if commit != program["commit"]:
        sys.exit(f"{where}: at {commit[:12]}, the manifest pins {program['commit'][:12]} (run eval/materialize.py again)")
    # a whole-repository program (paths ["."]) is linted as its maintainer would lint a clone:
    # `ddplint .` at the root, with what git ignores left out; the others as named, all of them
    gitignore = [] if whole_repository(program) else ["--no-respect-gitignore"]
    proc = subprocess.run([binary, "--isolated", *gitignore, "--no-cache", "--extend-select", ",".join(sorted(opt_in)),
                           "--format", "json", *program["paths"]],
                          cwd=where, capture_output=True, text=True)
    # exit 2 with findings on stdout: some files could not be read (ddplint names each on stderr)
    # and the others were linted; the run goes on and says which
    if proc.returncode == 2 and proc.stdout.lstrip().startswith("["):
        print(f"{program['id']}: ddplint exited 2, the other files linted: {proc.stderr.strip()}", file=sys.stderr)
    elif proc.returncode not in (0, 1):
        sys.exit(f"{program['id']}: ddplint exited {proc.returncode}: {proc.stderr.strip()}")
    return [{"program": program["id"], "path": os.path.normpath(d["filename"]), "line": d["location"]["row"], "code": d["code"],
             "severity": d["severity"], "message": d["message"]} for d in json.loads(proc.stdout)]


def whole_repository(program):
    """A program linted at its repository's root (`ddplint .`), the first-contact figure's shape."""
    return program["paths"] == ["."]


def key(entry):
    return (entry["program"], entry["path"], entry["line"], entry["code"])


# every finding of the run (all programs, opt-in rules included): a triaged
# finding that moved ("moved_to": program, path, line, code; the launch-script
# link of issue 24 moves DDP206 from a script to the launch that feeds it) is
# not lost while the finding it moved to is reported
ALL_FOUND = set()


def report(findings, triage, ids, deprecated, verbose):
    """Prints the figures over `findings`; returns (found keys, lost, misses)."""
    found = {key(f) for f in findings}
    moved = lambda t: "moved_to" in t and key(t["moved_to"]) in ALL_FOUND
    lost = [t for t in triage["findings"]
            if t["program"] in ids and t["verdict"] == "true" and key(t) not in found and not moved(t)]
    every_miss = [m for m in triage.get("misses", []) if m["program"] in ids]
    withdrawn = [m for m in every_miss if m.get("withdrawn")]
    misses = [m for m in every_miss if not m.get("withdrawn")]
    misses_found = [m for m in misses if key(m) in found]
    project_misses = [m for m in misses if m.get("scope") == "project"]
    project_found = [m for m in project_misses if key(m) in found]
    counts = collections.Counter(f["verdict"] for f in findings)
    triaged = sum(counts[v] for v in VERDICTS)

    def precision(fs):
        t = sum(1 for f in fs if f["verdict"] == "true")
        n = t + sum(1 for f in fs if f["verdict"] == "false")
        return f"{t / n:.3f} ({t}/{n})" if n else "n/a"

    error_false = [f for f in findings if f["verdict"] == "false" and f["severity"] == "error"]
    by_severity = collections.defaultdict(collections.Counter)
    for f in findings:
        by_severity[f["severity"]][f["verdict"]] += 1
    print(f"findings: {len(findings)}; triaged {triaged}, untriaged {counts[None]}")
    print(f"  true {counts['true']}, false {counts['false']}, debatable {counts['debatable']}")
    print(f"precision: {precision(findings)}; without deprecated-API rules "
          f"({', '.join(sorted(deprecated))}): {precision([f for f in findings if f['code'] not in deprecated])}")
    print(f"debatable share: " + (f"{counts['debatable'] / triaged:.3f} ({counts['debatable']}/{triaged})" if triaged else "n/a"))
    print(f"false findings at error severity: {len(error_false)}")
    for severity in ("error", "warning", "info"):
        c = by_severity.get(severity)
        if c:
            t, n = c["true"], c["true"] + c["false"]
            print(f"  {severity}: {sum(c.values())} findings, true {t}, false {c['false']}, debatable {c['debatable']}"
                  + (f", untriaged {c[None]}" if c[None] else "")
                  + (f"; precision {t / n:.3f}" if n else "")
                  + (f"; true among triaged {t / (n + c['debatable']):.3f}" if n + c["debatable"] else ""))
    print(f"true findings lost (triaged true, not reported now): {len(lost)}")
    print(f"known misses found: {len(misses_found)} of {len(misses)}"
          + (f" ({len(withdrawn)} more withdrawn: re-triaged as no finding)" if withdrawn else ""))
    if project_misses:
        print(f"  per-step costs in engine-style files and helpers (scope project): {len(project_found)} of "
              f"{len(project_misses)} ({len(project_found) / len(project_misses):.2f})")
    if verbose:
        by_code = collections.defaultdict(collections.Counter)
        for f in findings:
            by_code[f["code"]][f["verdict"] or "untriaged"] += 1
        print("per rule (true/false/debatable/untriaged):")
        for code in sorted(by_code):
            c = by_code[code]
            print(f"  {code}: {c['true']}/{c['false']}/{c['debatable']}/{c['untriaged']}")
    return found, lost, misses


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="the folder eval/materialize.py laid the programs out in")
    p.add_argument("--bin", default=os.path.join(ROOT, "build/release/ddplint"))
    p.add_argument("--show", choices=["untriaged", "false", "debatable", "lost", "misses", "all"])
    p.add_argument("--only", help="program ids, comma-separated")
    p.add_argument("--json", action="store_true", help="print the findings (with verdicts) as JSON and stop")
    a = p.parse_args()
    manifest, triage = load("manifest.json"), load("triage.json")
    programs = manifest["programs"]
    if a.only:
        wanted = set(a.only.split(","))
        programs = [q for q in programs if q["id"] in wanted]
    ids = {q["id"] for q in programs}
    verdicts = {}
    for t in triage["findings"]:
        if t["verdict"] not in VERDICTS:
            sys.exit(f"triage: {key(t)}: verdict {t['verdict']!r} is not one of {VERDICTS}")
        if key(t) in verdicts:
            sys.exit(f"triage: {key(t)} is triaged twice")
        verdicts[key(t)] = t
    opt_in = rule_codes(a.bin, "opt_in")
    findings = [f for q in programs for f in lint(a.bin, a.corpus, q, opt_in)]
    for f in findings:
        t = verdicts.get(key(f))
        f["verdict"] = t["verdict"] if t else None
        f["reason"] = t["reason"] if t else None
    if a.json:
        json.dump(findings, sys.stdout, indent=1)
        print()
        return
    deprecated = rule_codes(a.bin, "deprecated_api")
    ALL_FOUND.update(key(f) for f in findings)
    print(f"programs: {len(programs)} from {len({q['repo'] for q in programs})} repositories")
    default = [f for f in findings if f["code"] not in opt_in]
    print(f"== default selection (opt-in rules off: {', '.join(sorted(opt_in))})")
    report(default, triage, ids, deprecated, verbose=False)
    # the programs written for a framework (manifest "framework"), the goal of
    # issue 23: precision >= 0.95 and a debatable share <= 0.10 there too
    framework_ids = {q["id"] for q in programs if q.get("framework") in FRAMEWORKS}
    if framework_ids:
        fw = [q for q in programs if q["id"] in framework_ids]
        kinds = collections.Counter(q["framework"] for q in fw)
        print(f"== default selection, programs written for a framework: {len(fw)} "
              f"({', '.join(f'{k} {kinds[k]}' for k in FRAMEWORKS if kinds[k])})")
        report([f for f in default if f["program"] in framework_ids], triage, framework_ids, deprecated, verbose=False)
    # the findings in launch scripts (shell and SLURM files; issue 24), whatever their program
    shell_ext = (".sh", ".bash", ".slurm", ".sbatch")
    launch = [f for f in default if f["path"].endswith(shell_ext)]
    launch_ids = {q["id"] for q in programs if all(p.endswith(shell_ext) for p in q["paths"])}
    if launch_ids:
        print(f"== default selection, findings in launch scripts ({len(launch_ids)} programs of launch scripts only)")
        report(launch, triage, launch_ids, deprecated, verbose=False)
    # the findings in the shell blocks of Markdown files (READMEs, training guides)
    md_ext = (".md", ".markdown")
    markdown = [f for f in default if f["path"].endswith(md_ext)]
    markdown_ids = {q["id"] for q in programs if all(p.endswith(md_ext) for p in q["paths"])}
    if markdown_ids:
        print(f"== default selection, findings in Markdown shell blocks ({len(markdown_ids)} programs of Markdown only)")
        report(markdown, triage, markdown_ids, deprecated, verbose=False)
    # whole repositories linted at their root, batch by batch (the first-contact issue): each
    # batch's first-contact figure is recorded in eval/README.md before any change made for it
    for batch in sorted({q["batch"] for q in programs if "batch" in q}):
        batch_ids = {q["id"] for q in programs if q.get("batch") == batch}
        print(f"== default selection, whole repositories of batch {batch} ({len(batch_ids)}, `ddplint .` at the root)")
        report([f for f in default if f["program"] in batch_ids], triage, batch_ids, deprecated, verbose=False)
    print("== with the opt-in rules")
    found, lost, misses = report(findings, triage, ids, deprecated, verbose=True)
    show = a.show
    if show:
        rows = []
        if show in ("untriaged", "all"):
            rows += [("untriaged", f) for f in findings if f["verdict"] is None]
        if show in ("false", "all"):
            rows += [("false", f) for f in findings if f["verdict"] == "false"]
        if show in ("debatable", "all"):
            rows += [("debatable", f) for f in findings if f["verdict"] == "debatable"]
        if show in ("lost", "all"):
            rows += [("lost", t) for t in lost]
        if show in ("misses", "all"):
            rows += [("missed" if key(m) not in found else "miss found", m) for m in misses]
        for label, f in rows:
            print(f"{label}: {f['program']}: {f['path']}:{f['line']}: {f['code']} {f.get('message') or f.get('reason', '')}")


if __name__ == "__main__":
    main()
