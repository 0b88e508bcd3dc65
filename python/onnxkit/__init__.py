"""onnxkit for Python: ONNX models run, checked, simplified and edited by
onnxkit's C++ library, in the shapes of the tools scripts already use.

    import onnxkit

    sess = onnxkit.InferenceSession("model.onnx")           # as onnxruntime's
    name = sess.get_inputs()[0].name
    logits, = sess.run(None, {name: image})

    model, ok = onnxkit.simplify(onnx.load("model.onnx"))   # as onnxsim's
    model = onnxkit.edit(model, ["--batch batch", ("set-attr-op", "InstanceNormalization:epsilon=1e-4")])
    onnxkit.info("model.onnx")["compute"]["flops"]         # `onnxkit info --json`
    onnxkit.check(model)                                     # [] when valid
    onnxkit.compare("model.onnx", model)["culprit"]         # `onnxkit compare --json`

Models are given as a path, the bytes of a file or an onnx.ModelProto;
models over protobuf's 2 GiB limit as paths (with their external data beside
them). Failures raise onnxkit.Error (or a subclass) whose message is the line
the command line prints.
"""

from ._onnxkit import Error, InvalidArgument, ModelError, RunError
from ._session import (
    ExecutionMode,
    GraphOptimizationLevel,
    InferenceSession,
    ModelMetadata,
    NodeArg,
    RunOptions,
    SessionOptions,
    get_available_providers,
    get_device,
)
from ._tools import CheckProblem, check, compare, edit, edit_operations, info, infer_shapes, simplify

__version__ = "0.1.0"

__all__ = [
    "CheckProblem",
    "Error",
    "ExecutionMode",
    "GraphOptimizationLevel",
    "InferenceSession",
    "InvalidArgument",
    "ModelError",
    "ModelMetadata",
    "NodeArg",
    "RunError",
    "RunOptions",
    "SessionOptions",
    "check",
    "compare",
    "edit",
    "edit_operations",
    "get_available_providers",
    "get_device",
    "info",
    "infer_shapes",
    "simplify",
]
