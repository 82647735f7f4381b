"""CuPy loading, array-kind dispatch, kernel compilation and launches (no CuPy at import)."""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from typing import Any

from ordcore.errors import GpuError

__all__ = [
    "is_available",
    "is_device_array",
    "cupy",
    "Boundary",
    "enter",
    "kernel_sources",
    "kernel_names",
    "compile_ptx",
    "get_kernel",
    "launch",
    "NVRTC_OPTIONS",
]

# Options for every kernel module: NVRTC defaults otherwise (CuPy adds -arch itself).
NVRTC_OPTIONS: tuple[str, ...] = ("--std=c++17",)

_INSTALL_HINT = "pip install 'ordcore[gpu]' (installs cupy-cuda12x)"


def is_device_array(x: object) -> bool:
    """``True`` when ``x`` lives on a CUDA device (CuPy array, CUDA torch tensor, or any
    object with ``__cuda_array_interface__``). Never imports CuPy or torch."""
    mod = type(x).__module__ or ""  # None for some dynamically built classes
    if mod == "numpy" or mod == "builtins":  # the common cases first: NumPy, a tuple or list
        return False
    if mod.startswith("cupy"):
        return True
    if mod.startswith("torch"):
        return bool(getattr(x, "is_cuda", False))
    return hasattr(x, "__cuda_array_interface__")


def cupy() -> Any:
    """The ``cupy`` module, or :class:`~ordcore.GpuError` saying how to install it."""
    try:
        return importlib.import_module("cupy")
    except ImportError as exc:
        raise GpuError(
            f"a CUDA array was given but CuPy cannot be imported ({exc}); {_INSTALL_HINT}"
        ) from exc


def is_available() -> bool:
    """``True`` when CuPy imports and at least one CUDA device is usable."""
    try:
        cp = importlib.import_module("cupy")
        return int(cp.cuda.runtime.getDeviceCount()) > 0
    except Exception:  # noqa: BLE001 - ImportError, CUDARuntimeError (no driver), ...
        return False


class Boundary:
    """One GPU call's view of its input kind: CuPy arrays pass through; a CUDA torch tensor
    is shared with CuPy through DLPack (no copy) and results go back the same way; any
    other ``__cuda_array_interface__`` object is wrapped by ``cupy.asarray`` (no copy)
    and results come back as CuPy arrays."""

    def __init__(self, x: object) -> None:
        self.cp = cupy()
        mod = type(x).__module__
        self.torch: Any = None
        self.bf16 = False  # a torch bfloat16 tensor travels as int16 words
        if mod.startswith("torch"):
            self.torch = importlib.import_module("torch")
            self.device_id = int(x.device.index if x.device.index is not None else 0)  # type: ignore[attr-defined]
            self.stream = self.cp.cuda.ExternalStream(
                int(self.torch.cuda.current_stream(x.device).cuda_stream),  # type: ignore[attr-defined]
                self.device_id,
            )
        else:
            arr = x if mod.startswith("cupy") else None
            dev = getattr(arr, "device", None)
            self.device_id = int(dev.id) if dev is not None else int(self.cp.cuda.Device().id)
            self.stream = None

    def to_cupy(self, x: object) -> Any:
        """The input as a CuPy array on this call's device (no copy)."""
        mod = type(x).__module__
        if mod.startswith("cupy") and isinstance(x, self.cp.ndarray):
            return x
        if mod.startswith("torch"):
            if not getattr(x, "is_cuda", False):
                raise GpuError("a CPU torch tensor was mixed with CUDA arrays in one call")
            t: Any = x
            if t.dtype == self.torch.bfloat16:
                self.bf16 = True
                return self.cp.from_dlpack(t.detach().view(self.torch.int16))
            return self.cp.from_dlpack(t.detach())
        try:
            return self.cp.asarray(x)
        except Exception as exc:  # noqa: BLE001
            raise GpuError(f"cannot view {type(x).__name__} as a CuPy array: {exc}") from exc

    def back(self, y: Any) -> Any:
        """A result in the input's kind (a torch tensor for torch input)."""
        if self.torch is not None and isinstance(y, self.cp.ndarray):
            t = self.torch.from_dlpack(y)
            if self.bf16 and y.dtype == self.cp.int16:
                t = t.view(self.torch.bfloat16)
            return t
        return y

    @contextmanager
    def active(self) -> Iterator[None]:
        """Make the input's device (and torch's current stream) current."""
        with self.cp.cuda.Device(self.device_id):
            if self.stream is None:
                yield
            else:
                with self.stream:
                    yield


def enter(x: object) -> Boundary:
    """Start a GPU call on ``x`` (raises GpuError without CuPy)."""
    return Boundary(x)


@functools.cache
def kernel_sources() -> dict[str, str]:
    """``{module name: CUDA source}`` of every ``.cu`` file shipped in ordcore/gpu/kernels."""
    root = resources.files("ordcore.gpu").joinpath("kernels")
    out = {}
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".cu"):
            out[entry.name[: -len(".cu")]] = entry.read_text(encoding="utf-8")
    return out


def kernel_names() -> dict[str, list[str]]:
    """``{module name: [kernel name expression, ...]}``: every instantiation a wrapper may
    launch (the NVRTC compile check compiles all of them)."""
    from ordcore.gpu import _kernels

    return _kernels.all_names()


def compile_ptx(module: str, names: Sequence[str] | None = None, arch: str = "compute_90") -> str:
    """Compile ``module``'s source with NVRTC (no GPU or driver needed) for ``arch``,
    instantiating ``names`` (default: every name in :func:`kernel_names`); return the PTX.

    Raises
    ------
    GpuError
        NVRTC is missing or the compilation failed (the message carries NVRTC's log).
    """
    try:
        nvrtc = importlib.import_module("cupy_backends.cuda.libs.nvrtc")
    except ImportError as exc:
        raise GpuError(f"NVRTC bindings are unavailable ({exc}); {_INSTALL_HINT}") from exc
    src = kernel_sources()[module]
    if names is None:
        names = kernel_names()[module]
    try:
        prog = nvrtc.createProgram(src, f"{module}.cu", [], [])
    except Exception as exc:  # noqa: BLE001 - libnvrtc not found, ...
        raise GpuError(f"NVRTC could not start ({exc}); {_INSTALL_HINT}") from exc
    try:
        for name in names:
            nvrtc.addNameExpression(prog, name)
        try:
            nvrtc.compileProgram(prog, [f"-arch={arch}", *NVRTC_OPTIONS])
        except Exception as exc:  # noqa: BLE001
            log = nvrtc.getProgramLog(prog)
            raise GpuError(f"{module}.cu failed to compile for {arch}: {exc}\n{log}") from exc
        for name in names:
            nvrtc.getLoweredName(prog, name)
        ptx = nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)
    return ptx.decode() if isinstance(ptx, bytes) else str(ptx)


_lock = threading.Lock()
_modules: dict[tuple[str, int], Any] = {}
_kernels: dict[tuple[str, str, int], Any] = {}


def get_kernel(module: str, name: str, shared_bytes: int = 0) -> Any:
    """The compiled kernel ``name`` (a template name expression) of ``module`` for the
    current device. The first call per device compiles the whole module with every name
    of :func:`kernel_names` in one NVRTC run (CuPy caches the binary on disk);
    ``shared_bytes`` of dynamic shared memory is opted in when above the 48 KiB default.

    Raises
    ------
    GpuError
        compilation or loading failed (with NVRTC's log / the CUDA error text).
    """
    cp = cupy()
    dev = int(cp.cuda.Device().id)
    key = (module, name, dev)
    with _lock:
        kern = _kernels.get(key)
        if kern is None:
            try:
                mod = _modules.get((module, dev))
                if mod is None:
                    names = kernel_names()[module]
                    if name not in names:
                        names = [*names, name]
                    mod = cp.RawModule(
                        code=kernel_sources()[module], options=NVRTC_OPTIONS, name_expressions=names
                    )
                    _modules[(module, dev)] = mod
                kern = mod.get_function(name)
                if shared_bytes > 48 * 1024:
                    kern.max_dynamic_shared_size_bytes = shared_bytes
            except Exception as exc:  # noqa: BLE001 - CompileException, CUDADriverError
                raise GpuError(f"kernel {name} of {module}.cu could not be built: {exc}") from exc
            _kernels[key] = kern
        elif shared_bytes > 48 * 1024 and kern.max_dynamic_shared_size_bytes < shared_bytes:
            kern.max_dynamic_shared_size_bytes = shared_bytes
    return kern


def launch(
    kern: Any, grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...], shared_mem: int = 0
) -> None:
    """Launch ``kern`` on the current stream; CUDA errors become :class:`GpuError`."""
    try:
        kern(grid, block, args, shared_mem=shared_mem)
    except Exception as exc:  # noqa: BLE001 - CUDADriverError and friends
        raise GpuError(f"kernel {getattr(kern, 'name', kern)} failed to launch: {exc}") from exc


def grid_for(n: int, block: int, cap: int = 65535 * 32) -> int:
    """Blocks for a grid-stride loop over ``n`` items."""
    return max(1, min((n + block - 1) // block, cap))


def check_bad_row(cp: Any, bad: Any) -> int | None:
    """Read a kernel's ``bad_row`` flag (one 8-byte device-to-host read, which syncs the
    stream); ``None`` when no row was flagged."""
    v = int(bad.get()[0])
    return None if v == 0xFFFFFFFFFFFFFFFF else v


Thunk = Callable[[], Any]
