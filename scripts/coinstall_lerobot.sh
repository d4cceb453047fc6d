#!/usr/bin/env bash
# Show that robodata installs beside LeRobot: a Python 3.12 venv with `lerobot[dataset]==0.6.1`
# and `robodata[torch]` (this checkout) from ONE `pip install`, then `pip check`, then LeRobot's
# and robodata's datasets written and read in one process (scripts/coinstall_check.py).
# Downloads several GB (PyPI's torch for Python 3.12 is a CUDA build), so CI does not run it on
# every push. Usage: bash scripts/coinstall_lerobot.sh [VENV]   (default .lerobot-venv, git-ignored)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=$(realpath -m "${1:-.lerobot-venv}")
REPO=$(pwd)
PY=${LEROBOT_PYTHON:-$HOME/.pyenv/versions/3.12.1/bin/python}
[ -x "$PY" ] || PY=$(command -v python3.12) || { echo "coinstall: no Python 3.12 (set LEROBOT_PYTHON)" >&2; exit 1; }

echo "== venv $VENV ($("$PY" --version))"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip

echo "== one pip install: lerobot[dataset]==0.6.1 and robodata[torch] from $REPO"
"$VENV/bin/python" -m pip install -q --progress-bar off "lerobot[dataset]==0.6.1" "$REPO[torch]"
"$VENV/bin/python" - <<'PY'
import importlib.metadata as md
for name in ("lerobot", "robodata", "datasets", "torch", "av", "fsspec", "s3fs", "pylance", "pyarrow", "numpy"):
    print(f"   {name}=={md.version(name)}")
PY

echo "== pip check"
"$VENV/bin/python" -m pip check

echo "== both datasets in one process"
# From a scratch folder, so `import robodata` is the installed package, not this checkout;
# LeRobot's AV1 encoder and progress bars quiet, so the items read are what the log shows.
export SVT_LOG=1 TQDM_DISABLE=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && "$VENV/bin/python" "$REPO/scripts/coinstall_check.py" "$work") \
    || { echo "coinstall: the two datasets did not load in one process" >&2; exit 1; }
echo "== coinstall: OK"
