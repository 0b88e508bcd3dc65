#!/usr/bin/env python3
"""Tree ensembles (ai.onnx.ml) in onnxkit against ONNX Runtime, same machine,
same run:

- throughput: a 500-tree LightGBM binary classifier (31 leaves a tree,
  grown leaf-wise, so of uneven depth) and a 500-tree XGBoost one (depth
  6, nearly balanced), converted by onnxmltools, run on 10,000 rows; rows/s
  of each at 1 and 2 threads (median of 3 rounds of the median of --runs
  runs after a warm-up, each round of each runtime in a process of its
  own: onnxkit, onnxkit's plain tree walk and ORT taking turns), and
  onnxkit / ORT as a ratio (above 1: onnxkit is faster);
- load: a TreeEnsembleRegressor of about 3 million nodes (random full
  trees), session creation time of each from the model file, each load in
  a fresh child process (with a --load-timeout, since ORT has taken
  minutes on such models), the two alternating, as ORT / onnxkit.

Runs in the build's venv (onnxkit, onnxruntime, lightgbm, xgboost, onnxmltools):

usage: build/venv/bin/python bench/ml_bench.py [--runs 7] [--threads 1,2] [--trees 500] [--rows 10000]
                                              [--load-nodes 3000000] [--load-runs 3] [--only throughput|load]
Timings are noisy on a shared machine: the two runtimes alternate so that
drift hits both, but quote ratios with the load on the machine."""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, TensorProto

import onnxkit

warnings.filterwarnings("ignore")


def lightgbm_model(trees, rows, features=20):
    import lightgbm
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType

    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, features)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] * x[:, 2] + 0.3 * rng.normal(size=rows) > 0).astype(np.int64)
    m = lightgbm.LGBMClassifier(n_estimators=trees, num_leaves=31, verbose=-1).fit(x, y)
    model = convert_lightgbm(m, initial_types=[("X", FloatTensorType([None, features]))], target_opset=13,
                             zipmap=False)
    return model, x


def xgboost_model(trees, x):
    import xgboost
    from onnxmltools import convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    rng = np.random.default_rng(0)
    y = (x[:, 0] + x[:, 1] * x[:, 2] + 0.3 * rng.normal(size=len(x)) > 0).astype(np.int64)
    m = xgboost.XGBClassifier(n_estimators=trees, max_depth=6, n_jobs=1).fit(x, y)
    return convert_xgboost(m, initial_types=[("X", FloatTensorType([None, x.shape[1]]))], target_opset=13)


# One runtime's median seconds per run of a model on X, in a process of its
# own: ORT's intra-op threads spin after each of its runs, which onnxkit's
# contention watch would rightly see as busy cores if both shared a process.
THROUGHPUT = """
import statistics, sys, time
import numpy as np
model, xfile, runtime, threads, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
x = np.load(xfile)
if runtime == "ort":
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3  # not the warning on the converter's label shape [1]
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
else:
    import onnxkit
    options = onnxkit.SessionOptions()
    if runtime == "plain":  # the plain tree walk, the tests' oracle
        options.graph_optimization_level = onnxkit.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxkit.InferenceSession(model, options, threads=threads)
session.run(None, {"X": x})
times = []
for _ in range(runs):
    start = time.perf_counter()
    session.run(None, {"X": x})
    times.append(time.perf_counter() - start)
print(statistics.median(times))
"""


def median_seconds(model_path, x_path, runtime, threads, runs):
    proc = subprocess.run([sys.executable, "-c", THROUGHPUT, model_path, x_path, runtime, str(threads), str(runs)],
                          capture_output=True, text=True, check=True)
    return float(proc.stdout.strip().splitlines()[-1])


def throughput(args):
    model, x = lightgbm_model(args.trees, args.rows)
    for name, m in (("LightGBM", model), ("XGBoost", xgboost_model(args.trees, x))):
        throughput_of(name, m, x, args)


def throughput_of(name, model, x, args):
    nodes = sum(len(a.ints) for n in model.graph.node for a in n.attribute if a.name == "nodes_nodeids")
    print(f"{name}: {args.trees} trees, {nodes} nodes, {len(x)} rows x {x.shape[1]} features")
    with tempfile.TemporaryDirectory() as tmp:
        model_path, x_path = os.path.join(tmp, "model.onnx"), os.path.join(tmp, "x.npy")
        onnx.save(model, model_path)
        np.save(x_path, x)
        data = model.SerializeToString()
        a = onnxkit.InferenceSession(data).run(None, {"X": x})
        quiet = ort.SessionOptions()
        quiet.log_severity_level = 3  # not the warning on the converter's label shape [1]
        b = ort.InferenceSession(data, quiet, providers=["CPUExecutionProvider"]).run(None, {"X": x})
        assert (a[0] == b[0]).all() and np.abs(a[1] - b[1]).max() < 1e-5, "outputs differ"
        for threads in args.threads:
            rounds = {"onnxkit": [], "plain": [], "ort": []}
            for _ in range(3):  # the three take turns, so drift hits them alike
                for runtime, times in rounds.items():
                    times.append(median_seconds(model_path, x_path, runtime, threads, args.runs))
            s_ours, s_plain, s_ort = (statistics.median(t) for t in rounds.values())
            print(f"  {threads} thread(s): onnxkit {len(x) / s_ours:,.0f} rows/s (plain walk {len(x) / s_plain:,.0f}), "
                  f"ORT {len(x) / s_ort:,.0f} rows/s, onnxkit/ORT {s_ort / s_ours:.2f}x")


# creation only (file read and parse included, interpreter start not).
LOAD = """
import sys, time
if sys.argv[2] == "ort":
    import onnxruntime as ort
    make = lambda: ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
else:
    import onnxkit
    make = lambda: onnxkit.InferenceSession(sys.argv[1])
t = time.perf_counter()
make()
print(time.perf_counter() - t)
"""


def load_once(path, runtime, timeout):
    proc = subprocess.run([sys.executable, "-c", LOAD, path, runtime], capture_output=True, text=True,
                          timeout=timeout, check=True)
    return float(proc.stdout.strip().splitlines()[-1])


def load_time(args):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "forest.onnx")
        nodes, features = big_forest(path, args.load_nodes)
        print(f"forest: {nodes:,} nodes, {os.path.getsize(path) / 1e6:.0f} MB")
        x = np.random.default_rng(2).normal(size=(4, features)).astype(np.float32)
        ours = onnxkit.InferenceSession(path).run(None, {"X": x})[0]
        t_ours, t_ort = [], []
        try:
            for _ in range(args.load_runs):  # alternating, so drift hits both
                t_ours.append(load_once(path, "onnxkit", args.load_timeout))
                t_ort.append(load_once(path, "ort", args.load_timeout))
        except subprocess.TimeoutExpired:
            print(f"  load: onnxkit {statistics.median(t_ours):.2f} s, ORT over {args.load_timeout} s")
            return
        theirs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"X": x})[0]
        assert np.abs(ours - theirs).max() < 1e-3, "outputs differ"
        a, b = statistics.median(t_ours), statistics.median(t_ort)
        print(f"  load (median of {args.load_runs}, fresh process each): onnxkit {a:.2f} s, ORT {b:.2f} s, "
              f"ORT/onnxkit {b / a:.1f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--threads", type=lambda s: [int(t) for t in s.split(",")], default=[1, 2])
    parser.add_argument("--trees", type=int, default=500)
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--load-nodes", type=int, default=3_000_000)
    parser.add_argument("--load-runs", type=int, default=3)
    parser.add_argument("--load-timeout", type=float, default=300)
    parser.add_argument("--only", choices=["throughput", "load"], help="one of the two measurements")
    args = parser.parse_args()
    if args.only != "load":
        throughput(args)
    if args.only != "throughput":
        load_time(args)


if __name__ == "__main__":
    main()
