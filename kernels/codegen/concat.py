"""Cat groups: a concatenation, each input's producers computed in place of their copy.

Each input is a segment of the output along the cat dim. The segment is a pointwise loop
nest over the input's shape (its pointwise producers inlined, as in a pointwise group)
storing into the output at the segment's offset, with the output's strides. Knobs per
segment: THREADS, VEC, BLOCK (see :mod:`kernels.codegen.pointwise`).
"""
from __future__ import annotations

from kernels.codegen.affine import contiguous_strides
from kernels.codegen.family import Ctx, GroupCode
from kernels.codegen.pointwise import emit_pointwise


class CatFamily:
    name = "cat"

    def emit(self, group, ctx: Ctx) -> GroupCode:
        node = ctx.plan.nodes[group.anchors[0]]
        values = ctx.graph.values()
        d = node.attrs["dim"]
        out_strides = contiguous_strides(node.shape)
        parts, start = [], 0
        code = GroupCode("")
        for k, inp in enumerate(node.args):
            shape = values[inp].shape
            seg = emit_pointwise(ctx, shape, [(inp, node.name, start * out_strides[d], out_strides)],
                                 knob_prefix=f"S{k}_")
            parts.append(f"/* segment {k}: {inp} -> [{start}:{start + shape[d]}] along dim {d} */\n{seg.body}")
            code.params += seg.params
            code.helpers |= seg.helpers
            code.flops += seg.flops
            code.bytes += seg.bytes
            start += shape[d]
        code.body = "\n".join(parts)
        code.summary = {"family": "cat", "shape": list(node.shape), "dim": d, "inputs": len(node.args)}
        return code


FAMILY = CatFamily()
