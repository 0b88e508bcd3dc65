"""The commands as functions: info, check, infer_shapes, edit, simplify and
compare.
Each calls the library function its command calls (src/tools/), on paths:
a model given as bytes or as an onnx.ModelProto is written to a temporary
folder first, and a result is read back from one."""

import contextlib
import json
import os
import pathlib
import tempfile
import warnings
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _onnxkit
from ._onnxkit import Error, InvalidArgument

if TYPE_CHECKING:
    import onnx

ModelLike = Union[str, "os.PathLike[str]", bytes, "onnx.ModelProto"]
Shapes = Mapping[str, Sequence[Union[int, str]]]

# Stands for a model given in memory where a message names its file.
_IN_MEMORY = "<model>"


def _is_path(model: Any) -> bool:
    return isinstance(model, (str, os.PathLike))


def _model_bytes(model: Any) -> bytes:
    if isinstance(model, bytes):
        return model
    if isinstance(model, (bytearray, memoryview)):
        return bytes(model)
    if hasattr(model, "SerializeToString"):  # an onnx.ModelProto
        try:
            return model.SerializeToString()
        except ValueError as e:  # protobuf refuses messages over 2 GiB
            raise InvalidArgument(
                f"the model does not fit in one protobuf message ({e}); save it with its weights as external "
                "data (onnx.save(model, path, save_as_external_data=True)) and pass the path"
            ) from None
    raise InvalidArgument(f"model: expected a path, bytes or an onnx.ModelProto, got a {type(model).__name__}")


def _model_source(model: Any) -> Union[str, bytes]:
    """What the bindings take for a model they can read in memory."""
    return os.fspath(model) if _is_path(model) else _model_bytes(model)


class _Files:
    """Where a tool function reads and writes: `source` and `target` paths,
    `external` (how the target is saved) and `folder`, a temporary folder
    for whatever else the call needs."""

    def __init__(self, source: str, target: str, external: str, folder: str) -> None:
        self.source, self.target, self.external, self.folder = source, target, external, folder


@contextlib.contextmanager
def _files(model: Any, output: Optional[Any]) -> Iterator[_Files]:
    """The paths for a tool function, in a temporary folder where the model
    or the result is held in memory. Messages name such a model <model>
    rather than its temporary file."""
    with tempfile.TemporaryDirectory(prefix="onnxkit-") as folder:
        if _is_path(model):
            source = os.fspath(model)
        else:
            source = os.path.join(folder, "model.onnx")
            pathlib.Path(source).write_bytes(_model_bytes(model))
        if output is not None:
            # Where the user wants it, as the command writes it: external data kept external.
            target, external = os.fspath(output), "keep"
        else:
            # To be read back into one ModelProto: everything inline.
            target, external = os.path.join(folder, "result.onnx"), "none"
        try:
            yield _Files(source, target, external, folder)
        except Error as e:
            message = str(e)
            for temporary in (os.path.join(folder, "model.onnx"), os.path.join(folder, "result.onnx")):
                message = message.replace(temporary, _IN_MEMORY)
            if message == str(e):
                raise
            raise type(e)(message) from None


def _read_result(target: str, output: Optional[Any]) -> "onnx.ModelProto":
    import onnx

    if output is not None:
        return onnx.load(target, load_external_data=False)
    return onnx.load_model_from_string(pathlib.Path(target).read_bytes())


def _warn(messages: Sequence[str]) -> None:
    for message in messages:
        warnings.warn(message, stacklevel=3)


def info(model: ModelLike, *, nodes: bool = False) -> Dict[str, Any]:
    """What `onnxkit info --json` prints, as a dict (schema: docs/info-json.md):
    IR version, producer, opsets, inputs and outputs with their symbolic
    dims, operator histogram, parameters, sizes, MACs and FLOPs; with
    nodes=True, every node's inputs, outputs, attributes and cost."""
    return json.loads(_onnxkit.info(_model_source(model), nodes))


class CheckProblem:
    """One problem `onnxkit check` reports: `location` ("node #3 'conv1'
    (Conv)", "initializer 'w'", "model"), ONNX's own `message`, and where a
    node is at fault its `node_index` in the main graph (else -1),
    `node_name` and `op_type`. str() gives the command's line without the
    file name."""

    __slots__ = ("location", "message", "node_index", "node_name", "op_type")

    def __init__(self, location: str, message: str, node_index: int, node_name: str, op_type: str) -> None:
        self.location = location
        self.message = message
        self.node_index = node_index
        self.node_name = node_name
        self.op_type = op_type

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"

    def __repr__(self) -> str:
        return f"CheckProblem({self.location!r}, {self.message!r})"


def check(model: ModelLike, *, full: bool = False) -> List[CheckProblem]:
    """Validates the model as `onnxkit check` does: ONNX's checker node by
    node, so that every problem is listed, each naming its node; with
    full=True, strict shape and type inference as well. Returns the problems
    ([] for a valid model). What could not be checked (opsets newer than the
    checker's) comes as warnings. A file that cannot be read as a model
    raises onnxkit.Error."""
    problems, notes = _onnxkit.check(_model_source(model), full)
    _warn(notes)
    return [CheckProblem(*p) for p in problems]


def infer_shapes(model: ModelLike, *, output: Optional[Union[str, "os.PathLike[str]"]] = None) -> "onnx.ModelProto":
    """The model with every inferred type and shape written into its
    value_info, as `onnxkit shapes` writes it (onnx.shape_inference's job,
    with onnxkit's inference). With output, the result is also written there
    (atomically, external data kept external) and returned loaded from it
    without its external data; a result over 2 GiB needs output."""
    with _files(model, output) as files:
        report = _onnxkit.infer_shapes(files.source, files.target, files.external)
        result = _read_result(files.target, output)
    if report["warning"]:
        _warn([report["warning"]])
    return result


def edit_operations() -> List[Tuple[str, str, str]]:
    """(name, argument syntax, summary) of every operation edit takes, as
    `onnxkit edit --help` lists them."""
    return _onnxkit.edit_operations()


def edit(
    model: ModelLike,
    operations: Sequence[Union[str, Tuple[str, Any]]],
    *,
    output: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> "onnx.ModelProto":
    """Graph surgery as `onnxkit edit` does it: the operations applied in
    order, then the result checked (ONNX's checker with strict shape
    inference) or nothing is returned. Each operation is a line as the
    command line or an edit script gives it ("--batch batch", "set-attr
    conv1:epsilon=1e-5", "--cleanup"), or a pair ("rename", "old=new");
    see edit_operations(). With output, the result is also written there.
    Raises onnxkit.Error with the command's message (unknown names suggest
    the closest one); what the command would warn about comes as warnings."""
    if isinstance(operations, (str, tuple)):
        operations = [operations]
    with _files(model, output) as files:
        report = _onnxkit.edit(files.source, files.target, list(operations), files.external)
        result = _read_result(files.target, output)
    _warn(report["warnings"])
    return result


def _shape_flags(shapes: Optional[Mapping[Any, Sequence[Any]]], argument: str) -> List[str]:
    flags = []
    for name, dims in (shapes or {}).items():
        if name is None:
            raise InvalidArgument(f"{argument}: name the input (a key of None is onnxsim's command-line shorthand)")
        flags.append(f"{name}:{','.join(str(d) for d in dims)}")
    return flags


def simplify(
    model: ModelLike,
    check_n: int = 1,
    perform_optimization: bool = True,
    skip_fuse_bn: bool = False,
    overwrite_input_shapes: Optional[Shapes] = None,
    test_input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
    skipped_optimizers: Optional[Sequence[str]] = None,
    skip_shape_inference: bool = False,
    input_data: Optional[Mapping[str, Any]] = None,
    dynamic_input_shape: bool = False,
    custom_lib: Optional[str] = None,
    include_subgraph: bool = False,
    unused_output: Optional[Sequence[str]] = None,
    allow_large_tensor: bool = True,
    *,
    output: Optional[Union[str, "os.PathLike[str]"]] = None,
    input_shapes: Optional[Shapes] = None,
    keep_dynamic: bool = False,
    skip_constant_folding: bool = False,
    fold_limit: int = 1 << 20,
    exclude_nodes: Optional[Sequence[str]] = None,
    freeze_initializers: bool = False,
    verify_each_pass: bool = False,
    seed: int = 0,
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> Tuple["onnx.ModelProto", bool]:
    """onnx-simplifier's simplify, done by `onnxkit simplify`: shape
    inference, constant folding on onnxkit's kernels and optimizer passes to
    a fixed point, then the result checked against the original on check_n
    sets of random inputs (input_data gives real ones, {name: array};
    symbolic dims take 2 unless test_input_shapes sets them). Returns
    (model, True). The positional parameters are onnxsim's, in its order:

    - overwrite_input_shapes {name: dims} sets inputs' shapes; a dim may be
      a symbol ('batch') as well as a number. input_shapes is its old name.
    - skipped_optimizers names passes not to run, onnxsim's spelling
      (fuse_bn_into_conv) or onnxkit's (fuse-bn-into-conv, as `simplify
      --list-passes` lists them); skip_fuse_bn skips fuse-bn-into-conv, and
      perform_optimization=False every pass (constants still fold).
    - check_n defaults to 1, not onnxsim's 0: the result is checked unless
      asked otherwise. A result that differs from the original raises
      onnxkit.Error naming the output and the first tensor that differs
      (onnxsim returns the model with False), so the bool is always True.
    - skip_shape_inference, include_subgraph, dynamic_input_shape and
      allow_large_tensor are accepted and change nothing: inference that
      fails stops with a warning, sub-graphs are always simplified, dims are
      dynamic unless set, and no node folds into a tensor over fold_limit
      bytes that is larger than its inputs. custom_lib and unused_output
      are not supported (onnxkit.InvalidArgument).

    onnxkit's own options are keyword-only, as its flags: keep_dynamic,
    skip_constant_folding, fold_limit, exclude_nodes (names of nodes to keep
    as they are), freeze_initializers, verify_each_pass, seed, rtol, atol.
    With output the result is also written there, external data kept as
    the input had it (a model over 2 GiB: pass its path and an output).
    What the command warns about comes as warnings."""
    if custom_lib is not None:
        raise InvalidArgument("custom_lib: onnxkit folds constants with its own kernels and loads no custom-op library")
    if unused_output is not None:
        raise InvalidArgument("unused_output is not supported: remove the outputs from the model before simplifying it")
    if overwrite_input_shapes is not None and input_shapes is not None:
        raise InvalidArgument("give overwrite_input_shapes or input_shapes (its old name), not both")
    shapes = overwrite_input_shapes if overwrite_input_shapes is not None else input_shapes
    skip = [name.replace("_", "-") for name in skipped_optimizers or []]
    if skip_fuse_bn:
        skip.append("fuse-bn-into-conv")
    if not perform_optimization:
        # As in onnxsim, folding is not an optimization: skip_constant_folding skips it.
        skip += [name for name, _ in _onnxkit.passes() if name != "fold-constants"]
    with _files(model, output) as files:
        inputs = []
        for k, (name, value) in enumerate((input_data or {}).items()):
            import numpy as np

            path = os.path.join(files.folder, f"check_input_{k}.npy")
            np.save(path, np.ascontiguousarray(value))
            inputs.append(f"{name}={path}")
        report = _onnxkit.simplify(
            files.source,
            files.target,
            input_shapes=_shape_flags(shapes, "overwrite_input_shapes"),
            keep_dynamic=keep_dynamic,
            check=check_n,
            inputs=inputs,
            # As in onnxsim, input_data wins; test_input_shapes shape the random rest.
            test_shapes=_shape_flags(
                {k: v for k, v in (test_input_shapes or {}).items() if k not in (input_data or {})}, "test_input_shapes"
            ),
            seed=seed,
            rtol=rtol,
            atol=atol,
            verify_each_pass=verify_each_pass,
            skip=sorted(set(skip)),
            exclude_nodes=list(exclude_nodes or []),
            fold=not skip_constant_folding,
            fold_limit=fold_limit,
            freeze_initializers=freeze_initializers,
            external=files.external,
        )
        result = _read_result(files.target, output)
    _warn(report["warnings"])
    return result, True


def compare(
    a: ModelLike,
    b: ModelLike,
    *,
    inputs: Optional[Mapping[str, Any]] = None,
    shapes: Optional[Mapping[str, Sequence[int]]] = None,
    dims: Optional[Mapping[str, int]] = None,
    val_ranges: Optional[Mapping[Optional[str], Tuple[float, float]]] = None,
    seed: int = 0,
    iterations: int = 1,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    stat: str = "elemwise",
    quantile: float = 0.99,
    top: Optional[int] = None,
    fail_fast: bool = False,
    local: bool = True,
    threads: int = 0,
) -> Dict[str, Any]:
    """`onnxkit compare A B --json` as a dict (schema: docs/compare-json.md):
    both models run on the same inputs with every intermediate tensor kept,
    tensors paired by name, position or graph structure, the first tensor of
    A out of tolerance (result["first_divergent"], an index into
    result["tensors"]), every node of B ranked by its local error (B's node
    re-run on A's values of its inputs) and the culprit (result["culprit"],
    None when no node is itself wrong). result["passed"] says whether every
    output is within tolerance (the command's exit code).

    inputs {name: array} feeds those inputs (as --input); the rest are random
    (seeds seed, seed+1, ... for iterations samples), symbolic dims taken
    from shapes {name: dims} (as --shape) and dims {symbol: n} (as --dim,
    every input declaring the symbol), else as 1; val_ranges {name: (lo, hi)}
    (as --val-range; the name None: every input) bounds random values,
    integers inclusive. rtol, atol, stat
    ('elemwise', 'max', 'mean', 'median' or 'quantile') and quantile are the
    tolerance, as the flags take them. top keeps the first top ranked nodes
    in result["nodes"] (None: all, as --json prints them); fail_fast stops at
    the first divergent tensor; local=False skips the local errors (no
    culprit, as --no-local). A bad model or a model B that cannot take A's
    inputs raises onnxkit.Error; bad options raise onnxkit.InvalidArgument."""
    if top is not None and top < 0:
        raise InvalidArgument(f"top must not be negative (got {top})")
    with tempfile.TemporaryDirectory(prefix="onnxkit-") as folder:
        flags, files = [], {}
        for k, (name, value) in enumerate((inputs or {}).items()):
            import numpy as np

            path = os.path.join(folder, f"input_{k}.npy")
            np.save(path, np.asarray(value), allow_pickle=False)
            flags.append(f"{name}={path}")
            files[path] = f"inputs[{name!r}]"
        try:
            report = _onnxkit.compare(
                _model_source(a),
                _model_source(b),
                label=_IN_MEMORY,
                inputs=flags,
                shapes=_shape_flags(shapes, "shapes"),
                dims=[f"{symbol}={n}" for symbol, n in (dims or {}).items()],
                val_ranges=[f"{'' if name is None else name + ':'}{lo!r},{hi!r}" for name, (lo, hi) in (val_ranges or {}).items()],
                seed=seed,
                iterations=iterations,
                rtol=rtol,
                atol=atol,
                stat=stat,
                quantile=quantile,
                fail_fast=fail_fast,
                local=local,
                threads=threads,
            )
        except Error as e:
            # Messages name the array the caller gave, not its temporary file.
            message = str(e)
            for path, name in files.items():
                message = message.replace(path, name)
            if message == str(e):
                raise
            raise type(e)(message) from None
    result = json.loads(report)
    if top is not None:
        result["nodes"] = result["nodes"][:top]
    return result
