#!/usr/bin/env bash
# `make demo`: onnxkit on the small model shipped in the repo (seed 001's
# network, whose torch.flatten exported as Shape/Slice/Concat glue): what it
# is, then what `simplify` makes of it, checked against the original.
set -euo pipefail
onnxkit=${1:-build/onnxkit}
model=examples/models/sample_reshape.onnx
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== onnxkit info $model"
"$onnxkit" info "$model"
echo
echo "== onnxkit simplify $model $out/sample_reshape.sim.onnx --report"
"$onnxkit" simplify "$model" "$out/sample_reshape.sim.onnx" --report
echo
echo "== onnxkit check $out/sample_reshape.sim.onnx --full"
"$onnxkit" check "$out/sample_reshape.sim.onnx" --full
