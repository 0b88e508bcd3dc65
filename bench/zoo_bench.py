#!/usr/bin/env python3
"""onnxkit against ONNX Runtime on the model zoo of tests/models/export_zoo.py,
side by side, in the manner of runtime_bench.py: for each model and thread
count, rounds of `onnxkit bench MODEL --threads T --runs R --json` and
`bench/ort_bench.py MODEL --threads T --runs R` back to back, taking turns to
go first, so that the machine's noise hits both; at 1 thread both are held
to the same core, the next core the next round. Both read the same inputs,
written once per model into MODEL.bench-inputs.npz beside it: the export's
example inputs, or for a model exported without them random ones (floats
in [0, 1), integers 0..9, every symbolic dim 1). Delete the .bench-inputs.npz
files after changing how they are made.

Prints per model and thread count the median latency of each runtime (median
of R runs, or of as many as take 0.2 s where runs are shorter, as timed by a
first onnxkit process that is not counted; then of the rounds), the ratio
onnxkit / ORT (lower is better: the median over rounds of each round's
ratio), the peak RSS of each process
(from wait4; ORT's includes its Python interpreter, about 30 MiB), the CPU
other processes used while the cell's kept rounds ran (in cores: /proc/stat's
busy time less the measured process's own, from wait4), then the geometric
mean of the ratios per thread count and one line per model that failed in
either runtime, with the error's last line.

Other work on the machine slows both runtimes, and 2-thread runs by far more
than 1-thread ones: a round in which either process saw other processes use
more than a tenth of a core is taken again, up to --retries times (in quiet
measurements only, not under --load); a cell still that noisy is marked *.

--load bursty runs a competitor process through the whole measurement: a
loop that busy-spins 3 ms and sleeps 2 ms, at normal priority, pinned to
nothing: a browser or a second service on the same cores. --contention
measures, per model, 1 thread quiet, 2 threads quiet and 2 threads with that
competitor, and the ratio (2 threads loaded) / (1 thread quiet), for both
runtimes: above 1, a second thread costs more than it brings when the cores
are shared; then, loaded, the mean run (the median of the processes' means)
and the slowest run of all.

Missing models are exported first with Debian's torch (/usr/bin/python3
tests/models/export_zoo.py). ORT runs from the project's venv (.venv, see
runtime_bench.py). Run it with any Python 3:

  bench/zoo_bench.py [--models resnet18,gpt_decoder] [--rounds 3] [--runs 10]
                     [--threads 1,2] [--work build/zoo] [--json FILE] [--load bursty]
  bench/zoo_bench.py --contention --models mobilenet_v2,bert_encoder"""

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager

from common import DEBIAN_PYTHON, ROOT, onnxkit_binary

VENV_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
EXPORTER = os.path.join(ROOT, "tests", "models", "export_zoo.py")
ORT_BENCH = os.path.join(ROOT, "bench", "ort_bench.py")
RUNTIMES = ("onnxkit", "ORT")
MIN_SECONDS = 0.2  # of measured runs per process, at least
NOISE_LIMIT = 0.1  # cores other processes may use while a quiet round runs

# The competitor of --load bursty: 3 ms of work, 2 ms of sleep, forever.
BURSTY_LOOP = """
import time
while True:
    end = time.perf_counter() + 0.003
    while time.perf_counter() < end:
        pass
    time.sleep(0.002)
"""


class RunFailed(Exception):
    """A command exited non-zero; the message is its error's last line."""


# ---------------------------------------------------------------------------
# Running one measurement.

def busy_cpu_seconds():
    """CPU time the machine has spent busy since boot, all cores: user, nice,
    system, interrupts and time the hypervisor gave to others (steal)."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in f.readline().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def run_json(cmd, timeout, cpu=None):
    """(the JSON object cmd prints last, its peak RSS in MiB from wait4, the
    cores other processes kept busy meanwhile), run on core `cpu` only when
    given. wait4 covers the process whatever it runs as (onnxkit bench may
    re-exec itself), so both runtimes' RSS is measured the same way."""
    if cpu is not None:
        cmd = ["taskset", "--cpu-list", str(cpu)] + cmd  # which execs cmd: wait4 still sees it
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        busy_before, started = busy_cpu_seconds(), time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - started
        others = max(0.0, busy_cpu_seconds() - busy_before - usage.ru_utime - usage.ru_stime) / max(wall, 1e-3)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        if timer.finished.is_set() and proc.returncode == -9:
            raise RunFailed(f"killed after {timeout:.0f} s")
        raise RunFailed(last_line(stderr) or f"exit code {proc.returncode}")
    try:
        result = json.loads(stdout[stdout.rindex("{"):]) if "{" in stdout else None
    except ValueError:
        result = None
    if result is None or "median_ms" not in result:
        raise RunFailed(f"no JSON result in the output: {last_line(stdout)!r}")
    return result, usage.ru_maxrss / 1024, others


def last_line(text):
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def onnxkit_cmd(model, threads, runs):
    cmd = [onnxkit_binary(), "bench", model.path, "--threads", str(threads), "--runs", str(runs), "--json"]
    if model.inputs:
        return cmd + ["--input", model.inputs]
    for name, dims in model.symbolic_shapes.items():
        cmd += ["--shape", f"{name}:{dims}"]
    return cmd


def ort_cmd(model, threads, runs):
    cmd = [VENV_PYTHON, ORT_BENCH, model.path, "--threads", str(threads), "--runs", str(runs)]
    return cmd + ["--inputs", model.inputs] if model.inputs else cmd


# ---------------------------------------------------------------------------
# Models.

class Model:
    """A zoo model on disk, with the --shape flags onnxkit needs for its
    symbolic dims (set to 1, as ort_bench.py does). A model `onnxkit info`
    cannot read gets none: `onnxkit bench` then reports the error."""

    def __init__(self, name, path):
        self.name = name
        self.path = path
        self.symbolic_shapes = {}
        self.inputs = shared_inputs(path)
        step = subprocess.run([onnxkit_binary(), "info", "--json", path], capture_output=True, text=True)
        if step.returncode != 0:
            return
        for i in json.loads(step.stdout)["inputs"]:
            shape = i["type"].get("shape") or []
            if any(not isinstance(d, int) for d in shape):
                self.symbolic_shapes[i["name"]] = ",".join(str(d) if isinstance(d, int) else "1" for d in shape)


def shared_inputs(path):
    """The .npz of inputs both runtimes read, or None when ORT cannot make it
    (each runtime then draws its own): the export's example inputs
    (NAME.input.npy or NAME.inputs.npz: images of the size the model was
    made for, a sample rate it accepts), else random ones from ort_bench.py.
    Both must see the same data: a detector's random inputs decide how many
    regions its head pools (48 against 33 for Faster R-CNN with each
    runtime's own), and so how much work a run does."""
    stem = os.path.splitext(path)[0]
    inputs = stem + ".bench-inputs.npz"
    if not os.path.exists(inputs):
        example = next((f for f in (stem + ".inputs.npz", stem + ".input.npy") if os.path.exists(f)), None)
        step = subprocess.run([VENV_PYTHON, ORT_BENCH, path, "--save-inputs", inputs] +
                              (["--inputs", example] if example else []), capture_output=True, text=True)
        if step.returncode != 0:
            return None
    return inputs


def zoo_names():
    out = subprocess.run([DEBIAN_PYTHON, EXPORTER, "--list"], check=True, capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def prepare(names, work, failures):
    """Exports what is missing from `work` and returns the models that are
    there; an export that fails goes to `failures`."""
    os.makedirs(work, exist_ok=True)
    models = []
    for name in names:
        path = os.path.join(work, name + ".onnx")
        if not os.path.exists(path):
            print(f"exporting {name} ...", flush=True)
            step = subprocess.run([DEBIAN_PYTHON, EXPORTER, "--out", work, "--models", name],
                                  capture_output=True, text=True)
            if step.returncode != 0:
                failures.append({"model": name, "runtime": "export", "threads": None,
                                 "error": last_line(step.stderr)})
                continue
        models.append(Model(name, path))
    return models


# ---------------------------------------------------------------------------
# Load.

@contextmanager
def load(kind):
    """Runs the competitor `kind` ("bursty", or None for none) for the
    duration of the with-block."""
    if kind is None:
        yield
        return
    competitor = subprocess.Popen([sys.executable, "-c", BURSTY_LOOP])
    try:
        time.sleep(0.2)  # let it start before the first measurement
        yield
    finally:
        competitor.kill()
        competitor.wait()


# ---------------------------------------------------------------------------
# Measuring.

def compare(model, threads, rounds, runs, timeout, broken, retries=0):
    """Interleaved rounds of both runtimes on one model at one thread count,
    each taken again up to `retries` times while other processes use more
    than NOISE_LIMIT cores. `broken` maps runtime -> error for runtimes that
    already failed on this model: they are not run again. Returns a result
    dict."""
    # Enough runs per process that each measures MIN_SECONDS: ten runs of a
    # 1 ms model are one scheduler hiccup away from another figure. The
    # first process of onnxkit, with `runs`, says how long a run takes.
    if "onnxkit" not in broken:
        try:
            probe, _, _ = run_json(onnxkit_cmd(model, threads, runs), timeout)
            runs = max(runs, math.ceil(MIN_SECONDS * 1000 / max(probe["median_ms"], 1e-3)))
        except RunFailed as e:
            broken["onnxkit"] = str(e)
    commands = {"onnxkit": onnxkit_cmd(model, threads, runs), "ORT": ort_cmd(model, threads, runs)}
    samples = {r: [] for r in RUNTIMES}  # per runtime: (round, JSON, RSS)
    others = 0.0  # the most cores other processes used in a kept round
    # At one thread, both runtimes of a round run on the same core, a
    # different one each round: the cores of a VM can run at different
    # speeds for minutes, and a ratio should not say which core each
    # process happened to land on.
    cores = sorted(os.sched_getaffinity(0)) if threads == 1 else []
    for round_index in range(rounds):
        order = RUNTIMES if round_index % 2 == 0 else RUNTIMES[::-1]
        cpu = cores[round_index % len(cores)] if cores else None
        for attempt in range(retries + 1):
            taken, noise = {}, 0.0
            for runtime in order:
                if runtime in broken:
                    continue
                try:
                    result, rss, busy = run_json(commands[runtime], timeout, cpu)
                    taken[runtime] = (round_index, result, rss)
                    noise = max(noise, busy)
                except RunFailed as e:
                    broken[runtime] = str(e)
            if noise <= NOISE_LIMIT:
                break
        for runtime, sample in taken.items():
            samples[runtime].append(sample)
        others = max(others, noise)
    row = summarize(model.name, threads, samples)
    row["others_cores"] = others
    return row


def summarize(name, threads, samples):
    row = {"model": name, "threads": threads}
    for runtime, got in samples.items():
        if got:
            row[runtime] = {"median_ms": statistics.median(r["median_ms"] for _, r, _ in got),
                            "mean_ms": statistics.median(r["mean_ms"] for _, r, _ in got),
                            "max_ms": max(r["max_ms"] if "max_ms" in r else max(r["run_ms"]) for _, r, _ in got),
                            "peak_rss_mb": max(rss for _, _, rss in got),
                            "rounds_ms": [r["median_ms"] for _, r, _ in got]}
            if runtime == "ORT":
                row["ort_version"] = got[-1][1].get("version")
    ours = {i: r["median_ms"] for i, r, _ in samples["onnxkit"]}
    theirs = {i: r["median_ms"] for i, r, _ in samples["ORT"]}
    paired = [ours[i] / theirs[i] for i in ours if i in theirs]
    row["ratio"] = statistics.median(paired) if paired else None
    return row


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


# ---------------------------------------------------------------------------
# Printing.

def header(load_kind):
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    ort_version = subprocess.run([VENV_PYTHON, "-c", "import onnxruntime; print(onnxruntime.__version__)"],
                                 capture_output=True, text=True).stdout.strip() or "?"
    onnxkit_version = subprocess.run([onnxkit_binary(), "--version"], capture_output=True, text=True).stdout.strip()
    # The binary's own tree (ONNXKIT may name another checkout's build), and
    # whether its sources had changes the commit does not hold.
    binary_tree = os.path.dirname(os.path.realpath(onnxkit_binary()))
    commit = subprocess.run(["git", "-C", binary_tree, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "?"
    dirty = subprocess.run(["git", "-C", binary_tree, "status", "--porcelain", "--untracked-files=no", "--", ":/src"],
                           capture_output=True, text=True).stdout.strip()
    built = datetime.datetime.fromtimestamp(os.path.getmtime(onnxkit_binary())).strftime("%Y-%m-%d %H:%M")
    info = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "cpu": cpu, "cores": os.cpu_count(),
            "onnxkit": f"{onnxkit_version} (its tree at commit {commit}{' with changes to src/' if dirty else ''}, "
                       f"binary built {built})",
            "onnxruntime": ort_version, "python": platform.python_version(), "kernel": platform.release(),
            "load": load_kind or "none"}
    for key, value in info.items():
        print(f"# {key:<12} {value}")
    return info


def fmt(value, spec):
    return format(value, spec) if value is not None else "-"


def print_row(row, load_kind):
    ok, ort = row.get("onnxkit", {}), row.get("ORT", {})
    noisy = "*" if row["others_cores"] > NOISE_LIMIT and not load_kind else ""
    print(f"{row['model']:<38} {row['threads']:>3} {fmt(ok.get('median_ms'), '11.2f'):>11} "
          f"{fmt(ort.get('median_ms'), '9.2f'):>9} {fmt(row['ratio'], '6.2f'):>6} "
          f"{fmt(ok.get('peak_rss_mb'), '12.0f'):>12} {fmt(ort.get('peak_rss_mb'), '8.0f'):>8} "
          f"{row['others_cores']:>6.2f}{noisy}", flush=True)


def print_summary(rows, threads_list, load_kind):
    under = f" under {load_kind} load" if load_kind else ""
    for threads in threads_list:
        at = [r for r in rows if r["threads"] == threads and r["ratio"] is not None]
        if not at:
            continue
        ours = geomean(r["onnxkit"]["median_ms"] for r in at)
        theirs = geomean(r["ORT"]["median_ms"] for r in at)
        print(f"{threads} thread{'s' if threads > 1 else ''}{under}: geometric mean of ratios "
              f"{geomean(r['ratio'] for r in at):.3f} over {len(at)} models "
              f"(geometric mean latency onnxkit {ours:.2f} ms, ORT {theirs:.2f} ms)")


def print_failures(failures):
    for f in failures:
        where = f" at {f['threads']} thread(s)" if f["threads"] else ""
        print(f"FAILED {f['model']} in {f['runtime']}{where}: {f['error']}")


# ---------------------------------------------------------------------------
# The two modes.

def side_by_side(models, args, threads_list, failures):
    print(f"{'model':<38} {'thr':>3} {'onnxkit ms':>11} {'ORT ms':>9} {'ratio':>6} {'onnxkit MiB':>12} {'ORT MiB':>8} "
          f"{'others':>6}")
    rows = []
    with load(args.load):
        for model in models:
            broken = {}
            for threads in threads_list:
                already = set(broken)
                row = compare(model, threads, args.rounds, args.runs, args.timeout, broken,
                              retries=0 if args.load else args.retries)
                row["load"] = args.load or "none"
                rows.append(row)
                print_row(row, args.load)
                failures += [{"model": model.name, "runtime": r, "threads": threads, "error": broken[r]}
                             for r in broken if r not in already]
    print_summary(rows, threads_list, args.load)
    noisy = sum(1 for r in rows if r["others_cores"] > NOISE_LIMIT)
    if noisy and not args.load:
        print(f"* {noisy} cell(s) kept rounds in which other processes used more than {NOISE_LIMIT} of a core")
    return rows


CONDITIONS = [(1, None), (2, None), (2, "bursty")]  # (threads, load)


def contention(models, args, failures):
    """Per model and runtime: 1 thread quiet, 2 quiet, 2 with the bursty
    competitor, and (2 loaded) / (1 quiet)."""
    print(f"{'model':<38} {'runtime':<8} {'1 quiet ms':>11} {'2 quiet ms':>11} {'2 loaded ms':>12} {'2L/1Q':>6} "
          f"{'2L mean':>8} {'2L max':>8}")
    rows = []
    for model in models:
        broken = {}
        cells = {}
        for threads, kind in CONDITIONS:
            with load(kind):
                row = compare(model, threads, args.rounds, args.runs, args.timeout, broken,
                              retries=0 if kind else args.retries)
            row["load"] = kind or "none"
            rows.append(row)
            cells[(threads, kind)] = row
        for runtime in RUNTIMES:
            ms = [cells[c].get(runtime, {}).get("median_ms") for c in CONDITIONS]
            loaded = cells[CONDITIONS[2]].get(runtime, {})
            ratio = ms[2] / ms[0] if ms[0] and ms[2] else None
            print(f"{model.name:<38} {runtime:<8} {fmt(ms[0], '11.2f'):>11} {fmt(ms[1], '11.2f'):>11} "
                  f"{fmt(ms[2], '12.2f'):>12} {fmt(ratio, '6.2f'):>6} {fmt(loaded.get('mean_ms'), '8.2f'):>8} "
                  f"{fmt(loaded.get('max_ms'), '8.1f'):>8}", flush=True)
        failures += [{"model": model.name, "runtime": r, "threads": None, "error": e} for r, e in broken.items()]
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", help="comma-separated zoo names (all by default; export_zoo.py --list)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--runs", type=int, default=10, help="measured runs per process (more for models faster than 20 ms a run)")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--work", default=os.path.join(ROOT, "build", "zoo"), help="where the zoo's models are")
    p.add_argument("--json", help="also write the results to this file")
    p.add_argument("--load", choices=["bursty"], help="run a competitor process during the measurement")
    p.add_argument("--contention", action="store_true",
                   help="1 thread quiet, 2 quiet, 2 under bursty load, per model (ignores --threads and --load)")
    p.add_argument("--timeout", type=float, default=600, help="seconds before one process is killed")
    p.add_argument("--retries", type=int, default=2,
                   help=f"times a quiet round is taken again when other processes used over {NOISE_LIMIT} of a core")
    args = p.parse_args()
    threads_list = [int(t) for t in args.threads.split(",")]

    info = header("bursty (2 threads only)" if args.contention else args.load)
    failures = []
    models = prepare(args.models.split(",") if args.models else zoo_names(), args.work, failures)
    start = time.perf_counter()
    if args.contention:
        rows = contention(models, args, failures)
    else:
        rows = side_by_side(models, args, threads_list, failures)
    print_failures(failures)
    print(f"# {len(models)} models in {time.perf_counter() - start:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": info, "args": vars(args), "results": rows, "failures": failures}, f, indent=1)


if __name__ == "__main__":
    main()
