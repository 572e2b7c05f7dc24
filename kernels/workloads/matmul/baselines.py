"""What an engineer would use instead. Each factory returns the call that is timed; every
call writes the preallocated output (allocation would otherwise dominate the time)."""
import numpy as np


def numpy_matmul(inputs, outputs, shape):
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    return lambda: np.matmul(a, b, out=c)


def torch_matmul(inputs, outputs, shape):
    import torch
    a, b, c = (torch.from_numpy(x) for x in (inputs["a"], inputs["b"], outputs["c"]))
    return lambda: torch.matmul(a, b, out=c)


def torch_compiled_matmul(inputs, outputs, shape):
    import torch
    a, b, c = (torch.from_numpy(x) for x in (inputs["a"], inputs["b"], outputs["c"]))
    fn = torch.compile(lambda x, y: torch.matmul(x, y), dynamic=False)
    fn(a, b)
    return lambda: c.copy_(fn(a, b))


# GPU hosts only: factories receive CuPy arrays; calls run on CuPy's current stream (the
# sandbox child's own), so the child's CUDA events time them.

def cupy_matmul(inputs, outputs, shape):
    """cuBLAS sgemm through CuPy, into the preallocated output."""
    import cupy as cp
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    return lambda: cp.matmul(a, b, out=c)


def torch_cuda_matmul(inputs, outputs, shape):
    """torch.matmul on the GPU (cuBLAS; TF32 off, so it is a float32 GEMM) on CuPy's stream."""
    import cupy as cp
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("this torch build has no CUDA support")
    torch.backends.cuda.matmul.allow_tf32 = False
    a, b, c = (torch.as_tensor(x, device="cuda") for x in (inputs["a"], inputs["b"], outputs["c"]))
    stream = torch.cuda.ExternalStream(cp.cuda.get_current_stream().ptr)

    def call():
        with torch.cuda.stream(stream):
            torch.matmul(a, b, out=c)
    return call


def torch_cuda_matmul_tf32(inputs, outputs, shape):
    """torch.matmul on the GPU with TF32 on (cuBLAS's TF32 tensor-core GEMM): the yardstick for
    a TF32 kernel, whose ~1e-3 error only a goal with a looser tolerance accepts."""
    import cupy as cp
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("this torch build has no CUDA support")
    a, b, c = (torch.as_tensor(x, device="cuda") for x in (inputs["a"], inputs["b"], outputs["c"]))
    stream = torch.cuda.ExternalStream(cp.cuda.get_current_stream().ptr)

    def call():
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            with torch.cuda.stream(stream):
                torch.matmul(a, b, out=c)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False
    return call
