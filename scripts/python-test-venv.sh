#!/usr/bin/env bash
# Usage: scripts/python-test-venv.sh PYTHON VENV REQUIREMENTS PACKAGE_PARENT
# Makes the venv the Python tests and benchmarks run in: PYTHON's own
# packages (Debian's torch and onnx) plus REQUIREMENTS from PyPI, and a .pth
# file that puts PACKAGE_PARENT (the build's python/ folder, which holds the
# onnxkit package just built) on its path. Writes VENV/onnxkit-test-venv.stamp
# when done; pip's output goes to VENV.log.
set -euo pipefail
python=$1 venv=$2 requirements=$3 package_parent=$4
"$python" -m venv --system-site-packages "$venv"
if ! "$venv/bin/python" -m pip install --disable-pip-version-check -r "$requirements" >"$venv.log" 2>&1; then
  tail -n 20 "$venv.log" >&2
  echo "python-test-venv: pip failed (log: $venv.log)" >&2
  exit 1
fi
site=$("$venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')
echo "$package_parent" >"$site/onnxkit-build.pth"
touch "$venv/onnxkit-test-venv.stamp"
