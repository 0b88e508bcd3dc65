#!/usr/bin/env python3
"""`onnxkit convert --to pytorch` over the model zoo of
tests/models/export_zoo.py (classifiers, segmenters, detectors, the
encoder and decoder, LSTM/GRU, a scripted If/Loop model, a scalar input).

For each model: the conversion with its check (the generated module on
random inputs, symbolic dims at 2 or, where the model does not run so,
larger, against onnxkit's runtime), then the
generated module loaded and run by Debian's torch on the export's example
input against onnxkit's runtime and against PyTorch's own output saved by
the export (a truth that owes nothing to onnxkit), within max abs
1e-4 * max(1, max |ref|) and MSE 1e-7. Where the ONNX file itself departs
from torch by more (deeplabv3_resnet50's folded batch norms, 2e-4; a
detector's reordered boxes), the module may depart as far as the runtime
does, and the table says so. Where the batch is dynamic the module also
runs at batch 3 against the runtime. Models missing from --zoo are exported first (seconds for the
small ones, minutes for all 28).

ctest runs a lean set (cli_pytorch_zoo); the whole zoo is one command:
  /usr/bin/python3 tests/cli/test_pytorch_zoo.py --onnxkit build/onnxkit --zoo build/zoo --all

usage: test_pytorch_zoo.py --onnxkit PATH --zoo DIR [--all | --models a,b] [--table]"""

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import onnx
import torch

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import export_zoo  # noqa: E402

PYTHON = "/usr/bin/python3"  # Debian's, with torch
# Small, fast, and between them: GRU, bidirectional LSTM, a scripted If and
# Loop, an integer scalar input, a decoder with int64 ids, and a classifier
# with SE blocks and hardswish: under a minute in all.
LEAN = ["gru", "bilstm", "control_flow", "scalar_input", "vad_like", "gpt_decoder", "mobilenet_v3_small", "ocr_rec", "vad_sample_rate"]


def arrays(stem, names):
    """The export's example inputs or torch outputs, in `names` order."""
    if os.path.exists(stem + ".npy"):
        return [np.load(stem + ".npy")]
    data = np.load(stem + ".npz")
    return [np.asarray(data[n]) for n in names]


def load_generated(folder):
    spec = importlib.util.spec_from_file_location(f"generated_{abs(hash(folder))}", os.path.join(folder, "model.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load()


def run_module(net, inputs):
    with torch.no_grad():
        out = net(*[torch.from_numpy(np.asarray(x)) for x in inputs])
    return [y.numpy() for y in (out if isinstance(out, (tuple, list)) else (out,))]


def run_onnxkit(onnxkit, model, names, inputs, tmp):
    args = []
    for k, (name, x) in enumerate(zip(names, inputs)):
        path = os.path.join(tmp, f"in_{k}.npy")
        np.save(path, np.asarray(x))
        args += ["--input", f"{name}={path}"]
    out_dir = os.path.join(tmp, "runtime_out")
    proc = subprocess.run([onnxkit, "run", model, *args, "--output-dir", out_dir], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"onnxkit run: {proc.stderr.strip()}")
    count = len(onnx.load(model, load_external_data=False).graph.output)
    return [np.load(os.path.join(out_dir, f"output_{k}.npy")) for k in range(count)]


def difference(ours, ref):
    """(max abs, MSE, within the tolerance, why not)."""
    if ours.shape != ref.shape or ours.dtype != ref.dtype:
        return float("inf"), float("inf"), False, f"{ours.dtype}{list(ours.shape)} != {ref.dtype}{list(ref.shape)}"
    if ours.size == 0:
        return 0.0, 0.0, True, ""
    if ref.dtype.kind not in "fc":
        wrong = int((ours != ref).sum())
        return float(wrong), float(wrong), wrong == 0, f"{wrong} elements differ" if wrong else ""
    diff = ours.astype(np.float64) - ref.astype(np.float64)
    max_abs, mse = float(np.abs(diff).max()), float(np.mean(diff * diff))
    ok = max_abs <= 1e-4 * max(1.0, float(np.abs(ref).max())) and mse < 1e-7
    return max_abs, mse, ok, "" if ok else f"max abs {max_abs:.3g}, MSE {mse:.3g}"


def check_model(args, name, tmp):
    """A row of the table: (name, converted, worst max abs vs torch, worst vs runtime at batch 3, notes)."""
    spec = export_zoo.MODELS[name]
    model = os.path.join(args.zoo, name + ".onnx")
    out = os.path.join(tmp, name)
    start = time.perf_counter()
    proc = subprocess.run([args.onnxkit, "convert", model, "--to", "pytorch", out, "--python", PYTHON],
                          capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        return dict(name=name, ok=False, notes=proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed")
    notes = []
    if "within float32 rounding" in proc.stdout:
        notes.append("check passed within float32 rounding")
    net = load_generated(out)
    inputs = arrays(model[: -len(".onnx")] + (".input" if len(spec.input_names) == 1 else ".inputs"), spec.input_names)
    ours = run_module(net, inputs)
    truth = arrays(model[: -len(".onnx")] + ".torch", spec.output_names)
    runtime = run_onnxkit(args.onnxkit, model, spec.input_names, inputs, tmp)
    ok = len(ours) == len(truth) == len(runtime)
    worst = 0.0
    for k, (a, b, r) in enumerate(zip(ours, truth, runtime)):
        _, _, close, why = difference(a, r)
        if not close:
            ok = False
            notes.append(f"{spec.output_names[k]} vs runtime: {why}")
        max_abs, _, close, why = difference(a, b)
        worst = max(worst, max_abs)
        if not close:
            # The ONNX file itself may depart from torch (the exporter's
            # rounding, a detector's ties): the runtime, which owes nothing to
            # the conversion, then departs as far.
            exported = difference(r, b)[0]
            if max_abs <= 2 * exported:
                notes.append(f"{spec.output_names[k]}: {max_abs:.3g} from torch, as the ONNX file run by onnxkit ({exported:.3g})")
            else:
                ok = False
                notes.append(f"{spec.output_names[k]} vs torch: {why}")
    worst3 = None
    if spec.dynamic_batch:
        batch3 = [t.numpy() for t in spec.inputs(3)]
        ref = run_onnxkit(args.onnxkit, model, spec.input_names, batch3, tmp)
        worst3 = 0.0
        for k, (a, b) in enumerate(zip(run_module(net, batch3), ref)):
            max_abs, _, close, why = difference(a, b)
            worst3 = max(worst3, max_abs)
            if not close:
                ok = False
                notes.append(f"{spec.output_names[k]} at batch 3 vs runtime: {why}")
    return dict(name=name, ok=ok, seconds=seconds, torch=worst, batch3=worst3, notes="; ".join(notes))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--onnxkit", required=True)
    p.add_argument("--zoo", required=True, help="export_zoo.py's folder (missing models are exported into it)")
    p.add_argument("--models", help="comma-separated zoo names (the lean set by default)")
    p.add_argument("--all", action="store_true", help="every model of the zoo")
    args = p.parse_args()
    names = list(export_zoo.MODELS) if args.all else (args.models.split(",") if args.models else LEAN)
    os.makedirs(args.zoo, exist_ok=True)
    torch.manual_seed(1)
    failures = 0
    print(f"{'model':<40} {'convert s':>9} {'vs torch':>9} {'batch 3':>9}  result")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            export_zoo.export(name, args.zoo)
            try:
                row = check_model(args, name, tmp)
            except Exception as e:  # noqa: BLE001 - a row of the table, not a crash of the sweep
                row = dict(name=name, ok=False, notes=f"{type(e).__name__}: {e}")
            failures += not row["ok"]
            fmt = lambda v: f"{v:9.2e}" if v is not None else f"{'-':>9}"  # noqa: E731
            seconds = f"{row['seconds']:9.1f}" if "seconds" in row else f"{'-':>9}"
            print(f"{name:<40} {seconds} {fmt(row.get('torch'))} {fmt(row.get('batch3'))}  "
                  f"{'ok' if row['ok'] else 'FAIL'}{'  ' + row['notes'] if row['notes'] else ''}", flush=True)
    print(f"{len(names) - failures} of {len(names)} convert and match")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
