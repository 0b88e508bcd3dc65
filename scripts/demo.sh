#!/usr/bin/env bash
# `make demo`: what onnxkit says about the small model shipped in the repo
# (seed 001's network, whose torch.flatten exported as Shape/Slice/Concat glue).
set -euo pipefail
onnxkit=${1:-build/onnxkit}
model=examples/models/sample_reshape.onnx

echo "== onnxkit info $model"
"$onnxkit" info "$model"
echo
echo "== onnxkit check $model --full"
"$onnxkit" check "$model" --full
