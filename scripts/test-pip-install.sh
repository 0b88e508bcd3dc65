#!/usr/bin/env bash
# Usage: scripts/test-pip-install.sh [BUILD]   (BUILD: the CMake build folder, default build)
# The Python package's install path, checked the way a user meets it: a
# fresh venv from Debian's interpreter without its packages, `pip install .`
# from PyPI only (scikit-build-core, pybind11, numpy 2, onnx), then the
# package's tests (python/tests, with pytest and onnxruntime from PyPI) on
# the models BUILD exported, against the CLI BUILD built. Not part of
# `make test`: the install compiles the library again (about 10 minutes on
# 2 cores), where the main build's module reuses it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check "$root" pytest onnxruntime
cd "$work"  # so that nothing but the installed package is importable as onnxkit
"$work/venv/bin/python" -c 'import onnxkit, numpy, onnx; print("installed:", onnxkit.__file__, "numpy", numpy.__version__, "onnx", onnx.__version__)'
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests" \
  --onnxkit "$build/onnxkit" --models "$build/test-models" --examples "$root/examples/models"
