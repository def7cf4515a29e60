#!/usr/bin/env python3
"""The speed and scale figures of ddplint (issue 7), each measured side by side.

Prints, with medians of --runs runs (default 5), interleaving the commands
compared so that machine noise hits both alike:
  1. lint / parse: the whole catalog against tree-sitter parsing alone on the
     torch corpus (build/release/bench/ddplint_bench; files held in memory);
  2. ddplint -j 1 against ast-grep -j 1 (five rules, bench/astgrep) on the
     mixed corpus (the Python standard library), and what the prefilter skips;
  3. ddplint -j 2 against -j 1 on the torch corpus, and that both outputs are
     byte for byte the same;
  4. peak RSS on a 37 MB corpus and on 10 times it (hard-linked copies);
  5. growth: a 10 MB file, a 50,000-line function, 5,000 nested brackets,
     1 and 5 MB of small training functions that bind the same names,
     and time against size for 1, 2, 5 and 10 MB;
  6. project analysis (issue 22): the torch corpus with and without it
     (--no-project), and a generated project of N modules that import each
     other in chains and cycles (a step loop in main.py calls into every
     module), for N = 1,250, 2,500 and 5,000: time per module should stay flat;
  7. the cache: a warm run over the torch corpus against --no-cache (outputs
     compared), the cache's size per file, and a warm run after one edit.

Usage: bench/speed.py [--runs N] [--only 1,2,3,4,5,6,7]
Needs: ./build.sh build (build/release), python3, npm (for ast-grep, once),
GNU time (/usr/bin/time, Debian package `time`) for exact peak RSS.
The corpora are built under bench/corpus/ (git-ignored) on first use.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build/release/ddplint")
BENCH = os.path.join(ROOT, "build/release/bench/ddplint_bench")
CORPUS = os.path.join(ROOT, "bench/corpus")
ASTGREP_DIR = os.path.join(ROOT, "bench/astgrep")
ASTGREP = os.path.join(ASTGREP_DIR, "node_modules/@ast-grep/cli-linux-x64-gnu/ast-grep")


GNU_TIME = "/usr/bin/time"  # Debian package `time`; its own footprint is a few MiB


def run(cmd, cwd=ROOT):
    """Runs cmd; returns (wall seconds, peak RSS in MiB, stdout bytes).

    Peak RSS comes from GNU time when installed: a child forked by this Python
    process counts Python's own pages in ru_maxrss until it execs, which would
    inflate small figures; without GNU time the figure is an upper bound."""
    rss_file = None
    if os.path.exists(GNU_TIME):
        rss_file = os.path.join(CORPUS, ".rss")
        cmd = [GNU_TIME, "-f", "%M", "-o", rss_file] + cmd
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1, 2):  # 2: some files unreadable (the stdlib has non-UTF-8 test files)
        sys.exit(f"{cmd[0]} failed with exit {proc.returncode}: {' '.join(cmd)}")
    rss_kb = usage.ru_maxrss
    if rss_file:
        with open(rss_file) as f:
            rss_kb = int(f.read().split()[-1])
    return wall, rss_kb / 1024.0, out


def side_by_side(commands, runs):
    """Runs each command `runs` times, interleaved; returns the median wall time of each."""
    times = [[] for _ in commands]
    for _ in range(runs):
        for i, cmd in enumerate(commands):
            times[i].append(run(cmd)[0])
    return [statistics.median(t) for t in times]


def mb(path):
    total = 0
    for d, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(d, f)) for f in files if f.endswith(".py"))
    return total / 1048576.0


def ensure_corpora():
    if not (os.path.isdir(os.path.join(CORPUS, "torch")) and os.path.isdir(os.path.join(CORPUS, "mixed"))):
        subprocess.run([os.path.join(ROOT, "bench/make_corpus.sh"), "20"], check=True)


def lint_cmd(*args, cache=False):
    # the corpora are git-ignored inside this repository: lint them anyway;
    # every figure but 7 measures the analysis itself, so no cache
    return [BIN, "--isolated", "--no-respect-gitignore", "--exit-zero", "-q", *([] if cache else ["--no-cache"]), *args]


def figure_1(runs):
    print("== 1. whole catalog vs tree-sitter parsing alone, one thread, torch corpus")
    subprocess.run([BENCH, "--rounds", str(runs), os.path.join(CORPUS, "torch")], check=True)
    print("-- the same with project analysis (each round indexes the corpus's project afresh, counted in the lint)")
    subprocess.run([BENCH, "--rounds", str(runs), "--project", os.path.join(CORPUS, "torch")], check=True)


def figure_2(runs):
    print("== 2. ddplint vs ast-grep (5 rules), one thread each, mixed corpus (Python standard library)")
    if not os.path.exists(ASTGREP):
        subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=ASTGREP_DIR, check=True,
                       stdout=subprocess.DEVNULL)
    mixed = os.path.join(CORPUS, "mixed")
    astgrep = [ASTGREP, "scan", "-j", "1", "--no-ignore", "vcs", "--config", os.path.join(ASTGREP_DIR, "sgconfig.yml"),
               mixed]
    ddp, ag = side_by_side([lint_cmd("-j", "1", mixed), astgrep], runs)
    size = mb(mixed)
    print(f"corpus: {size:.1f} MB")
    print(f"ast-grep -j 1: {ag:.2f} s  {size / ag:.1f} MB/s (median of {runs})")
    print(f"ddplint  -j 1: {ddp:.2f} s  {size / ddp:.1f} MB/s (median of {runs})")
    print(f"ddplint is {ag / ddp:.1f}x faster than ast-grep")
    check = os.path.join(ROOT, "build/release/bench/ddplint_prefilter_check")
    if os.path.exists(check):
        out = subprocess.run([check, mixed], capture_output=True, text=True).stdout.strip().splitlines()
        print("prefilter: " + (out[-1] if out else "(no output)"))


def figure_3(runs):
    print("== 3. -j 2 vs -j 1, torch corpus (CLI, output compared byte for byte)")
    torch = os.path.join(CORPUS, "torch")
    one = run(lint_cmd("-j", "1", "--format", "json", torch))[2]
    two = run(lint_cmd("-j", "2", "--format", "json", torch))[2]
    print(f"outputs identical: {'yes' if one == two else 'NO'} ({len(one)} bytes of JSON)")
    j1, j2 = side_by_side([lint_cmd("-j", "1", torch), lint_cmd("-j", "2", torch)], runs)
    print(f"-j 1: {j1:.2f} s, -j 2: {j2:.2f} s (median of {runs}); speed-up {j1 / j2:.2f}x on {os.cpu_count()} cores")


def copies(source, target, n):
    """target/copyK for K < n: hard-linked copies of the .py files under `source`."""
    if os.path.isdir(target) and len(os.listdir(target)) == n:
        return
    shutil.rmtree(target, ignore_errors=True)
    for k in range(n):
        for d, _, files in os.walk(source):
            rel = os.path.relpath(d, source)
            os.makedirs(os.path.join(target, f"copy{k}", rel), exist_ok=True)
            for f in files:
                if f.endswith(".py"):
                    os.link(os.path.join(d, f), os.path.join(target, f"copy{k}", rel, f))


def figure_4(runs):
    print("== 4. peak RSS against corpus size (-j 2, text and json output)")
    base = os.path.join(CORPUS, "mem37")
    if not os.path.isdir(base):
        # the standard library plus torch scripts up to 37 MB: the corpus shape
        copies(os.path.join(CORPUS, "mixed"), os.path.join(base, "stdlib"), 1)
        need = 37 * 1048576 - mb(base) * 1048576
        os.makedirs(os.path.join(base, "torch"), exist_ok=True)
        for f in sorted(os.listdir(os.path.join(CORPUS, "torch"))):
            if need <= 0:
                break
            src = os.path.join(CORPUS, "torch", f)
            os.link(src, os.path.join(base, "torch", f))
            need -= os.path.getsize(src)
    copies(base, os.path.join(CORPUS, "mem370"), 10)
    torch10 = os.path.join(CORPUS, "torch10")
    copies(os.path.join(CORPUS, "torch"), torch10, 10)
    for name, path in [("mem37", base), ("mem370", os.path.join(CORPUS, "mem370")),
                       ("torch", os.path.join(CORPUS, "torch")), ("torch10", torch10)]:
        files = sum(len([f for f in fs if f.endswith(".py")]) for _, _, fs in os.walk(path))
        for fmt in ("text", "json"):
            wall, rss, _ = run(lint_cmd("-j", "2", "--format", fmt, path))
            print(f"{name:8s} {mb(path):6.0f} MB {files:7d} files  {fmt:4s}: peak RSS {rss:6.1f} MiB, {wall:6.1f} s")


def figure_5(runs):
    print("== 5. growth: single large inputs (one file each; limit 5 s)")
    out = os.path.join(CORPUS, "growth")
    os.makedirs(out, exist_ok=True)
    examples = [open(os.path.join(ROOT, "examples", f)).read() for f in sorted(os.listdir(os.path.join(ROOT, "examples")))
                if f.endswith(".py")]

    def concatenated(size_mb):
        parts, n, i = [], 0, 0
        while n < size_mb * 1048576:
            s = examples[i % len(examples)].replace("def ", f"def v{i}_")  # distinct function names
            parts.append(s)
            n += len(s)
            i += 1
        return "".join(parts)

    # thousands of small training functions that bind the same names (`model`,
    # `loader`, `opt`) and each wrap DDP, loop, step and save: lookups that scan
    # every binding of a name, or every loop, for each use grow with the square
    # of the functions (a 5 MB file took 9-12 s before those were indexed)
    def small_functions(size_mb):
        parts, n, i = ["import torch\nimport torch.distributed as dist\n"
                       "from torch.nn.parallel import DistributedDataParallel as DDP\n"
                       "from torch.utils.data import DataLoader\n"], 0, 0
        while n < size_mb * 1048576:
            s = (f"\ndef train_{i}(ds, rank):\n"
                 "    dist.init_process_group('nccl')\n"
                 f"    model = DDP(torch.nn.Linear({i % 97 + 1}, 10).cuda())\n"
                 f"    loader = DataLoader(ds, batch_size={i % 61 + 4})\n"
                 "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                 "    for epoch in range(10):\n"
                 "        for step, (x,) in enumerate(loader):\n"
                 "            loss = model(x.cuda()).sum()\n"
                 "            loss.backward()\n"
                 "            if (step + 1) % 4 == 0:\n"
                 "                opt.step()\n"
                 "            print(loss.item())\n"
                 f"        torch.save(model.state_dict(), 'm{i}.pt')\n")
            parts.append(s)
            n += len(s)
            i += 1
        return "".join(parts)

    cases = {}
    for size in (1, 2, 5, 10):
        cases[f"scripts_{size}mb.py"] = concatenated(size)
    for size in (1, 5):
        cases[f"small_functions_{size}mb.py"] = small_functions(size)
    body = "".join(f"        v{i} = model(batch) * {i}\n" for i in range(50000))
    cases["function_50000_lines.py"] = ("import torch\n\ndef train(model, loader, optimizer):\n    for batch in loader:\n"
                                        + body + "        v0.sum().backward()\n        optimizer.step()\n")
    cases["nested_5000_parens.py"] = "import torch\nx = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    cases["nested_5000_calls.py"] = "import torch\nx = " + "f(" * 5000 + ")" * 5000 + "\n"
    cases["nested_5000_lists.py"] = "import torch\nx = " + "[" * 5000 + "]" * 5000 + "\n"
    for name, text in cases.items():
        path = os.path.join(out, name)
        if not os.path.exists(path) or os.path.getsize(path) != len(text.encode()):
            with open(path, "w") as f:
                f.write(text)
    for name in cases:
        path = os.path.join(out, name)
        samples = [run(lint_cmd(path)) for _ in range(max(1, runs // 2))]
        wall = statistics.median(s[0] for s in samples)
        rss = max(s[1] for s in samples)
        size = os.path.getsize(path) / 1048576.0
        print(f"{name:26s} {size:6.2f} MB: {wall:5.2f} s, peak RSS {rss:6.1f} MiB ({rss / max(size, 0.01):.0f}x the file)")


def make_project(root, modules):
    """A project of `modules` modules m0..mN-1: each imports the next two (a
    chain that wraps around, so cycles), defines a helper with a per-step
    `.item()` and one that trains; main.py's CUDA step loop calls m0."""
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, "pkg"))
    open(os.path.join(root, "pyproject.toml"), "w").close()
    open(os.path.join(root, "pkg", "__init__.py"), "w").close()
    for i in range(modules):
        a, b = (i + 1) % modules, (i + 2) % modules
        with open(os.path.join(root, "pkg", f"m{i}.py"), "w") as f:
            f.write(f"from pkg import m{a}, m{b}\n\n\n"
                    f"def helper(x, depth):\n    if depth > 0:\n        m{a}.helper(x, depth - 1)\n"
                    f"    return x.norm().item()\n\n\n"
                    f"def step(model, opt, x):\n    model(x).sum().backward()\n    opt.step()\n    m{b}.helper(x, 1)\n")
    with open(os.path.join(root, "main.py"), "w") as f:
        f.write("import torch\nfrom pkg import m0\n\nmodel = torch.nn.Linear(8, 8).cuda()\n"
                "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor i in range(100):\n"
                "    x = torch.randn(4, 8, device='cuda')\n    m0.step(model, opt, x)\n")


def figure_6(runs):
    print("== 6. project analysis, one thread")
    torch_corpus = os.path.join(CORPUS, "torch")
    on, off = side_by_side([lint_cmd("-j", "1", torch_corpus), lint_cmd("-j", "1", "--no-project", torch_corpus)], runs)
    print(f"torch corpus: {on:.2f} s with project analysis, {off:.2f} s without: {on / off:.2f}x")
    for n in (1250, 2500, 5000):
        root = os.path.join(CORPUS, f"project{n}")
        make_project(root, n)
        wall = statistics.median([run(lint_cmd("-j", "1", root))[0] for _ in range(max(1, runs // 2))])
        _, rss, out = run(lint_cmd("-j", "1", "--format", "json", root))
        found = out.count(b'"code"')
        summaries = subprocess.run([BENCH, "--rounds", "1", "--lint-only", "--project", root], capture_output=True,
                                   text=True).stdout
        per_file = next((l.split(", ")[-1] for l in summaries.splitlines() if l.startswith("project summaries")), "?")
        print(f"{n} modules: {wall:.2f} s, {1000 * wall / n:.2f} ms per module, peak {rss:.0f} MiB, {found} findings; "
              f"summaries {per_file}")


def figure_7(runs):
    print("== 7. the cache (issue 22), one thread, torch corpus")
    torch_corpus = os.path.join(CORPUS, "torch")
    cache_dir = os.path.join(CORPUS, ".cache7")
    shutil.rmtree(cache_dir, ignore_errors=True)
    cached = lint_cmd("-j", "1", "--cache-dir", cache_dir, torch_corpus, cache=True)
    uncached = lint_cmd("-j", "1", torch_corpus)
    cold_wall, cold_rss, cold_out = run(cached)  # fills the cache
    warm, off = side_by_side([cached, uncached], runs)
    _, warm_rss, warm_out = run(cached)
    _, off_rss, off_out = run(uncached)
    same = warm_out == off_out == cold_out
    files = sum(1 for _, _, fs in os.walk(torch_corpus) for f in fs if f.endswith(".py"))
    pack = sum(os.path.getsize(os.path.join(cache_dir, f)) for f in os.listdir(cache_dir) if f.startswith("pack-"))
    print(f"cold (filling the cache): {cold_wall:.2f} s, peak {cold_rss:.0f} MiB")
    print(f"warm: {warm:.2f} s, peak {warm_rss:.0f} MiB; --no-cache: {off:.2f} s, peak {off_rss:.0f} MiB: "
          f"{off / warm:.1f}x faster warm; outputs identical: {same}")
    print(f"cache: {pack / 1048576:.1f} MB for {files} files, {pack / files:.0f} bytes a file")
    # one file edited: only it is linted again
    victim = sorted(f for f in os.listdir(torch_corpus) if f.endswith(".py"))[0]
    path = os.path.join(torch_corpus, victim)
    with open(path) as f:
        text = f.read()
    try:
        with open(path, "w") as f:
            f.write(text + "\n# edited\n")
        one_edit = run(cached)[0]
    finally:
        with open(path, "w") as f:
            f.write(text)
    print(f"warm with one file edited: {one_edit:.2f} s")
    shutil.rmtree(cache_dir, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--only", default="1,2,3,4,5,6,7")
    a = p.parse_args()
    for tool in (BIN, BENCH):
        if not os.path.exists(tool):
            sys.exit(f"{tool} is missing: run ./build.sh build first")
    ensure_corpora()
    print(f"machine: {os.cpu_count()} cores; runs: {a.runs}")
    for n in a.only.split(","):
        {"1": figure_1, "2": figure_2, "3": figure_3, "4": figure_4, "5": figure_5, "6": figure_6, "7": figure_7}[n.strip()](a.runs)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
