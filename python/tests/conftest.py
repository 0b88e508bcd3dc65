"""Shared set-up of the Python package's tests. ctest runs them in the build's
venv (build/venv, see python/CMakeLists.txt) as

    build/venv/bin/python -m pytest python/tests --onnxkit build/onnxkit \\
        --models build/test-models --examples examples/models

and without the options they take those paths from the source tree. The
truths are independent of onnxkit: PyTorch's outputs exported beside each
model (NAME.torch.npy), ONNX Runtime from PyPI, numbers worked out with
numpy, and the command line (whose own tests hold it to PyTorch) for what
the functions must give as the commands do."""

import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def pytest_addoption(parser):
    parser.addoption("--onnxkit", default=str(ROOT / "build" / "onnxkit"), help="the onnxkit command")
    parser.addoption("--models", default=str(ROOT / "build" / "test-models"), help="tests/models/export_models.py's output")
    parser.addoption("--examples", default=str(ROOT / "examples" / "models"), help="the repository's example models")


@pytest.fixture(scope="session")
def models(request):
    return pathlib.Path(request.config.getoption("--models"))


@pytest.fixture(scope="session")
def examples(request):
    return pathlib.Path(request.config.getoption("--examples"))


class Cli:
    def __init__(self, path):
        self.path = path

    def __call__(self, *args):
        return subprocess.run([self.path, *map(str, args)], capture_output=True, text=True, timeout=600)

    def error(self, command, *args):
        """The message of a failing command: its one stderr line without
        'onnxkit COMMAND: error: '."""
        proc = self(command, *args)
        assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
        line = proc.stderr.strip()
        prefix = f"onnxkit {command}: error: "
        assert line.startswith(prefix) and "\n" not in line, line
        return line[len(prefix):]


@pytest.fixture(scope="session")
def cli(request):
    return Cli(request.config.getoption("--onnxkit"))


def assert_close(actual, expected):
    """The project's tolerance against an independent truth:
    |actual - expected| <= 1e-4 * max(1, max |expected|), same shape and dtype."""
    assert isinstance(actual, np.ndarray), type(actual)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.size == 0:
        return
    bound = 1e-4 * max(1.0, float(np.abs(expected).max()))
    worst = float(np.abs(actual.astype(np.float64) - expected.astype(np.float64)).max())
    assert worst <= bound, f"max abs diff {worst:g} over {bound:g}"
