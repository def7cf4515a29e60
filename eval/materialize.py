#!/usr/bin/env python3
"""Lays out the evaluation's programs at their pinned commits, for eval/run.py.

Third-party code never enters this repository: the copies live in a folder you
name (outside the repository, or in the git-ignored eval/corpus/).

  eval/materialize.py --from-git DIR OUT
      DIR holds one git repository per manifest repository, named
      owner+name (a bare mirror `owner+name/repo`, a bare `owner+name.git`, or
      a clone `owner+name/.git`). For each, the pinned commit's text files
      (.py, .sh, .bash, .slurm, .sbatch, .toml, .cfg, .ipynb, .md, .txt, .yaml,
      .yml, .gitignore) are written to OUT/owner+name/ with the commit in
      OUT/owner+name/.eval-commit. Blobs missing from a partial mirror are left out.
      An empty repository (git init) in OUT/owner+name/.git stands for the clone's:
      ddplint finds a file's project by such markers (linter/project.hpp) and
      reads .gitignore files through it, so both layouts give the same projects.
  eval/materialize.py --clone OUT
      clones each repository from GitHub into OUT/owner+name (needs network)
      and checks out the pinned commit.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TEXT = (".py", ".sh", ".bash", ".slurm", ".sbatch", ".toml", ".cfg", ".ipynb", ".md", ".txt", ".yaml", ".yml", ".gitignore")


def manifest():
    with open(os.path.join(HERE, "manifest.json")) as f:
        return json.load(f)


def repos():
    out = {}
    for p in manifest()["programs"]:
        prev = out.setdefault(p["repo"], p["commit"])
        if prev != p["commit"]:
            sys.exit(f"manifest: {p['repo']} is pinned at two commits ({prev}, {p['commit']})")
    return out


def git_dir(base, slug):
    for cand in (os.path.join(base, slug, "repo"), os.path.join(base, slug + ".git"), os.path.join(base, slug, ".git"),
                 os.path.join(base, slug)):
        if os.path.isdir(cand) and subprocess.run(["git", "--git-dir", cand, "rev-parse", "--git-dir"],
                                                  capture_output=True).returncode == 0:
            return cand
    return None


def export(gdir, commit, out):
    listing = subprocess.run(["git", "--git-dir", gdir, "ls-tree", "-r", "-z", commit], capture_output=True, check=True).stdout
    wanted = []
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, path = entry.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob" and mode != b"120000" and path.decode("utf-8", "replace").endswith(TEXT):
            wanted.append((sha.decode(), path.decode("utf-8", "surrogateescape")))
    cat = subprocess.Popen(["git", "--git-dir", gdir, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    written = missing = 0
    for sha, path in wanted:
        cat.stdin.write(sha.encode() + b"\n")
        cat.stdin.flush()
        header = cat.stdout.readline().split()
        if len(header) < 3 or header[1] == b"missing":
            missing += 1
            continue
        data = cat.stdout.read(int(header[2]))
        cat.stdout.read(1)  # the newline after the object
        target = os.path.join(out, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(data)
        written += 1
    cat.stdin.close()
    cat.wait()
    with open(os.path.join(out, ".eval-commit"), "w") as f:
        f.write(commit + "\n")
    # the project marker a clone has, and a repository libgit2 opens, so that a whole-repository
    # program (paths ["."]) is linted with its .gitignore files as a maintainer's clone would be
    if not os.path.isfile(os.path.join(out, ".git", "HEAD")):
        subprocess.run(["git", "init", "-q", out], check=True)
    return written, missing


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--from-git", metavar="DIR")
    g.add_argument("--clone", action="store_true")
    p.add_argument("out")
    a = p.parse_args()
    failed = False
    for repo, commit in sorted(repos().items()):
        slug = repo.replace("/", "+")
        out = os.path.join(a.out, slug)
        if a.clone:
            if not os.path.isdir(os.path.join(out, ".git")):
                subprocess.run(["git", "clone", "-q", f"https://github.com/{repo}", out], check=True)
            subprocess.run(["git", "-C", out, "checkout", "-q", commit], check=True)
            with open(os.path.join(out, ".eval-commit"), "w") as f:
                f.write(commit + "\n")
            print(f"{repo}: cloned at {commit[:12]}")
            continue
        gdir = git_dir(a.from_git, slug)
        if gdir is None:
            print(f"{repo}: no git repository for it under {a.from_git}", file=sys.stderr)
            failed = True
            continue
        written, missing = export(gdir, commit, out)
        print(f"{repo}: {written} files at {commit[:12]}" + (f" ({missing} missing from the mirror)" if missing else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
