"""InferenceSession: onnxkit's runtime behind the part of ONNX Runtime's
Python API that deployment scripts use, so that `import onnxkit as ort`
works where those scripts stay within it."""

import enum
import os
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _onnxkit
from ._onnxkit import InvalidArgument

_CPU = "CPUExecutionProvider"


class GraphOptimizationLevel(enum.IntEnum):
    """ONNX Runtime's levels. onnxkit has two: ORT_DISABLE_ALL runs every
    node as the model has it; any other level fuses (GELU, MatMul+Add,
    Conv+Add+Relu...) and runs convolution chains on blocked layouts."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """Accepted for ONNX Runtime's scripts; onnxkit runs nodes one after the
    other and spends its threads inside them."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    """What onnxruntime.SessionOptions holds that onnxkit honours:
    intra_op_num_threads (0: one thread per core) and
    graph_optimization_level (see GraphOptimizationLevel). The other
    attributes ORT scripts commonly set are accepted and change nothing."""

    def __init__(self) -> None:
        self.intra_op_num_threads: int = 0
        self.graph_optimization_level: GraphOptimizationLevel = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.inter_op_num_threads: int = 0
        self.execution_mode: ExecutionMode = ExecutionMode.ORT_SEQUENTIAL
        self.log_severity_level: int = 2
        self.log_verbosity_level: int = 0
        self.enable_profiling: bool = False


class RunOptions:
    """Accepted by InferenceSession.run for ONNX Runtime's scripts; nothing in
    it changes a run."""

    def __init__(self) -> None:
        self.log_severity_level: int = 2
        self.log_verbosity_level: int = 0
        self.logid: str = ""
        self.tag: str = ""


class NodeArg:
    """A graph input or output as ONNX Runtime describes it: `name`, `type`
    ('tensor(float)', 'seq(tensor(int64))'...) and `shape`, a list with an
    int per fixed dim, the symbol (str) of a named one and None for a dim the
    model leaves open; [] when it declares no shape."""

    __slots__ = ("name", "type", "shape")

    def __init__(self, name: str, type: str, shape: List[Union[int, str, None]]) -> None:
        self.name = name
        self.type = type
        self.shape = shape

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


class ModelMetadata:
    """The model's header, as onnxruntime.ModelMetadata gives it."""

    def __init__(self, fields: Dict[str, Any]) -> None:
        self.producer_name: str = fields["producer_name"]
        self.graph_name: str = fields["graph_name"]
        self.graph_description: str = fields["graph_description"]
        self.domain: str = fields["domain"]
        self.description: str = fields["description"]
        self.version: int = fields["version"]
        self.custom_metadata_map: Dict[str, str] = fields["custom_metadata_map"]


def get_available_providers() -> List[str]:
    """['CPUExecutionProvider']: onnxkit runs on the CPU."""
    return [_CPU]


def get_device() -> str:
    return "CPU"


def _model_argument(path_or_bytes: Any) -> Union[str, bytes]:
    if isinstance(path_or_bytes, (str, os.PathLike)):
        return os.fspath(path_or_bytes)
    if isinstance(path_or_bytes, bytes):
        return path_or_bytes
    if isinstance(path_or_bytes, (bytearray, memoryview)):
        return bytes(path_or_bytes)
    if hasattr(path_or_bytes, "SerializeToString"):  # an onnx.ModelProto
        return path_or_bytes.SerializeToString()
    raise InvalidArgument(
        f"path_or_bytes: expected a path, bytes or an onnx.ModelProto, got a {type(path_or_bytes).__name__}"
    )


def _provider_names(providers: Optional[Sequence[Any]]) -> List[str]:
    names = []
    for p in providers or []:
        names.append(p[0] if isinstance(p, (tuple, list)) else p)
    return names


class InferenceSession:
    """A model loaded once and run as often as wanted, from as many threads
    as wanted (run releases the GIL).

    InferenceSession(path_or_bytes, sess_options=None, providers=None,
    provider_options=None, *, threads=None): path_or_bytes is a path, the
    bytes of a model file or an onnx.ModelProto. threads is the number of
    threads one run spends (default: sess_options.intra_op_num_threads, else
    one per core). Providers other than 'CPUExecutionProvider' are not
    available: asking for one warns, as ONNX Runtime does, and runs on the
    CPU. Raises onnxkit.ModelError when the model cannot be loaded or run by
    onnxkit (an operator it lacks, a graph that does not hold together)."""

    def __init__(
        self,
        path_or_bytes: Any,
        sess_options: Optional[SessionOptions] = None,
        providers: Optional[Sequence[Any]] = None,
        provider_options: Optional[Sequence[Dict[str, Any]]] = None,
        *,
        threads: Optional[int] = None,
    ) -> None:
        self._options = sess_options if sess_options is not None else SessionOptions()
        if threads is None:
            threads = self._options.intra_op_num_threads or 0
        elif threads < 0:
            raise InvalidArgument(f"threads must be 0 (one per core) or more, not {threads}")
        for name in _provider_names(providers):
            if name != _CPU:
                warnings.warn(
                    f"Specified provider '{name}' is not in available provider names. "
                    f"Available providers: '{_CPU}'",
                    stacklevel=2,
                )
        optimize = self._options.graph_optimization_level != GraphOptimizationLevel.ORT_DISABLE_ALL
        self._session = _onnxkit.Session(_model_argument(path_or_bytes), threads, optimize)
        self._options.intra_op_num_threads = self._session.threads
        described = self._session.inputs()
        self._inputs = [NodeArg(n, t, s) for n, t, s, has_default in described if not has_default]
        self._metadata = self._session.metadata()
        # ONNX Runtime lets callers override initializers listed as inputs from IR version 4 on.
        self._overridable = (
            [NodeArg(n, t, s) for n, t, s, has_default in described if has_default]
            if self._metadata["ir_version"] >= 4
            else []
        )
        self._outputs: Optional[List[NodeArg]] = None  # shape inference runs on the first get_outputs()

    def run(
        self,
        output_names: Optional[Sequence[str]],
        input_feed: Mapping[str, Any],
        run_options: Optional[RunOptions] = None,
    ) -> List[Any]:
        """Runs the model on input_feed ({input name: value}) and returns the
        outputs named in output_names (None or []: all, in the model's
        order). A value is a numpy array (read in place when C-contiguous,
        aligned and of native byte order; copied otherwise) or anything
        numpy.asarray takes, converted to the input's declared element type;
        a list of arrays for a sequence input; None for an empty optional.
        Outputs come back as numpy arrays, lists of them (sequences) or None
        (empty optionals). Raises onnxkit.RunError, with the message `onnxkit
        run` prints, when a feed disagrees with the model (unknown or missing
        name, element type, rank, fixed dims) or a kernel refuses its inputs,
        and onnxkit.InvalidArgument for an unknown output name."""
        if not isinstance(input_feed, dict):
            input_feed = dict(input_feed)
        return self._session.run(output_names, input_feed)

    def get_inputs(self) -> List[NodeArg]:
        """The inputs a caller must feed (initializers listed as inputs left out)."""
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        """The graph's outputs, their shapes as shape inference refines the
        declared ones (as ONNX Runtime gives them)."""
        if self._outputs is None:
            self._outputs = [NodeArg(n, t, s) for n, t, s, _ in self._session.outputs()]
        return list(self._outputs)

    def get_overridable_initializers(self) -> List[NodeArg]:
        """Initializers listed as graph inputs, which a feed may replace (IR version 4 on)."""
        return list(self._overridable)

    def get_modelmeta(self) -> ModelMetadata:
        return ModelMetadata(self._metadata)

    def get_providers(self) -> List[str]:
        return [_CPU]

    def get_provider_options(self) -> Dict[str, Dict[str, str]]:
        return {_CPU: {}}

    def get_session_options(self) -> SessionOptions:
        return self._options
