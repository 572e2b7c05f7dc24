"""What a family's code generator hands back, and the context it works in."""
from __future__ import annotations

import functools

from dataclasses import dataclass, field

from kernels.codegen.expr import Trees
from kernels.codegen.partition import Group, Partition, Plan
from kernels.spec import Param


@dataclass
class GroupCode:
    body: str                                   # the group function's body (C statements)
    functions: str = ""                         # static helpers it calls, emitted before it
    params: list = field(default_factory=list)  # Param
    constraints: list = field(default_factory=list)
    helpers: set = field(default_factory=set)   # cmath helper names
    scratch: str = "0"                          # floats of scratch it needs (C constant expression)
    flops: float = 0.0
    bytes: float = 0.0
    summary: dict = field(default_factory=dict)  # signature: family, ops, shapes, matching built-in


@functools.lru_cache(maxsize=1)
def host_vector_registers() -> int:
    """The vector registers a micro-kernel's tile may plan for on this host: 32 with AVX-512F,
    else 16 (AVX2's ymm). Read from /proc/cpuinfo, as the host's cores are read at generation."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return 32 if "avx512f" in line.split() else 16
    except OSError:
        pass
    return 16


class Ctx:
    """One group's view of the program: buffer names, trees, knob names, the host's cores,
    the form its deep Linears start in (``gemm_form``: matmul's ALGO 1, packed, or 3, dot
    tiles) and its fastest matrix-vector pass (``gemv_rows``).

    ``read(v)``/``write(v)`` return the C name of ``v``'s buffer inside the group function
    and record it in the function's signature (``uses``, in first-use order)."""

    def __init__(self, part: Partition, plan: Plan, names: dict, cores: int, group: Group, gemm_form: int = 3,
                 gemv_rows: int = 4):
        self.part, self.plan, self.graph = part, plan, part.graph
        self.names, self.cores, self.group, self.gemm_form, self.gemv_rows = names, cores, group, gemm_form, gemv_rows
        self.uses: dict[str, str] = {}   # value -> "r" | "w"

    def read(self, value: str) -> str:
        self.uses.setdefault(value, "r")
        return self.names[value]

    def write(self, value: str) -> str:
        self.uses[value] = "w"
        return self.names[value]

    def knob(self, name: str) -> str:
        return f"G{self.group.id}_{name}"

    def trees(self, dom, *, special=None, inline=None, claimed=()) -> Trees:
        members = set(self.group.members)
        return Trees(self.graph, dom, inline=inline or (lambda n: n in members), buffer=self.read, special=special,
                     claimed=claimed)

    def threads_param(self, work: float, help_: str = "OpenMP threads of this group") -> Param:
        """THREADS for a group doing ``work`` elementary operations: all cores unless the
        work is too small to pay for waking them (~16K operations per thread)."""
        choices = tuple(sorted({1, 2, 4, self.cores} & set(range(1, max(self.cores, 1) + 1))) or (1,))
        default = self.cores if work >= 16384 * self.cores else 1
        return Param(self.knob("THREADS"), "choice", choices=choices, default=default, help=help_)


def vec_param(ctx: Ctx, default: int = 16) -> Param:
    return Param(ctx.knob("VEC"), "choice", choices=(0, 8, 16), default=default,
                 help="0: let GCC pick; 8/16: simdlen of the vectorised loops (AVX2 / AVX-512 lanes)")


def simd(ctx: Ctx, extra: str = "") -> str:
    """The ``omp simd`` pragma of a group's inner loops, honouring its VEC knob."""
    v = ctx.knob("VEC")
    return (f"#if {v}\n#pragma omp simd simdlen({v}){extra}\n#else\n#pragma omp simd{extra}\n#endif")
