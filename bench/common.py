"""Helpers shared by the benchmark scripts: run a command, measure its wall
time and peak RSS (from wait4), repeat with peers interleaved."""

import os
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEBIAN_PYTHON = "/usr/bin/python3"


def onnxkit_binary():
    return os.environ.get("ONNXKIT", os.path.join(ROOT, "build", "onnxkit"))


def measure(cmd, ok_codes=(0,)):
    """(seconds, peak RSS in MiB) of one run of cmd, which must exit with one of ok_codes."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in ok_codes:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.read().decode()[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024


def interleaved(commands, runs, ok_codes=(0,)):
    """Runs each command `runs` times, alternating, and returns per name the
    median seconds and the largest peak RSS."""
    samples = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            samples[name].append(measure(cmd, ok_codes))
    return {name: (statistics.median(s for s, _ in v), max(r for _, r in v)) for name, v in samples.items()}


def export_torchvision(name, path, opset=13):
    if os.path.exists(path):
        return path
    code = (
        "import torch, torchvision\n"
        f"m = torchvision.models.{name}(weights=None).eval()\n"
        f"torch.onnx.export(m, (torch.rand(1, 3, 224, 224),), {path!r}, input_names=['input'],"
        f" output_names=['output'], opset_version={opset})\n"
    )
    subprocess.run([DEBIAN_PYTHON, "-c", code], check=True, capture_output=True)
    return path
