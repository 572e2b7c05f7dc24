"""What an engineer would use instead. Each factory returns the call that is timed; every
call writes the preallocated output (allocation would otherwise dominate the time)."""
import numpy as np


def numpy_layernorm(inputs, outputs, shape):
    x, g, b, y = inputs["x"], inputs["gamma"], inputs["beta"], outputs["y"]
    eps = float(inputs["eps"])
    rows, cols = x.shape
    m = np.empty((rows, 1), dtype=np.float32)
    s = np.empty(rows, dtype=np.float32)

    def call():
        np.mean(x, axis=1, keepdims=True, out=m)
        np.subtract(x, m, out=y)
        np.einsum("ij,ij->i", y, y, out=s)        # row sums of squared deviations
        np.multiply(s, np.float32(1.0 / cols), out=s)
        np.add(s, np.float32(eps), out=s)
        np.sqrt(s, out=s)
        np.reciprocal(s, out=s)
        np.multiply(y, s[:, None], out=y)
        np.multiply(y, g, out=y)
        np.add(y, b, out=y)
    return call


def torch_layernorm(inputs, outputs, shape):
    """aten.native_layer_norm.out writes y directly (F.layer_norm would allocate, then copy)."""
    import torch
    x = torch.from_numpy(inputs["x"])
    g, b = torch.from_numpy(inputs["gamma"]), torch.from_numpy(inputs["beta"])
    y, eps = torch.from_numpy(outputs["y"]), float(inputs["eps"])
    rows, cols = x.shape
    mean, rstd = torch.empty((rows, 1)), torch.empty((rows, 1))
    op = torch.ops.aten.native_layer_norm.out
    return lambda: op(x, [cols], g, b, eps, out0=y, out1=mean, out2=rstd)


def torch_compiled_layernorm(inputs, outputs, shape):
    import torch
    x = torch.from_numpy(inputs["x"])
    g, b = torch.from_numpy(inputs["gamma"]), torch.from_numpy(inputs["beta"])
    y, eps = torch.from_numpy(outputs["y"]), float(inputs["eps"])
    cols = x.shape[1]
    fn = torch.compile(lambda t: torch.nn.functional.layer_norm(t, (cols,), g, b, eps), dynamic=False)
    fn(x)
    return lambda: y.copy_(fn(x))


# --------------------------------------------------------------------------- GPU (CuPy arrays in)
# Factories for the "cuda" target receive CuPy arrays and run on CuPy's current stream (the
# sandbox child's own), so the child's CUDA events time them.

def cupy_layernorm(inputs, outputs, shape):
    """CuPy row mean and variance, then elementwise ops into preallocated buffers."""
    import cupy as cp
    x, g, b, y = inputs["x"], inputs["gamma"], inputs["beta"], outputs["y"]
    eps = np.float32(inputs["eps"])
    m = cp.empty((x.shape[0], 1), dtype=cp.float32)
    v = cp.empty((x.shape[0], 1), dtype=cp.float32)

    def call():
        cp.mean(x, axis=1, keepdims=True, out=m)
        cp.var(x, axis=1, keepdims=True, out=v)
        cp.add(v, eps, out=v)
        cp.sqrt(v, out=v)
        cp.subtract(x, m, out=y)
        cp.divide(y, v, out=y)
        cp.multiply(y, g, out=y)
        cp.add(y, b, out=y)
    return call


def torch_cuda_layernorm(inputs, outputs, shape):
    """aten.native_layer_norm.out on the GPU (CuPy's stream), writing y in place."""
    import cupy as cp
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("this torch build has no CUDA support")
    x = torch.as_tensor(inputs["x"], device="cuda")   # zero-copy through __cuda_array_interface__
    g = torch.as_tensor(inputs["gamma"], device="cuda")
    b = torch.as_tensor(inputs["beta"], device="cuda")
    y = torch.as_tensor(outputs["y"], device="cuda")
    eps, (rows, cols) = float(inputs["eps"]), x.shape
    mean = torch.empty((rows, 1), device="cuda")
    rstd = torch.empty((rows, 1), device="cuda")
    stream = torch.cuda.ExternalStream(cp.cuda.get_current_stream().ptr)
    op = torch.ops.aten.native_layer_norm.out

    def call():
        with torch.cuda.stream(stream):
            op(x, [cols], g, b, eps, out0=y, out1=mean, out2=rstd)
    return call
