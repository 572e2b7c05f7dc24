"""What an engineer would use instead. Each factory returns the call that is timed; every
call writes the preallocated output (allocation would otherwise dominate the time)."""
import numpy as np


def numpy_rmsnorm(inputs, outputs, shape):
    x, w, y, eps = inputs["x"], inputs["w"], outputs["y"], float(inputs["eps"])
    rows, cols = x.shape
    s = np.empty(rows, dtype=np.float32)

    def call():
        np.einsum("ij,ij->i", x, x, out=s)        # row sums of squares, no temporary
        np.multiply(s, np.float32(1.0 / cols), out=s)
        np.add(s, np.float32(eps), out=s)
        np.sqrt(s, out=s)
        np.reciprocal(s, out=s)
        np.multiply(x, s[:, None], out=y)
        np.multiply(y, w, out=y)
    return call


def torch_rmsnorm(inputs, outputs, shape):
    """Eager torch with out= buffers. torch.nn.functional.rms_norm (2.x) is a composite on
    CPU that is several times slower than this and cannot write into ``y``."""
    import torch
    x, w = torch.from_numpy(inputs["x"]), torch.from_numpy(inputs["w"])
    y, eps = torch.from_numpy(outputs["y"]), float(inputs["eps"])
    cols = x.shape[1]
    s = torch.empty((x.shape[0], 1), dtype=torch.float32)

    def call():
        torch.linalg.vector_norm(x, 2, dim=1, keepdim=True, out=s)
        s.square_().mul_(1.0 / cols).add_(eps).rsqrt_()
        torch.mul(x, s, out=y)
        y.mul_(w)
    return call


def torch_compiled_rmsnorm(inputs, outputs, shape):
    import torch
    x, w = torch.from_numpy(inputs["x"]), torch.from_numpy(inputs["w"])
    y, eps = torch.from_numpy(outputs["y"]), float(inputs["eps"])
    cols = x.shape[1]
    fn = torch.compile(lambda t: torch.nn.functional.rms_norm(t, (cols,), w, eps), dynamic=False)
    fn(x)
    return lambda: y.copy_(fn(x))


# --------------------------------------------------------------------------- GPU (CuPy arrays in)
# Factories for the "cuda" target receive CuPy arrays and run on CuPy's current stream (the
# sandbox child's own), so the child's CUDA events time them.

def cupy_rmsnorm(inputs, outputs, shape):
    """CuPy elementwise ops and a row mean into preallocated buffers (y doubles as scratch)."""
    import cupy as cp
    x, w, y = inputs["x"], inputs["w"], outputs["y"]
    eps = np.float32(inputs["eps"])
    s = cp.empty((x.shape[0], 1), dtype=cp.float32)

    def call():
        cp.multiply(x, x, out=y)
        cp.mean(y, axis=1, keepdims=True, out=s)
        cp.add(s, eps, out=s)
        cp.sqrt(s, out=s)
        cp.divide(x, s, out=y)
        cp.multiply(y, w, out=y)
    return call


def torch_cuda_rmsnorm(inputs, outputs, shape):
    """F.rms_norm on the GPU (CuPy's stream), copied into the preallocated output."""
    import cupy as cp
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("this torch build has no CUDA support")
    x = torch.as_tensor(inputs["x"], device="cuda")   # zero-copy through __cuda_array_interface__
    w = torch.as_tensor(inputs["w"], device="cuda")
    y = torch.as_tensor(outputs["y"], device="cuda")
    eps, cols = float(inputs["eps"]), x.shape[1]
    stream = torch.cuda.ExternalStream(cp.cuda.get_current_stream().ptr)

    def call():
        with torch.cuda.stream(stream):
            y.copy_(torch.nn.functional.rms_norm(x, (cols,), w, eps))
    return call
