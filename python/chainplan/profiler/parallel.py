"""The parallel fields of a profile (docs/formats.md, "Parallel fields"): what the parallel
planners (advise, search3d) need beyond the chain.

Per stage: the input and output shapes, the parameter elements split into weights and
biases, the convolutions and linear layers inside it (channels, kernel, stride, padding,
their own input and output shapes: ParaDL's limits and halos, shared/specs §5.1), and,
when asked, the stage's times at other batch sizes (``batch_sizes=``: a per-sample time
depends on the batch). Per profile: the optimizer's step time and state bytes
(``optimizer=``). Nothing here changes the model: the structure run restores buffers and
random streams, and the optimizer steps on clones of the parameters.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from chainplan.errors import ProfileError
from chainplan.profiler.measuring import preserved, timed
from chainplan.profiler.sizes import nbytes
from chainplan.profilerow import ProfileRow

__all__ = ["StageStructure", "SplitModule", "split_modules", "stage_structure", "resize_batch",
           "batch_times_json",
           "OptimizerFactory", "measure_optimizer", "check_batch_sizes", "with_parallel"]

OptimizerFactory = Callable[[list[torch.nn.Parameter]], torch.optim.Optimizer]

# The modules the tensor and spatial strategies split (their attributes are read below).
_SPLIT = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear)


@dataclass(frozen=True)
class StageStructure:
    """A stage's shapes, parameter counts and split modules, as the profile columns hold
    them (``in_shape``, ``out_shape``: JSON arrays; ``modules_json``: a JSON array)."""

    in_shape: str
    out_shape: str
    weight_count: int
    bias_count: int
    modules_json: str


def _shape(t: object) -> list[int] | None:
    return [int(d) for d in t.shape] if isinstance(t, torch.Tensor) else None


def _ints(v: object) -> list[int]:
    if isinstance(v, (tuple, list)):
        return [int(x) for x in v]
    return [int(v)] if isinstance(v, int) else []


@dataclass(frozen=True)
class SplitModule:
    """A convolution or linear layer of the model, as one forward saw it: its weight (to
    find the stage that holds it) and its ``modules_json`` entry."""

    weight: torch.Tensor
    entry: dict[str, Any]


def split_modules(model: nn.Module, args: Sequence[Any], kwargs: dict[str, Any],
                  device: torch.device) -> list[SplitModule]:
    """The model's convolutions and linear layers with their attributes and the shapes one
    forward without graph gives them (``model(*args, **kwargs)``); buffers and random
    streams are restored afterwards. Run on the model as written, it finds them whether the
    stages are its own modules (a Sequential) or cut from its captured graph."""
    found: list[SplitModule] = []
    handles = []
    for name, mod in model.named_modules():
        weight: Any = getattr(mod, "weight", None)
        if not isinstance(mod, _SPLIT) or not isinstance(weight, torch.Tensor):
            continue

        def hook(m: nn.Module, inputs: tuple[Any, ...], result: object, name: str = name,
                 weight: torch.Tensor = weight) -> None:
            bias: Any = getattr(m, "bias", None)
            entry: dict[str, Any] = {
                "name": name or type(m).__name__, "type": type(m).__name__,
                "in_shape": _shape(inputs[0]) if inputs else [], "out_shape": _shape(result) or [],
                "weight_count": int(weight.numel()),
                "bias_count": int(bias.numel()) if bias is not None else 0,
            }
            if isinstance(m, nn.Linear):
                entry["in_channels"], entry["out_channels"] = m.in_features, m.out_features
            else:
                conv: Any = m
                entry["in_channels"], entry["out_channels"] = conv.in_channels, conv.out_channels
                entry["kernel"], entry["stride"] = _ints(conv.kernel_size), _ints(conv.stride)
                pad = conv.padding
                entry["padding"] = _ints(pad) if not isinstance(pad, str) else []
                entry["groups"] = int(conv.groups)
            if not any(f.weight is weight for f in found):  # a module called twice: once
                found.append(SplitModule(weight, entry))

        handles.append(mod.register_forward_hook(hook))
    try:
        with preserved(model, device), torch.no_grad():
            model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return found


def stage_structure(stage: nn.Module, x: torch.Tensor, out: torch.Tensor,
                    modules: Sequence[SplitModule]) -> StageStructure:
    """The structure of ``stage`` on input ``x`` (output ``out``): its parameter counts,
    and the split modules whose weight it holds (``split_modules``, in model order)."""
    weights = biases = 0
    held: set[int] = set()
    for name, p in stage.named_parameters():
        held.add(id(p))
        if name == "bias" or name.endswith(".bias"):
            biases += p.numel()
        else:
            weights += p.numel()
    mine = [m.entry for m in modules if id(m.weight) in held]
    return StageStructure(json.dumps(_shape(x)), json.dumps(_shape(out)), weights, biases,
                          json.dumps(mine, separators=(",", ":")))


def check_batch_sizes(batch_sizes: Sequence[int] | None) -> tuple[int, ...]:
    """The other batch sizes to time stages at, checked (each ≥ 1, distinct)."""
    if batch_sizes is None:
        return ()
    if isinstance(batch_sizes, (str, bytes)) or not isinstance(batch_sizes, Sequence):
        raise ProfileError(f"batch_sizes must be a list of integers ≥ 1 (got {batch_sizes!r})")
    out: list[int] = []
    for b in batch_sizes:
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise ProfileError(f"batch_sizes must be integers ≥ 1 (got {b!r})")
        if b not in out:
            out.append(b)
    return tuple(out)


def resize_batch(x: torch.Tensor, b: int) -> torch.Tensor:
    """``x`` with b samples along dimension 0: its first b, or it repeated and cut."""
    if x.dim() == 0:
        raise ProfileError("batch_sizes needs a sample with a batch dimension")
    n = x.shape[0]
    if b <= n:
        return x[:b].clone()
    reps = -(-b // n)
    return x.repeat(reps, *([1] * (x.dim() - 1)))[:b].contiguous()


def batch_times_json(batches: Sequence[int], fwd: Sequence[Sequence[float]],
                     bwd: Sequence[Sequence[float]], rep: int) -> str | None:
    """One row's ``batch_times_json``: repetition ``rep`` of each batch's times."""
    if not batches:
        return None
    return json.dumps({"batch_sizes": list(batches),
                       "fwd_time_s": [f[rep] if rep < len(f) else f[-1] for f in fwd],
                       "bwd_time_s": [w[rep] if rep < len(w) else (w[-1] if w else 0.0)
                                      for w in bwd]})


def measure_optimizer(model: nn.Module, factory: OptimizerFactory, device: torch.device, *,
                      repeats: int, warmup: int) -> dict[str, str]:
    """The optimizer's metadata keys: its name, the median time of a step over every
    parameter of ``model`` and the bytes of its state after a step. It steps on clones of
    the parameters with random gradients, so the model is untouched."""
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ProfileError("optimizer= needs a model with trainable parameters")
    clones = [torch.nn.Parameter(p.detach().clone()) for p in params]
    for c in clones:
        c.grad = torch.randn_like(c)
    try:
        opt = factory(clones)
    except Exception as err:
        raise ProfileError(f"optimizer= must build an optimizer from parameters (e.g. "
                           f"torch.optim.Adam, or lambda ps: torch.optim.SGD(ps, lr=0.1)): "
                           f"{type(err).__name__}: {err}") from err
    if not isinstance(opt, torch.optim.Optimizer):
        raise ProfileError(f"optimizer= built a {type(opt).__name__}, not a torch.optim.Optimizer")
    for _ in range(max(warmup, 1)):
        opt.step()
    times = [timed(opt.step, device)[1] for _ in range(repeats)]
    state = sum(nbytes(v) for s in opt.state.values() for v in s.values()
                if isinstance(v, torch.Tensor))
    return {"optimizer": type(opt).__name__,
            "optimizer_step_time_s": repr(float(statistics.median(times))),
            "optimizer_state_bytes": str(int(state))}


def with_parallel(rows: Sequence[ProfileRow], structures: Sequence[StageStructure],
                  batches: Sequence[int], fwd: Sequence[Sequence[Sequence[float]]],
                  bwd: Sequence[Sequence[Sequence[float]]]) -> list[ProfileRow]:
    """``rows`` with the parallel fields of their stage (``structures[k-1]`` for stage k,
    and per repetition its times at ``batches``: ``fwd[k-1][i]`` the forwards at
    ``batches[i]``); the loss rows unchanged."""
    out: list[ProfileRow] = []
    for row in rows:
        if row.stage_kind != "stage":
            out.append(row)
            continue
        k = row.stage_index - 1
        st = structures[k]
        times = batch_times_json(batches, fwd[k], bwd[k], row.rep) if batches else None
        out.append(dataclasses.replace(row, in_shape=st.in_shape, out_shape=st.out_shape,
                                       weight_count=st.weight_count, bias_count=st.bias_count,
                                       modules_json=st.modules_json, batch_times_json=times))
    return out
