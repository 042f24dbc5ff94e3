"""A language model's output projection and its cross-entropy, in chunks of rows.

The largest activations of a language model's training step are usually not its blocks'
but its head's: the logits of every token over the vocabulary (``N x V``), the
log-probabilities the cross-entropy keeps for its backward (as large again) and, in the
backward, their gradient (as large again). A GPT at sequence 512, batch 8 and a
32768-word head holds 1.5 GiB there in fp32, more than all its blocks together; every
checkpointing scheme of the blocks leaves that floor where it is.

:func:`linear_cross_entropy` computes ``cross_entropy(linear(h, W, b), target)`` without
ever holding the whole logits: it runs the rows in chunks, and since the loss ends the
step, each chunk's gradient with respect to its logits is known as soon as the chunk's
loss is (``softmax - one_hot``, scaled), so the chunk's contributions to the gradients of
``h``, ``W`` and ``b`` are computed right there and the chunk's logits freed. The backward
only scales what the forward computed by the loss's incoming gradient. Time: the same
matrix products as the unfused head (one forward, two backward), no recomputation.
Memory: one chunk of logits in float32 (:func:`chunk_rows`) and the
gradients, ``h``'s and ``W``'s, kept from the forward to the backward.

With ``scale``, the logits are multiplied by a constant first (Cohere's ``logit_scale``,
Granite's ``1 / logits_scaling``); with ``softcap``, they are then soft-capped,
``cap * tanh(logits / cap)`` (Gemma 2's ``final_logit_softcapping``), in float32 at least,
and the chunk's gradient passes back through the cap (``1 - tanh²``) and the scale before
it reaches the products.

The results equal PyTorch's within floating-point rounding (the log-softmax is computed in
float32 at least, as ``F.cross_entropy`` does under autocast; the weight's gradient is summed chunk
by chunk). Supported: ``reduction`` ``"mean"`` or ``"sum"``, an ``ignore_index``, class
indices as targets; a class weight, label smoothing or probabilities as targets are left to
PyTorch (the capture does not fuse them, :mod:`chainplan.graph.fuseloss`).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

__all__ = ["chunk_rows", "linear_cross_entropy"]

_MIN_CHUNK_BYTES = 4 << 20
_MAX_CHUNKS = 8


def chunk_rows(rows: int, width: int, vocab: int, element_size: int) -> int:
    """Rows per chunk: the largest of the rows whose float32 logits are as large as the
    hidden states ``h`` (``rows x width``), those of 4 MiB of logits, and an eighth of the
    rows. The head then holds about what a block holds, in matrix products large enough
    to run at speed (on a CPU, one thread, 512 rows of width 128 and 8192 words, timed alone:
    32-row products ran the head 25 % slower than PyTorch's,
    128-row ones as fast), in at most 8 chunks: each chunk is a dozen kernel launches on a
    GPU and one more read and write of the weight's gradient (on an H200, the GPT's
    32768-word head in 16 chunks ran its step 5.8 % slower than PyTorch's, in 8 chunks 3.5 %:
    docs/promise-bench-cuda.md, third and fourth runs)."""
    per_row = vocab * 4
    want = max(-(-rows * width * element_size // per_row), -(-_MIN_CHUNK_BYTES // per_row),
               -(-rows // _MAX_CHUNKS))
    return max(1, min(rows, want))


def linear_cross_entropy(h: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                         target: torch.Tensor, *, reduction: str = "mean",
                         ignore_index: int = -100, rows: int = 0,
                         scale: float | None = None,
                         softcap: float | None = None) -> torch.Tensor:
    """``F.cross_entropy(F.linear(h, weight, bias).reshape(-1, V), target.reshape(-1))``,
    chunked (module docstring).

    Args:
        h: the hidden states, ``(..., D)``; their leading dimensions are the rows.
        weight: the projection, ``(V, D)``.
        bias: ``(V,)`` or None.
        target: class indices, one per row (any shape with that many elements).

    Keyword Args:
        reduction: ``"mean"`` (over the rows whose target is not ``ignore_index``) or
            ``"sum"``.
        ignore_index: a target value whose row adds nothing.
        rows: rows per chunk (default: :func:`chunk_rows`).
        scale: multiply the logits by this first (default: None, no scaling).
        softcap: soft-cap the logits next, ``softcap * tanh(logits / softcap)``
            (default: None, no capping).
    """
    if reduction not in ("mean", "sum"):
        raise ValueError(f"linear_cross_entropy: reduction {reduction!r} (mean or sum)")
    if softcap is not None and not softcap > 0:
        raise ValueError(f"linear_cross_entropy: softcap {softcap!r} (a number > 0, or None)")
    flat = h.reshape(-1, h.shape[-1])
    tgt = target.reshape(-1)
    if tgt.shape[0] != flat.shape[0]:
        raise ValueError(f"linear_cross_entropy: {flat.shape[0]} rows of hidden states but "
                         f"{tgt.shape[0]} targets")
    if rows <= 0:
        rows = chunk_rows(flat.shape[0], flat.shape[1], weight.shape[0], flat.element_size())
    grads = torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (h, weight, bias))
    if not grads:
        return _loss_only(flat, weight, bias, tgt, reduction, ignore_index, rows,
                          (scale, softcap))
    out: torch.Tensor = _LinearCrossEntropy.apply(h, weight, bias, tgt, reduction,
                                                  ignore_index, rows, (scale, softcap))
    return out


#: What is applied to the logits before the loss: a constant factor, then a soft cap.
Transform = tuple[float | None, float | None]


def _logits(hc: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
            transform: Transform) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One chunk's logits, in float32 at least (a half-precision softmax loses too much),
    scaled and soft-capped when asked, and the capping's ``tanh`` (None without capping)."""
    scale, softcap = transform
    logits = F.linear(hc, weight, bias)
    logits = logits.float() if logits.element_size() < 4 else logits
    if scale is not None:
        logits = logits.mul_(scale)
    if softcap is None:
        return logits, None
    tanh = logits.div_(softcap).tanh_()  # in place: one chunk-sized tensor fewer
    return tanh * softcap, tanh


def _targets(tc: torch.Tensor, ignore_index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A chunk's rows that count, and its targets as gather indices (``(rows, 1)``, an
    ignored row's pointing at class 0, masked out afterwards)."""
    valid = tc != ignore_index
    return valid, torch.where(valid, tc, torch.zeros_like(tc)).unsqueeze(1)


def _loss_only(flat: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
               tgt: torch.Tensor, reduction: str, ignore_index: int, rows: int,
               transform: Transform) -> torch.Tensor:
    total = torch.zeros((), dtype=_sum_dtype(flat, weight), device=flat.device)
    for s in range(0, flat.shape[0], rows):
        logits, _ = _logits(flat[s:s + rows], weight, bias, transform)
        valid, safe = _targets(tgt[s:s + rows], ignore_index)
        picked = torch.log_softmax(logits, dim=1).gather(1, safe).squeeze(1)
        total = total + torch.where(valid, -picked, torch.zeros_like(picked)).sum()
    if reduction == "mean":
        total = total / (tgt != ignore_index).sum()
    return total.to(_loss_dtype(flat, weight))


def _sum_dtype(flat: torch.Tensor, weight: torch.Tensor) -> torch.dtype:
    """The dtype the losses are summed in: float32 at least, float64 for a float64 model."""
    return torch.promote_types(torch.promote_types(flat.dtype, weight.dtype), torch.float32)


def _loss_dtype(flat: torch.Tensor, weight: torch.Tensor) -> torch.dtype:
    """The dtype ``F.cross_entropy`` would return: float32 under autocast (its policy runs
    the loss in float32), else the logits' dtype."""
    if torch.is_autocast_enabled(flat.device.type):
        return torch.float32
    return torch.promote_types(flat.dtype, weight.dtype)


class _LinearCrossEntropy(torch.autograd.Function):
    """The forward computes the loss and every gradient; the backward scales them."""

    @staticmethod
    def forward(ctx: Any, h: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                tgt: torch.Tensor, reduction: str, ignore_index: int,
                rows: int, transform: Transform) -> torch.Tensor:
        flat = h.reshape(-1, h.shape[-1])
        need_h, need_w = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        need_b = bias is not None and ctx.needs_input_grad[2]
        grad_h = torch.empty_like(flat) if need_h else None
        grad_w = torch.zeros_like(weight) if need_w else None
        grad_b = torch.zeros_like(bias) if need_b and bias is not None else None
        total = torch.zeros((), dtype=_sum_dtype(flat, weight), device=flat.device)
        # The products run in one dtype (autocast's, else the operands'): the weight is
        # cast once, not once per chunk.
        mm = _matmul_dtype(flat, weight)
        wm = weight.to(mm)
        bm = bias.to(mm) if bias is not None else None
        for s in range(0, flat.shape[0], rows):
            hc = flat[s:s + rows].to(mm)
            logits, tanh = _logits(hc, wm, bm, transform)
            valid, safe = _targets(tgt[s:s + rows], ignore_index)
            picked = logits.gather(1, safe).squeeze(1)
            # The gradient of the chunk's summed loss with respect to its logits is
            # softmax - one_hot on the counted rows. softmax's kernel, not exp: an exp of
            # logits far below their row's maximum (denormal results) ran 15x slower on a
            # CPU. The log-sum-exp comes from the same softmax, exactly where it is largest:
            # lse = max - log(softmax at the max), which is at least 1/V.
            top = logits.amax(dim=1)
            g = torch.softmax(logits, dim=1)
            del logits
            lse = top - g.amax(dim=1).log()
            total += torch.where(valid, lse - picked, torch.zeros_like(lse)).sum()
            g.scatter_add_(1, safe, -torch.ones_like(picked).unsqueeze(1))
            if tanh is not None:  # through the cap: d(cap * tanh(z / cap))/dz = 1 - tanh²
                g.mul_(tanh.mul_(tanh).neg_().add_(1))
                del tanh
            if transform[0] is not None:  # and through the scale
                g.mul_(transform[0])
            # The ignored rows' gradients are zero: masked on the narrow side (the chunk's
            # hidden states and its gradient), not over the logits, a pass fewer over the
            # largest tensor.
            keep = valid.unsqueeze(1).to(mm)
            gm = g.to(mm)
            if grad_h is not None:
                grad_h[s:s + rows] = (gm @ wm).mul_(keep)
            if grad_w is not None and grad_w.dtype == mm:
                grad_w.addmm_(gm.t(), hc * keep)  # in place: no V x D temporary per chunk
            elif grad_w is not None:
                grad_w.add_((gm.t() @ (hc * keep)).to(grad_w.dtype))
            if grad_b is not None:
                grad_b.add_((valid.to(g.dtype) @ g).to(grad_b.dtype))
            del g, gm
        del wm, bm
        if reduction == "mean":
            count = (tgt != ignore_index).sum()
            scale = 1.0 / count.to(total.dtype)
            total = total * scale
            for grad in (grad_h, grad_w, grad_b):
                if grad is not None:
                    grad.mul_(scale.to(grad.dtype))
        ctx.shape = h.shape
        ctx.has = (grad_h is not None, grad_w is not None, grad_b is not None)
        ctx.save_for_backward(*(g for g in (grad_h, grad_w, grad_b) if g is not None))
        return total.to(_loss_dtype(flat, weight))

    @staticmethod
    def backward(ctx: Any, grad_loss: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        saved = iter(ctx.saved_tensors)
        out: list[torch.Tensor | None] = []
        for has in ctx.has:
            if has:
                grad = next(saved)
                out.append(grad * grad_loss.to(grad.dtype))
            else:
                out.append(None)
        if out[0] is not None:
            out[0] = out[0].reshape(ctx.shape)
        return out[0], out[1], out[2], None, None, None, None, None


def _matmul_dtype(hc: torch.Tensor, weight: torch.Tensor) -> torch.dtype:
    """The dtype the head's matrix products run in: autocast's, else the operands'."""
    if torch.is_autocast_enabled(hc.device.type):
        return torch.get_autocast_dtype(hc.device.type)
    return torch.promote_types(hc.dtype, weight.dtype)
