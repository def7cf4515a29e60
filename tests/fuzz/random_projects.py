#!/usr/bin/env python3
"""Random multi-file projects through the ddplint executable (issue 22).

Each seed builds one project under a temporary folder: a pyproject.toml, a
training script and modules in packages and beside it, importing each other
at random (absolute, package-relative, `from pkg import mod`, `import a.b as
m`, cycles, modules that do not exist, a package and a module of one name,
a function named like a module), with helpers that sync (`.item()`), run a
collective, train, or call further helpers, called every step, under a
guard, once per epoch or not at all. Then it checks what must hold for any
project:

  1. ddplint never crashes or reports an internal error (exit 0 or 1);
  2. a file's findings do not depend on which files were named: linting the
     folder gives each file what linting that file alone gives it;
  3. -j 1 and -j 2 print the same bytes;
  4. a warm cache gives what --no-cache gives, and so does a warm cache after
     one random file is edited (the facts of the others may change with it).

Usage: tests/fuzz/random_projects.py DDPLINT_BIN [--seeds N] [--first K]
Prints a line per failing seed (with the project kept for a look) and exits 1
when any fails.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def make_project(root, rng):
    """Writes a random project; returns the relative paths of its Python files."""
    write(os.path.join(root, "pyproject.toml"), "# random project\n")
    modules = []  # (relative path, dotted name)
    packages = ["pkg", "util", "engine"][: rng.randint(1, 3)]
    for p in packages:
        write(os.path.join(root, p, "__init__.py"), "")
        modules.append((f"{p}/__init__.py", p))
        for i in range(rng.randint(1, 4)):
            name = rng.choice(["misc", "helpers", "dist", "train", "engine", f"m{i}"])
            modules.append((f"{p}/{name}.py", f"{p}.{name}"))
    for name in rng.sample(["utils", "engine", "losses", "pkg"], rng.randint(1, 3)):  # `pkg.py` beside `pkg/`
        modules.append((f"{name}.py", name))
    modules = list(dict.fromkeys(modules))
    dotted = [d for _, d in modules]
    funcs = ["helper", "step", "reduce", "log", "train_one_epoch", "misc", "utils"]
    texts = {}
    for rel, mod in modules:
        lines = ["import torch", "import torch.distributed as dist"]
        aliases = []
        for _ in range(rng.randint(0, 4)):
            target = rng.choice(dotted + ["missing_module", "pkg.nothing"])
            kind = rng.randint(0, 3)
            if kind == 0:
                lines.append(f"import {target}")
                aliases.append(target)
            elif kind == 1:
                lines.append(f"import {target} as m{len(aliases)}")
                aliases.append(f"m{len(aliases)}")
            elif kind == 2 and "." in target:
                head, tail = target.rsplit(".", 1)
                lines.append(f"from {head} import {tail}")
                aliases.append(tail)
            elif "/" in rel:
                lines.append(f"from . import {rng.choice(['misc', 'helpers', 'dist', 'nothing'])} as r{len(aliases)}")
                aliases.append(f"r{len(aliases)}")
        lines.append("")
        for f in rng.sample(funcs, rng.randint(1, 4)):
            body = rng.choice([
                "    return x.norm().item()",
                "    dist.all_reduce(x)\n    return x",
                "    t = torch.tensor(x).cuda()\n    dist.all_reduce(t)\n    return t.item()",
                "    model(x).sum().backward()\n    opt.step()",
                "    if isinstance(x, torch.Tensor):\n        x = x.item()\n    return x",
                "    return x",
            ])
            call = ""
            if aliases and rng.random() < 0.6:
                call = f"    {rng.choice(aliases)}.{rng.choice(funcs)}(x, model, opt)\n"
            lines.append(f"def {f}(x, model=None, opt=None):\n{call}{body}\n")
        texts[rel] = "\n".join(lines) + "\n"
    # the training script: a CUDA step loop calling into the modules
    main = ["import torch"]
    calls = []
    for mod in rng.sample(dotted, min(len(dotted), rng.randint(1, 4))):
        alias = "a" + str(len(calls))
        main.append(f"import {mod} as {alias}")
        calls.append(f"{alias}.{rng.choice(funcs)}")
    main += ["model = torch.nn.Linear(4, 4).cuda()", "opt = torch.optim.SGD(model.parameters(), lr=0.1)",
             "for epoch in range(3):"]
    if calls and rng.random() < 0.5:
        main.append(f"    {rng.choice(calls)}(epoch, model, opt)")
    main += ["    for step, x in enumerate(range(10)):", "        x = torch.randn(4, 4, device='cuda')",
             "        loss = model(x).sum()", "        loss.backward()", "        opt.step()"]
    for c in calls:
        how = rng.randint(0, 2)
        if how == 0:
            main.append(f"        {c}(loss, model, opt)")
        elif how == 1:
            main.append(f"        if step % 10 == 0:\n            {c}(loss)")
        else:
            main.append(f"        v = {c}(loss.item())\n        print(v)")
    texts["main.py"] = "\n".join(main) + "\n"
    for rel, text in texts.items():
        write(os.path.join(root, rel), text)
    return sorted(texts)


def ddplint(binary, root, *args):
    proc = subprocess.run([binary, "--isolated", "--exit-zero", "--format", "json", *args], cwd=root,
                          capture_output=True, text=True, timeout=120)
    return proc


def by_file(out):
    files = {}
    for d in json.loads(out):
        files.setdefault(d["filename"], []).append(d)
    return files


def check(binary, seed, keep):
    rng = random.Random(seed)
    root = tempfile.mkdtemp(prefix=f"ddplint_random_project_{seed}_")
    problems = []
    try:
        files = make_project(root, rng)
        whole = ddplint(binary, root, "--no-cache", ".")
        if whole.returncode != 0 or "internal error" in whole.stderr:
            return [f"exit {whole.returncode}: {whole.stderr.strip()[:300]}"], root
        folder = by_file(whole.stdout)
        for rel in files:
            alone = ddplint(binary, root, "--no-cache", rel)
            if alone.returncode != 0:
                problems.append(f"{rel} alone: exit {alone.returncode}: {alone.stderr.strip()[:200]}")
                continue
            if by_file(alone.stdout).get(rel, []) != folder.get(rel, []):
                problems.append(f"{rel}: alone gives other findings than the folder run")
        two = ddplint(binary, root, "--no-cache", "-j", "2", ".")
        one = ddplint(binary, root, "--no-cache", "-j", "1", ".")
        if two.stdout != one.stdout:
            problems.append("-j 2 and -j 1 differ")
        cold = ddplint(binary, root, ".")
        warm = ddplint(binary, root, ".")
        if cold.stdout != whole.stdout or warm.stdout != whole.stdout:
            problems.append("a cached run differs from --no-cache")
        # one file edited: a helper that no longer syncs, or a call moved under a guard
        victim = rng.choice(files)
        path = os.path.join(root, victim)
        with open(path) as f:
            text = f.read()
        text = text.replace(".item()", "", 1) if rng.random() < 0.5 else text + "\ndef extra(x):\n    return x.item()\n"
        with open(path, "w") as f:
            f.write(text)
        edited_warm = ddplint(binary, root, ".")
        edited_cold = ddplint(binary, root, "--no-cache", ".")
        if edited_warm.stdout != edited_cold.stdout:
            problems.append(f"after editing {victim}, the warm cache differs from --no-cache")
        return problems, root
    finally:
        if not problems and not keep:
            shutil.rmtree(root, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary")
    p.add_argument("--seeds", type=int, default=30)
    p.add_argument("--first", type=int, default=1)
    p.add_argument("--keep", action="store_true", help="keep every project, not only the failing ones")
    a = p.parse_args()
    a.binary = os.path.abspath(a.binary)
    failed = 0
    for seed in range(a.first, a.first + a.seeds):
        problems, root = check(a.binary, seed, a.keep)
        if problems:
            failed += 1
            print(f"seed {seed} ({root}):")
            for line in problems:
                print(f"  {line}")
    print(f"{a.seeds} random projects, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
