#!/usr/bin/env bash
# Build the peers' environment for `robodata bench OUT --peers VENV`: LeRobot 0.6.1 (with its
# default torchcodec decoder) and lerobot-lancedb 0.3.1 in a Python 3.12 venv of their own
# (lerobot needs Python >= 3.12 and torch < 2.12, so it cannot share the project's venv), plus
# gym-aloha to render the realistic benchmark footage. ~5.5 GB, ~7 minutes.
# Usage: bash scripts/peers.sh [VENV]   (default .peers-venv, git-ignored)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.peers-venv}
PY=${PEERS_PYTHON:-$HOME/.pyenv/versions/3.12.1/bin/python}
[ -x "$PY" ] || PY=$(command -v python3.12) || { echo "peers.sh: no Python 3.12 (set PEERS_PYTHON)" >&2; exit 1; }

# Debian packages of the peers only (CI does not install them; scripts/debian-packages.txt is
# the project's own list): FFmpeg 5 shared libraries that torchcodec dlopens, and OSMesa for
# MuJoCo's headless rendering in gym-aloha.
bash scripts/install_system.sh scripts/debian-packages-lerobot.txt scripts/debian-packages-peers.txt

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip

"$VENV/bin/python" -m pip install -q "lerobot[dataset]==0.6.1" "lerobot-lancedb==0.3.1"
# The renderer of the realistic footage; a failure here leaves the peers usable.
"$VENV/bin/python" -m pip install -q "gym-aloha==0.1.5" \
    || echo "peers.sh: gym-aloha did not install; the benchmark keeps the synthetic source" >&2
"$VENV/bin/python" - <<'PY'
import importlib.metadata as md
for name in ("lerobot", "lerobot-lancedb", "lancedb", "torch", "torchcodec", "av", "gym-aloha", "mujoco"):
    try:
        print(f"{name}=={md.version(name)}")
    except md.PackageNotFoundError:
        print(f"{name}: not installed")
PY
