#!/usr/bin/env python3
"""Tree ensembles (ai.onnx.ml) in onnxkit against ONNX Runtime, same machine,
same run:

- throughput: a 500-tree LightGBM binary classifier (31 leaves a tree,
  grown leaf-wise, so of uneven depth) and a 500-tree XGBoost one (depth
  6, nearly balanced), converted by onnxmltools, run on 10,000 rows; rows/s
  of each at 1 and 2 threads (median of 3 x --runs runs after a warm-up, onnxkit, onnxkit's
  plain tree walk and ORT taking turns run by run), and onnxkit / ORT as a
  ratio (above 1: onnxkit is faster);
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


def interleaved_medians(runs, count):
    """Median seconds of each of `runs` (callables), timed one after the
    other `count` times after a warm-up, so drift and other processes'
    load hit them alike."""
    for run in runs:
        run()
    times = [[] for _ in runs]
    for _ in range(count):
        for run, t in zip(runs, times):
            start = time.perf_counter()
            run()
            t.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def throughput(args):
    model, x = lightgbm_model(args.trees, args.rows)
    for name, m in (("LightGBM", model), ("XGBoost", xgboost_model(args.trees, x))):
        throughput_of(name, m, x, args)


def throughput_of(name, model, x, args):
    data = model.SerializeToString()
    nodes = sum(len(a.ints) for n in model.graph.node for a in n.attribute if a.name == "nodes_nodeids")
    print(f"{name}: {args.trees} trees, {nodes} nodes, {len(x)} rows x {x.shape[1]} features")
    plain_options = onnxkit.SessionOptions()  # the plain tree walk, the tests' oracle
    plain_options.graph_optimization_level = onnxkit.GraphOptimizationLevel.ORT_DISABLE_ALL
    for threads in args.threads:
        ours = onnxkit.InferenceSession(data, threads=threads)
        plain = onnxkit.InferenceSession(data, plain_options, threads=threads)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.log_severity_level = 3  # not the warning on the converter's label shape [1]
        theirs = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        a, b = ours.run(None, {"X": x}), theirs.run(None, {"X": x})
        assert (a[0] == b[0]).all() and np.abs(a[1] - b[1]).max() < 1e-5, "outputs differ"
        s_ours, s_plain, s_ort = interleaved_medians(
            [lambda s=s: s.run(None, {"X": x}) for s in (ours, plain, theirs)], 3 * args.runs)
        print(f"  {threads} thread(s): onnxkit {len(x) / s_ours:,.0f} rows/s (plain walk {len(x) / s_plain:,.0f}), "
              f"ORT {len(x) / s_ort:,.0f} rows/s, onnxkit/ORT {s_ort / s_ours:.2f}x")


def big_forest(path, target_nodes, depth=10, features=50):
    """A TreeEnsembleRegressor of full binary trees of `depth`, written to path."""
    per_tree = 2 ** (depth + 1) - 1
    trees = max(1, target_nodes // per_tree)
    rng = np.random.default_rng(1)
    ids = np.arange(per_tree, dtype=np.int64)
    leaf = ids >= 2 ** depth - 1
    tree_ids = np.repeat(np.arange(trees, dtype=np.int64), per_tree)
    node_ids = np.tile(ids, trees)
    true_ids = np.tile(np.where(leaf, 0, 2 * ids + 1), trees)
    false_ids = np.tile(np.where(leaf, 0, 2 * ids + 2), trees)
    modes = np.tile(np.where(leaf, "LEAF", "BRANCH_LEQ"), trees)
    feats = rng.integers(0, features, size=trees * per_tree)
    values = rng.normal(size=trees * per_tree).astype(np.float32)
    leaf_mask = np.tile(leaf, trees)
    node = helper.make_node(
        "TreeEnsembleRegressor", ["X"], ["Y"], domain="ai.onnx.ml", n_targets=1,
        nodes_treeids=tree_ids.tolist(), nodes_nodeids=node_ids.tolist(), nodes_featureids=feats.tolist(),
        nodes_modes=modes.tolist(), nodes_values=values.tolist(), nodes_truenodeids=true_ids.tolist(),
        nodes_falsenodeids=false_ids.tolist(), target_treeids=tree_ids[leaf_mask].tolist(),
        target_nodeids=node_ids[leaf_mask].tolist(), target_ids=[0] * int(leaf_mask.sum()),
        target_weights=rng.normal(size=int(leaf_mask.sum())).astype(np.float32).tolist())
    graph = helper.make_graph([node], "forest", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, features])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    onnx.save(model, path)
    return trees * per_tree, features


# Each load in a fresh process, so neither gains from pages or allocator
# state a previous load left behind; the time is taken around the session
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
