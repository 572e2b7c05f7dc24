"""A NumPy stand-in for CuPy, for the GPU path's tests on hosts without a GPU.

Put on the sandbox processes' import path (``INT21_SANDBOX_PYTHONPATH``) it lets the real
evaluator drive the real device process (``kernels.targets.cuda_runner``): guards, poisoning,
uploads and downloads, the timing loop and every verdict — with the "kernel" a Python
function chosen by the test (``fake_device/settings.json``: ``{"kernel": name, "max_threads": n}``,
see ``kernels_py`` below) instead of the cubin.
Real launches, events and faults are what the GPU campaign checks on a GPU host.
"""
import json
import os
import time
import types
from pathlib import Path

import numpy as np

_SETTINGS = Path(__file__).resolve().parents[1] / "settings.json"


def _setting(key, default):
    try:
        return json.loads(_SETTINGS.read_text()).get(key, default)
    except (OSError, ValueError):
        return default

float32, uint32, int64 = np.float32, np.uint32, np.int64


class ndarray(np.ndarray):
    def set(self, a):
        self[...] = a

    def get(self):
        return np.array(self)


def _dev(a):
    return np.asarray(a).view(ndarray)


def empty(n, dtype=np.float32):
    return np.empty(n, dtype=dtype).view(ndarray)


def zeros(shape, dtype=np.float32):
    return np.zeros(shape, dtype=dtype).view(ndarray)


def asarray(a):
    return np.array(a).view(ndarray)


def asnumpy(a):
    return np.array(a)


all, stack, max, sum, exp, subtract, divide, sqrt, mean = (np.all, np.stack, np.max, np.sum, np.exp, np.subtract,
                                                          np.divide, np.sqrt, np.mean)
array_equal = np.array_equal
matmul = np.matmul


def kernels_py():
    def softmax(x, y, rows, cols):
        e = np.exp(x.reshape(rows, cols) - x.reshape(rows, cols).max(axis=1, keepdims=True))
        y.reshape(rows, cols)[...] = e / e.sum(axis=1, keepdims=True)

    cache = {}

    def caches(x, y, rows, cols):
        key = (x.__array_interface__["data"][0], int(rows))
        if key not in cache:
            softmax(x, y, rows, cols)
            cache[key] = y.copy()
        y[...] = cache[key]

    def scribbles(x, y, rows, cols):
        softmax(x, y, rows, cols)
        x[0] += 1.0

    def past_the_end(x, y, rows, cols):
        softmax(x, y, rows, cols)
        y.base.view(np.float32)[-1] = 0.0

    calls = {"n": 0}

    def drifts(x, y, rows, cols):
        calls["n"] += 1
        softmax(x, y, rows, cols)
        if calls["n"] > 95:   # more calls than the correctness phase makes (its own process counts from 0)
            y[0] = 0.5

    return {"softmax": softmax, "caches": caches, "scribbles": scribbles, "past_the_end": past_the_end,
            "nothing": lambda x, y, rows, cols: None, "drifts": drifts}


class Stream:
    def __init__(self, **kw):
        self.ptr = 0

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def synchronize(self):
        pass


class Event:
    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass


class Function:
    max_dynamic_shared_size_bytes, num_regs = 48 * 1024, 32

    def __init__(self):
        self.max_threads_per_block = int(_setting("max_threads", 1024))
        self.body = kernels_py()[_setting("kernel", "softmax")]

    def __call__(self, grid, block, args, shared_mem=0):
        assert isinstance(args[2], np.int64) and isinstance(args[3], np.int64)
        self.body(*args)


class RawModule:
    def __init__(self, path):
        assert os.path.exists(path), path
        self.path = path

    def get_function(self, name):
        assert name == "kernel"
        return Function()


class Device:
    def __init__(self, i=0):
        self.id = i

    def use(self):
        pass


_stream = Stream()
cuda = types.SimpleNamespace(
    Stream=Stream, Event=Event, Device=Device, get_current_stream=lambda: _stream,
    get_elapsed_time=lambda a, b: (b.t - a.t) * 1e3,
    is_available=lambda: True,
    runtime=types.SimpleNamespace(getDeviceProperties=lambda i: {"name": b"Fake H200", "major": 9, "minor": 0,
                                                                 "l2CacheSize": 1 << 20},
                                  free=lambda p: None, getDeviceCount=lambda: 1))
