"""What an engineer would use instead. Each factory returns the call that is timed; every
call writes the preallocated output (allocation would otherwise dominate the time)."""
import numpy as np


def numpy_softmax(inputs, outputs, shape):
    x, y = inputs["x"], outputs["y"]
    m = np.empty((x.shape[0], 1), dtype=np.float32)
    s = np.empty((x.shape[0], 1), dtype=np.float32)

    def call():
        np.max(x, axis=1, keepdims=True, out=m)
        np.subtract(x, m, out=y)
        np.exp(y, out=y)
        np.sum(y, axis=1, keepdims=True, out=s)
        np.divide(y, s, out=y)
    return call


def torch_softmax(inputs, outputs, shape):
    import torch
    x, y = torch.from_numpy(inputs["x"]), torch.from_numpy(outputs["y"])
    return lambda: torch.softmax(x, 1, out=y)


def torch_compiled_softmax(inputs, outputs, shape):
    import torch
    x, y = torch.from_numpy(inputs["x"]), torch.from_numpy(outputs["y"])
    fn = torch.compile(lambda t: torch.softmax(t, 1), dynamic=False)
    fn(x)
    return lambda: y.copy_(fn(x))
