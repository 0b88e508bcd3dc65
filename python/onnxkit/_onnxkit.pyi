"""Types of onnxkit's extension module (python/src/*.cpp). Private: the
package's Python files are its only callers."""

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

class Error(Exception):
    """Base of onnxkit's exceptions: str(e) is the line the CLI prints after 'onnxkit COMMAND: error: '."""

class ModelError(Error):
    """The model could not be loaded, or no session could be built from it."""

class RunError(Error):
    """InferenceSession.run failed: a feed disagrees with the model, or a kernel refused its inputs."""

class InvalidArgument(Error, ValueError):
    """The call's own arguments are wrong before the model is involved."""

# (name, ORT type, ORT shape, has_default)
_Described = Tuple[str, str, List[Union[int, str, None]], bool]

class Session:
    def __init__(self, model: Union[str, bytes], threads: int = 0, optimize: bool = True) -> None: ...
    def inputs(self) -> List[_Described]: ...
    def outputs(self) -> List[_Described]: ...
    def metadata(self) -> Dict[str, Any]: ...
    @property
    def threads(self) -> int: ...
    def run(self, output_names: Optional[Sequence[str]], feeds: Dict[str, Any]) -> List[Any]: ...

def info(model: Union[str, bytes], nodes: bool = False) -> str: ...
def check(model: Union[str, bytes], full: bool = False) -> Tuple[List[Tuple[str, str, int, str, str]], List[str]]: ...
def infer_shapes(input: str, output: str, external: str = "keep") -> Dict[str, Any]: ...
def edit(input: str, output: str, operations: List[Any], external: str = "keep") -> Dict[str, Any]: ...
def simplify(
    input: str,
    output: str,
    *,
    input_shapes: List[str] = ...,
    keep_dynamic: bool = False,
    check: int = 1,
    inputs: List[str] = ...,
    test_shapes: List[str] = ...,
    seed: int = 0,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    verify_each_pass: bool = False,
    skip: List[str] = ...,
    exclude_nodes: List[str] = ...,
    fold: bool = True,
    fold_limit: int = ...,
    remove_unused_inputs: bool = False,
    freeze_initializers: bool = False,
    external: str = "keep",
) -> Dict[str, Any]: ...
def compare(
    a: Union[str, bytes],
    b: Union[str, bytes],
    *,
    label: str = "<model>",
    inputs: List[str] = ...,
    shapes: List[str] = ...,
    dims: List[str] = ...,
    val_ranges: List[str] = ...,
    seed: int = 0,
    iterations: int = 1,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    stat: str = "elemwise",
    quantile: float = 0.99,
    fail_fast: bool = False,
    local: bool = True,
    threads: int = 0,
) -> str:
    """tools::compare_models, as `onnxkit compare A B` calls it, on paths or
    models' bytes (named `label` in the report); inputs as --input takes
    them (NAME=FILE or NAME=VALUE), shapes as --shape (NAME:D0,D1,...),
    dims as --dim (SYMBOL=N), val_ranges as --val-range (NAME:LO,HI). Returns the
    `compare --json` object as JSON text; the GIL is released while the
    models run."""

def passes() -> List[Tuple[str, str]]: ...
def edit_operations() -> List[Tuple[str, str, str]]: ...
