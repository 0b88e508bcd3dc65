#!/usr/bin/env python3
"""onnxkit.InferenceSession.run from Python against the CLI's `onnxkit bench`
and against onnxruntime.InferenceSession.run in the same process.

Per model and thread count, each round measures (median of --runs runs
after a warm-up, the same input: the model's NAME.input.npy):

- cli:    `onnxkit bench --input NAME=FILE --json` (which sets
          OMP_WAIT_POLICY=active for itself: OpenMP's threads spin between
          parallel regions);
- py:     onnxkit.InferenceSession.run in a Python process started with
          OMP_WAIT_POLICY=active too, so that py / cli is the cost of the
          Python layer (feeds in, outputs copied out, the GIL) alone;
- py-default: the same with OpenMP's default policy (threads sleep after a
          short spin), which is what a Python process gets unless it sets
          the variable before it starts;
- vs ORT: onnxkit and ONNX Runtime sessions in one Python process (default
          policy: a spinning OpenMP team would take the cores from ORT's
          threads), run in alternating blocks of --runs; the ratio is
          onnxkit / ORT per round.

cli and py alternate which goes first. Printed: medians over the rounds of
each round's median latency (ms) and of each round's ratio. A last line
gives the per-call cost on a one-node model (Identity of one float), where
the binding's overhead is all there is.

Runs in the build's venv (onnxkit and onnxruntime importable), on the
models the build exports:

usage: build/venv/bin/python bench/python_bench.py [--rounds 5] [--runs 20] [--threads 1,2] [--models resnet50,bert_encoder]"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from common import ROOT, onnxkit_binary

MODELS = ["resnet50", "bert_encoder"]


def latencies(run, runs, warmup=5):
    for _ in range(warmup):
        run()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return times


def feeds_for(session, model):
    import numpy as np

    return {session.get_inputs()[0].name: np.load(model.replace(".onnx", ".input.npy"))}


def child(args):
    """Measures inside this process and prints JSON: the py and vs-ORT cells."""
    import onnxkit

    ours = onnxkit.InferenceSession(args.model, threads=args.threads)
    feed = feeds_for(ours, args.model)
    if args.child == "onnxkit":
        result = {"onnxkit_ms": statistics.median(latencies(lambda: ours.run(None, feed), args.runs))}
    else:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        theirs = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
        ratios, ours_ms, theirs_ms = [], [], []
        for block in range(args.blocks):
            order = [("onnxkit", ours), ("ort", theirs)][:: 1 if block % 2 == 0 else -1]
            medians = {name: statistics.median(latencies(lambda s=s: s.run(None, feed), args.runs)) for name, s in order}
            ours_ms.append(medians["onnxkit"])
            theirs_ms.append(medians["ort"])
            ratios.append(medians["onnxkit"] / medians["ort"])
        result = {"onnxkit_ms": statistics.median(ours_ms), "ort_ms": statistics.median(theirs_ms),
                  "ratio": statistics.median(ratios), "ort_version": ort.__version__}
    print(json.dumps(result))


def run_child(model, threads, runs, mode, wait_policy):
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    if wait_policy:
        env["OMP_WAIT_POLICY"] = wait_policy
    cmd = [sys.executable, os.path.abspath(__file__), "--child", mode, "--model", model, "--threads", str(threads),
           "--runs", str(runs)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_cli(onnxkit, model, threads, runs, input_name):
    cmd = [onnxkit, "bench", model, "--threads", str(threads), "--runs", str(runs), "--json",
           "--input", f"{input_name}={model.replace('.onnx', '.input.npy')}"]
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)  # bench chooses its own: active
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out[out.index("{"):])["median_ms"]


def per_call_overhead(runs=2000):
    """Microseconds per run() of Identity on one float: onnxkit, ORT."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    import onnxkit

    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "tiny",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    data = model.SerializeToString()
    feed = {"x": np.ones(1, np.float32)}
    out = {}
    for name, session in (("onnxkit", onnxkit.InferenceSession(data, threads=1)),
                          ("ort", ort.InferenceSession(data, providers=["CPUExecutionProvider"]))):
        out[name] = statistics.median(latencies(lambda s=session: s.run(None, feed), runs, warmup=100)) * 1000
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--folder", default=os.path.join(ROOT, "build", "test-models"), help="the build's exported models")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--child", choices=["onnxkit", "both"], help=argparse.SUPPRESS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    p.add_argument("--blocks", type=int, default=4, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        args.threads = int(args.threads)
        return child(args)

    onnxkit = onnxkit_binary()
    print(f"{'model':<14} {'thr':>3} {'cli ms':>8} {'py ms':>8} {'py/cli':>7} {'py-default ms':>14} "
          f"{'py-default/cli':>15} {'vs ORT: onnxkit ms':>19} {'ORT ms':>8} {'ratio':>6}", flush=True)
    ort_version = "?"
    for name in args.models.split(","):
        model = os.path.join(args.folder, f"{name}_opset17.onnx")
        import onnx

        input_name = onnx.load(model, load_external_data=False).graph.input[0].name
        for threads in [int(t) for t in args.threads.split(",")]:
            cli, py, py_default, ratio_py, ratio_default, vs = [], [], [], [], [], []
            for r in range(args.rounds):
                cells = {}
                steps = [("cli", lambda: run_cli(onnxkit, model, threads, args.runs, input_name)),
                         ("py", lambda: run_child(model, threads, args.runs, "onnxkit", "active")["onnxkit_ms"])]
                for key, step in steps[:: 1 if r % 2 == 0 else -1]:
                    cells[key] = step()
                cells["py_default"] = run_child(model, threads, args.runs, "onnxkit", None)["onnxkit_ms"]
                both = run_child(model, threads, args.runs, "both", None)
                ort_version = both["ort_version"]
                cli.append(cells["cli"])
                py.append(cells["py"])
                py_default.append(cells["py_default"])
                ratio_py.append(cells["py"] / cells["cli"])
                ratio_default.append(cells["py_default"] / cells["cli"])
                vs.append(both)
            med = statistics.median
            print(f"{name:<14} {threads:>3} {med(cli):>8.2f} {med(py):>8.2f} {med(ratio_py):>7.3f} "
                  f"{med(py_default):>14.2f} {med(ratio_default):>15.3f} "
                  f"{med(v['onnxkit_ms'] for v in vs):>19.2f} {med(v['ort_ms'] for v in vs):>8.2f} "
                  f"{med(v['ratio'] for v in vs):>6.3f}", flush=True)
    overhead = per_call_overhead()
    print(f"one-node model, per run(): onnxkit {overhead['onnxkit']:.1f} us, ORT {overhead['ort']:.1f} us")
    print(f"(ONNX Runtime {ort_version}; medians over {args.rounds} rounds of {args.runs} runs)")


if __name__ == "__main__":
    main()
