#!/usr/bin/env bash
# The pre-commit hook for real: Debian's pre-commit runs this repository's hook
# (`pre-commit try-repo`) in a temporary git repository, once with a staged
# script that has findings (the hook fails, so the commit is refused, and the
# findings are printed) and once with a clean one (the hook passes), then
# through an installed git hook on an actual `git commit` (of a script, a
# launch script and a notebook).
# Usage: precommit_e2e.sh DDPLINT_BIN SOURCE_DIR
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
if ! command -v pre-commit >/dev/null 2>&1; then
  echo "pre-commit e2e: pre-commit is not installed (./build.sh setup installs Debian's)" >&2
  [ "${CI:-}" = "true" ] && exit 1
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PRE_COMMIT_HOME="$work/cache" HOME="$work/home" GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME" "$work/bin"
ln -s "$bin" "$work/bin/ddplint"
export PATH="$work/bin:$PATH"
git config --global user.email ci@example.invalid
git config --global user.name ci
git config --global init.defaultBranch main
git config --global --add safe.directory '*'

repo="$work/project"
mkdir -p "$repo" && cd "$repo" && git init -q
# DDP102 (pin_memory) is opt-in: the project enables it by its code
printf '[tool.ddplint]\nextend-select = ["DDP102"]\n' >pyproject.toml
git add pyproject.toml
cat >train.py <<'PY'
import torch
from torch.utils.data import DataLoader

loader = DataLoader(dataset, batch_size=32, num_workers=4, persistent_workers=True)
model = torch.nn.Linear(8, 2).cuda()
PY
git add train.py
set +e
pre-commit try-repo "$src" ddplint >"$work/bad.log" 2>&1
status=$?
set -e
if [ "$status" -eq 0 ]; then
  echo "pre-commit e2e: the hook passed a script with findings" >&2; cat "$work/bad.log" >&2; exit 1
fi
grep -q "DDP102" "$work/bad.log" || { echo "pre-commit e2e: findings not printed" >&2; cat "$work/bad.log" >&2; exit 1; }

# clean: pin_memory=True
sed -i 's/persistent_workers=True)/persistent_workers=True, pin_memory=True)/' train.py
git add train.py
pre-commit try-repo "$src" ddplint >"$work/clean.log" 2>&1 || {
  echo "pre-commit e2e: the hook failed a clean script" >&2; cat "$work/clean.log" >&2; exit 1; }

# an installed hook refuses a real commit: the config points at a copy of the
# hook definition in a local repository (try-repo's equivalent for `git commit`)
hooks="$work/hooks" && mkdir -p "$hooks" && cp "$src/.pre-commit-hooks.yaml" "$hooks/"
(cd "$hooks" && git init -q && git add . && git commit -qm hooks)
cat >.pre-commit-config.yaml <<YAML
repos:
  - repo: $hooks
    rev: $(git -C "$hooks" rev-parse HEAD)
    hooks:
      - id: ddplint
YAML
git add .pre-commit-config.yaml && git commit -qm clean --no-verify
pre-commit install >/dev/null
printf 'import torch\nfrom torch.utils.data import DataLoader\nbad = DataLoader(ds, num_workers=2)\nmodel.cuda()\n' >bad.py
git add bad.py
if git commit -qm "bad script" >"$work/commit.log" 2>&1; then
  echo "pre-commit e2e: the commit of a script with findings went through" >&2; cat "$work/commit.log" >&2; exit 1
fi
grep -q "DDP102" "$work/commit.log" || { echo "pre-commit e2e: the refused commit printed no findings" >&2; exit 1; }
# a launch script is passed to the hook too (pre-commit's `shell` type: *.sh or a sh/bash shebang)
git reset -q bad.py && rm bad.py
printf '#!/bin/bash\ntorchrun --standalone --nnodes=2 --nproc_per_node=8 train.py\n' >launch.sh
git add launch.sh
if git commit -qm "bad launch" >"$work/launch.log" 2>&1; then
  echo "pre-commit e2e: the commit of a launch script with findings went through" >&2; cat "$work/launch.log" >&2; exit 1
fi
grep -q "DDP802" "$work/launch.log" || { echo "pre-commit e2e: the launch script's findings were not printed" >&2; cat "$work/launch.log" >&2; exit 1; }
# a notebook is passed to the hook too (pre-commit's `jupyter` type: *.ipynb)
git reset -q launch.sh && rm launch.sh
cat >train.ipynb <<'NB'
{"cells": [{"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [],
  "source": ["import torch\n", "from torch.utils.data import DataLoader\n", "bad = DataLoader(ds, num_workers=2)\n", "model.cuda()\n"]}],
 "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
NB
git add train.ipynb
if git commit -qm "bad notebook" >"$work/notebook.log" 2>&1; then
  echo "pre-commit e2e: the commit of a notebook with findings went through" >&2; cat "$work/notebook.log" >&2; exit 1
fi
grep -q "train.ipynb.*DDP102" "$work/notebook.log" || { echo "pre-commit e2e: the notebook's findings were not printed" >&2; cat "$work/notebook.log" >&2; exit 1; }
echo "pre-commit e2e: findings refused (try-repo and git commit, Python, a launch script and a notebook), clean script passed"
