#!/usr/bin/env bash
# A LeRobot user's path, end to end, in a fresh Python 3.12 venv:
#   1. ONE `pip install` of `lerobot[dataset,training]==0.6.1` (the [training] extra is what
#      `lerobot-train` needs: accelerate, wandb), `robodata[torch]` (this checkout) and pytest,
#      so a single resolution covers all of it and `pip check` checks all of it;
#   2. `pip check`;
#   3. LeRobot's and robodata's datasets written and read in one process (scripts/coinstall_check.py);
#   4. the tests against real LeRobot (`pytest -m lerobot`: items, meta, stats, EpisodeAwareSampler,
#      a `robodata-train` run);
#   5. a small ACT policy trained for a few steps with `robodata-train` on the sample data, and the
#      same `lerobot-train` command on the LeRobot export of the same episodes: losses side by side
#      (scripts/lerobot_compare.py losses), then the seconds to a DataLoader's first batch.
# Downloads several GB (PyPI's torch for Python 3.12 is a CUDA build), so CI does not run it on
# every push. Usage: bash scripts/coinstall_lerobot.sh [VENV]   (default .lerobot-venv, git-ignored)
# COINSTALL_STEPS (default 5) sets the training steps; COINSTALL_FIRST_BATCH=0 skips step 5's timing.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=$(realpath -m "${1:-.lerobot-venv}")
REPO=$(pwd)
PY=${LEROBOT_PYTHON:-$HOME/.pyenv/versions/3.12.1/bin/python}
[ -x "$PY" ] || PY=$(command -v python3.12) || { echo "coinstall: no Python 3.12 (set LEROBOT_PYTHON)" >&2; exit 1; }
started=$SECONDS
stage() { echo "== [$((SECONDS - started)) s] $*"; }

stage "Debian's FFmpeg 5 libraries, for LeRobot's default decoder (torchcodec)"
# apt-get update does not wait for another apt's lock on its lists (scripts/peers.sh installs the
# same packages): try again for up to 15 minutes rather than stop at "Could not get lock".
for attempt in $(seq 60); do
    bash scripts/install_system.sh scripts/debian-packages-lerobot.txt && break
    [ "$attempt" -lt 60 ] || { echo "coinstall: apt stayed locked for 15 minutes" >&2; exit 1; }
    sleep 15
done

stage "venv $VENV ($("$PY" --version))"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip

stage "one pip install: lerobot[dataset,training]==0.6.1, robodata[torch] from $REPO, pytest"
"$VENV/bin/python" -m pip install -q --progress-bar off "lerobot[dataset,training]==0.6.1" "$REPO[torch]" "pytest>=8"
"$VENV/bin/python" - <<'PY'
import importlib.metadata as md
names = ("lerobot", "robodata", "datasets", "torch", "av", "fsspec", "s3fs", "pylance", "pyarrow", "numpy",
         "accelerate", "pytest")
print("   " + " ".join(f"{name}=={md.version(name)}" for name in names))
PY

stage "pip check"
"$VENV/bin/python" -m pip check

# LeRobot's AV1 encoder and progress bars quiet, so the log shows what was read and trained.
export SVT_LOG=1 TQDM_DISABLE=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

stage "both datasets in one process"
# From a scratch folder, so `import robodata` is the installed package, not this checkout.
(cd "$work" && "$VENV/bin/python" "$REPO/scripts/coinstall_check.py" "$work") \
    || { echo "coinstall: the two datasets did not load in one process" >&2; exit 1; }

stage "tests against real LeRobot: pytest -m lerobot"
# robodata_tests/lerobot holds the tests marked as needing real LeRobot (-m lerobot picks them);
# the rest of the suite needs extras this venv lacks.
"$VENV/bin/python" -m pytest -m lerobot -q -p no:cacheprovider robodata_tests/lerobot \
    || { echo "coinstall: the tests against real LeRobot failed" >&2; exit 1; }

stage "robodata-train and lerobot-train, the same ACT command, ${COINSTALL_STEPS:-5} steps"
"$VENV/bin/python" scripts/lerobot_compare.py losses "$work/compare" --steps "${COINSTALL_STEPS:-5}" \
    || { echo "coinstall: the losses differ (logs: $work/compare/*.log)" >&2; exit 1; }

if [ "${COINSTALL_FIRST_BATCH:-1}" != 0 ]; then
    stage "seconds to a DataLoader's first batch, robodata and LeRobot on the same episodes"
    "$VENV/bin/python" scripts/lerobot_compare.py first-batch "$work/compare"
fi
stage "coinstall: OK"
