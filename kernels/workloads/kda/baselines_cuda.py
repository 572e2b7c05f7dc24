"""KDA on the GPU: flash-linear-attention's ``chunk_kda`` (GPU hosts with the ``fla-core``
package; its Triton kernels compile on first use, in the factory, not timed).

How our convention maps onto ``fla.ops.kda.chunk_kda(q, k, v, g, beta, scale=None,
initial_state=None, output_final_state=False, use_qk_l2norm_in_kernel=False,
use_gate_in_kernel=False, use_beta_sigmoid_in_kernel=False, ..., cu_seqlens=None)``
(checked against fla-core 0.5.2's ``fla/ops/kda/chunk.py`` and its ``naive_recurrent_kda``):

- layouts: ours are q, k, g [B, T, H, K], v, o [B, T, H, V], beta [B, T, H], which is fla's
  default sequence-first layout with HV == H (no grouped value heads);
- gate: our g is the per-channel log decay applied as S = diag(exp(g_t)) S before the
  delta update, which is fla's ``g`` "in log space" with ``use_gate_in_kernel=False`` (no
  A_log / dt_bias gate inside the kernel, no safe_gate clamp);
- beta: ours is already in (0, 1) (a sigmoid taken by make_inputs), so
  ``use_beta_sigmoid_in_kernel=False``;
- q and k: make_inputs L2-normalises them, so ``use_qk_l2norm_in_kernel=False``;
- scale: passed explicitly (ours is K^-0.5, which is also fla's default);
- o_t = scale S_t^T q_t from the state after step t's update: fla's recurrence is the same
  (its naive reference multiplies q by scale and reads the updated state);
- no initial state, no final state (``output_final_state=False``), equal-length sequences.

The call returns a new tensor; it is copied into the harness's preallocated ``o`` (a
B*T*H*V*4-byte device copy, a few percent of the call at the serving shapes). The bf16
variant converts the inputs once, outside the timed call: what a bf16 model serves.
"""


def _fla_call(inputs, outputs, dtype):
    import cupy as cp
    import torch
    from fla.ops.kda import chunk_kda
    if not torch.cuda.is_available():
        raise RuntimeError("this torch build has no CUDA support")
    q, k, v, g, beta = (torch.as_tensor(inputs[n], device="cuda").to(dtype) for n in ("q", "k", "v", "g", "beta"))
    o = torch.as_tensor(outputs["o"], device="cuda")
    scale = float(inputs["scale"])
    stream = torch.cuda.ExternalStream(cp.cuda.get_current_stream().ptr)

    def call():
        with torch.cuda.stream(stream):
            out, _ = chunk_kda(q, k, v, g, beta, scale=scale, initial_state=None, output_final_state=False,
                               use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False)
            o.copy_(out)
    with torch.cuda.stream(stream):
        call()        # Triton compiles its kernels here, not in a timed call
    return call


def fla_chunk_kda(inputs, outputs, shape):
    """fla's chunk_kda on our float32 tensors."""
    import torch
    return _fla_call(inputs, outputs, torch.float32)


def fla_chunk_kda_bf16(inputs, outputs, shape):
    """fla's chunk_kda on bf16 copies of the inputs (converted once, not timed), o in float32."""
    import torch
    return _fla_call(inputs, outputs, torch.bfloat16)
