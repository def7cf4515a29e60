#!/usr/bin/env python3
"""Figures 1-3 of bench/speed.py for two builds, interleaved.

A change that must not cost speed is measured against the build it started
from, in the same minutes and under the same load. Each round measures, for
build A then build B:
  1. lint / parse: ddplint_bench --rounds 1 on the torch corpus (one thread);
  2. ddplint -j 1 against ast-grep -j 1 on the mixed corpus: A's ddplint, B's
     ddplint and ast-grep run side by side (--runs times each, interleaved),
     and each build's figure is ast-grep's median over its own median;
  3. the -j 2 speed-up over -j 1 on the torch corpus (A -j 1, A -j 2, B -j 1,
     B -j 2, interleaved).
It prints each round, then per figure the median over the rounds for A and B
and B - A.

Usage: bench/compare_builds.py BUILD_A BUILD_B [--rounds N] [--runs N]
Each BUILD is a build folder holding ddplint and bench/ddplint_bench (for
example the release build of an earlier commit in a git worktree).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import speed  # noqa: E402  (the corpora, the commands and the timing of bench/speed.py)


def lint_cmd(build, *args):
    speed.BIN = os.path.join(build, "ddplint")
    return speed.lint_cmd(*args)


def figure_1(build):
    out = subprocess.run([os.path.join(build, "bench/ddplint_bench"), "--rounds", "1",
                          os.path.join(speed.CORPUS, "torch")], capture_output=True, text=True, check=True).stdout
    return float(re.search(r"ratio lint / parse: ([0-9.]+)x", out).group(1))


def figure_2(builds, runs):
    mixed = os.path.join(speed.CORPUS, "mixed")
    astgrep = [speed.ASTGREP, "scan", "-j", "1", "--no-ignore", "vcs", "--config",
               os.path.join(speed.ASTGREP_DIR, "sgconfig.yml"), mixed]
    *ddp, ag = speed.side_by_side([lint_cmd(b, "-j", "1", mixed) for b in builds] + [astgrep], runs)
    return [ag / t for t in ddp]


def figure_3(builds):
    torch = os.path.join(speed.CORPUS, "torch")
    cmds = [lint_cmd(b, "-j", j, torch) for b in builds for j in ("1", "2")]
    t = speed.side_by_side(cmds, 1)
    return [t[0] / t[1], t[2] / t[3]]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build_a")
    p.add_argument("build_b")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--runs", type=int, default=5, help="runs of each command per round in figure 2")
    a = p.parse_args()
    builds = [os.path.abspath(a.build_a), os.path.abspath(a.build_b)]
    for b in builds:
        for tool in ("ddplint", "bench/ddplint_bench"):
            if not os.path.exists(os.path.join(b, tool)):
                sys.exit(f"{os.path.join(b, tool)} is missing")
    speed.ensure_corpora()
    if not os.path.exists(speed.ASTGREP):
        subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=speed.ASTGREP_DIR, check=True,
                       stdout=subprocess.DEVNULL)
    names = ["1 lint / parse", "2 times faster than ast-grep", "3 -j 2 speed-up"]
    samples = {n: ([], []) for n in names}
    for r in range(a.rounds):
        values = [[figure_1(b) for b in builds], figure_2(builds, a.runs), figure_3(builds)]
        for n, (va, vb) in zip(names, values):
            samples[n][0].append(va)
            samples[n][1].append(vb)
        print(f"round {r + 1}: " + "; ".join(f"{n}: A {va:.2f} B {vb:.2f}" for n, (va, vb) in zip(names, values)),
              flush=True)
    print(f"A = {builds[0]}\nB = {builds[1]}\nmedians of {a.rounds} interleaved rounds:")
    for n in names:
        ma, mb = statistics.median(samples[n][0]), statistics.median(samples[n][1])
        print(f"  figure {n:30s} A {ma:6.2f}  B {mb:6.2f}  B - A {mb - ma:+.2f}")


if __name__ == "__main__":
    main()
