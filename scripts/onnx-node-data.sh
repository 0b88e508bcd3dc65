#!/usr/bin/env bash
# Usage: scripts/onnx-node-data.sh PYTHON VENV REQUIREMENTS OUT
# Generates the backend node test data of the onnx release that REQUIREMENTS
# pins (onnx 1.23: opsets up to 24) into OUT, for tests/runtime/conformance.
# The venv has no system site packages: that onnx needs numpy 2, and Debian's
# torch, seen by the other venv, needs numpy 1. Writes VENV/onnx-node-data.stamp
# when done; pip's output goes to VENV.log.
set -euo pipefail
python=$1 venv=$2 requirements=$3 out=$4
here=$(dirname "$(realpath "$0")")
"$python" -m venv --clear "$venv"
if ! "$venv/bin/python" -m pip install --disable-pip-version-check -r "$requirements" >"$venv.log" 2>&1; then
  tail -n 20 "$venv.log" >&2
  echo "onnx-node-data: pip could not install $requirements into $venv (log: $venv.log)" >&2
  exit 1
fi
if ! "$venv/bin/python" "$here/onnx_node_data.py" "$out" 2>>"$venv.log"; then
  tail -n 20 "$venv.log" >&2
  echo "onnx-node-data: generating the node test data into $out failed (log: $venv.log)" >&2
  exit 1
fi
touch "$venv/onnx-node-data.stamp"
