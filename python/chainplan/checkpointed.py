"""``chainplan.Checkpointed``: a chain model that profiles, plans and checkpoints itself.

It is the whole pipeline (profile, store, plan, execute) behind one ``nn.Module`` that drops
into an unchanged training loop. What it decides per input shape, and why:

* a stored profile of the same model (signature, compute dtype, device, torch version,
  loss) and input shape is reused, so a new process does not profile again;
* one that differs in the batch dimension only is scaled to the new batch
  (:mod:`chainplan.reuse`), an estimate that costs no measurement;
* otherwise the model is profiled on the input itself.

Each decision is logged (logger ``chainplan.checkpointed``); a shape met after the first
also raises a :class:`~chainplan.shapecheck.ShapeWarning` (the new plan's memory differs).
"""

from __future__ import annotations

from typing import Any

from torch import nn

from chainplan.api import Budget, LossFn
from chainplan.callkind import Target
from chainplan.checkpointedplans import CheckpointedPlans
from chainplan.executors.view import plain_model, planned, planned_view

__all__ = ["Checkpointed", "CheckpointedPlans"]

class _CheckpointedType(type):
    """``isinstance(net, Checkpointed)`` holds for the views ``Checkpointed(...)`` returns."""

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, nn.Module) and isinstance(planned(obj), CheckpointedPlans)


class Checkpointed(metaclass=_CheckpointedType):
    """A model that profiles, plans and checkpoints itself within a memory budget.

    Wrap the model once and train as usual::

        net = chainplan.Checkpointed(model, budget="2GiB", loss_fn=F.cross_entropy,
                                     target=y0)   # an example target batch
        opt = torch.optim.AdamW(net.parameters())
        for x, y in loader:
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()

    ``Checkpointed(model, ...)`` returns the model itself as a planned view
    (:mod:`chainplan.executors.view`): an instance of the model's class sharing its state,
    with its attributes, children, methods, ``forward`` signature and state-dict keys, and
    ``isinstance(net, Checkpointed)``. Its training forward takes the model's own
    arguments, positional or keyword (``net(input_ids=ids, labels=ids)``), and returns what
    the model returns: a tensor, a tuple, a HuggingFace ``ModelOutput`` with its ``loss``
    (a language model's ``logits`` None, unless ``keep_logits=True``).
    Under ``torch.no_grad()`` it is the plain model (evaluation, ``generate``). The
    options below and the plans made so far are read with
    ``chainplan.executors.planned(net)`` (``.plans``, ``.budget``, ...).

    The first training forward with a kind of input (the shapes, dtypes and device of its
    tensors, its other arguments, the autocast state) finds or makes a profile for it,
    plans, and caches the executor; later forwards with that kind cost a dictionary lookup.
    A profile is found in the database when a stored run has the same model signature
    (module tree with its settings, parameter and buffer names, shapes and dtypes, device,
    torch version), compute dtype, loss and input shape: it is reused, so a new process does
    not profile again. A run that differs in the batch dimension only is scaled linearly to
    the new batch (``rescale``). Otherwise the model is profiled on the input and the
    profile stored under ``name``. Each decision is logged; a new kind of input after the
    first also raises a :class:`~chainplan.shapecheck.ShapeWarning` saying which.

    Under data parallelism the ranks of the data-parallel group agree on one plan at that
    forward (:mod:`chainplan.agreed`, docs/distributed.md): each profiles (or finds its
    profile) as above, and rank 0 of the group plans once on the most of each stage's time
    and memory over the ranks, within the smallest of their budgets; every rank runs that
    plan, and an error on one rank (an infeasible budget, a failed profile) is raised on
    every rank. The group is ``group``, else the mesh ``fully_shard`` put on the model's
    units; without either (``DDP(Checkpointed(model))`` without ``group``, one process)
    each rank plans alone.

    The loss stage of the plan is the loss ``forward`` computes itself (a HuggingFace
    model given ``labels=``), or ``loss_fn`` profiled with a sample target made for each
    input shape from ``target``: a tensor is an example whose first (batch) dimension is
    resized to the input's (rows repeated or dropped, so class labels stay valid); a
    function gets the input and returns its target. ``loss_fn`` receives what the model
    returns (``loss_fn(out, y)`` may read ``out.logits``); it is profiled, never called in
    training: pass the one the training script uses, or none (the loss then costs nothing
    in the plan).

    A language model computing its own loss (a ``*ForCausalLM`` given ``labels=``) trains
    without ever holding its logits: its head is fused with its loss (docs/executors.md,
    "The loss inside the chain"), and its output's ``logits`` is None. ``keep_logits=True``
    returns them, and keeps PyTorch's head and its memory.

    Args:
        model: the model as written: an ``nn.Sequential`` called with one tensor is the
            chain of its stages (nested Sequentials flattened); any other model is split
            from its graph at the first forward (``chainplan.stages`` shows the split).
            The chain input is its first tensor argument (in the order of ``forward``'s
            signature), whose dimension 0 is the batch; the other arguments are side
            inputs and are part of what makes a plan valid. A model whose inputs go into
            towers joined at the loss (``net(images, tokens)`` of a CLIP-style encoder, a
            triplet network) is planned as such (docs/multichain.md); ``loss_fn`` then
            gets the model's outputs as separate arguments.

    Keyword Args:
        budget: activation memory budget (chain input included): bytes, a size such as
            ``"2GiB"``, or ``"min"`` for the algorithm's smallest.
        algo: as for :func:`chainplan.plan` (default: ``multichain`` for towers joined
            at the loss; ``rotor-ops`` for a captured model; else ``rotor``).
        bandwidth: host-device copy bandwidth of the offloading algorithms (``pofo``,
            ...), as for :func:`chainplan.plan`: bytes per second, ``"12GB/s"``, or
            ``"auto"`` (measured once and recorded with the run). Default: None (required
            by those algorithms, refused by the others).
        loss_fn: the training loss, called as ``loss_fn(output, target)`` when a target
            is given, else ``loss_fn(output)``; profiled, never called in training
            (default: None).
        target: the sample target for ``loss_fn``: an example tensor or a function of
            the input (default: None; required when ``loss_fn`` takes a target).
        name: the model's name in the database and in its profiles' file names (default:
            the model's class name), a label refused as ``profile()`` refuses it.
        slots: memory slots of the planner's discretization (default: the algorithm's).
        reuse: look for stored profiles before profiling (default: True).
        rescale: plan a new batch size from a stored profile scaled to it (default: True;
            False profiles the new shape).
        repeats: timed repetitions per stage when profiling, ≥ 1 (default: 3).
        warmup: untimed repetitions first, ≥ 0 (default: 1).
        keep_logits: return a language model's logits beside the loss it computes
            (default: False: ``logits`` is None and the head is fused with the loss).
        group: the data-parallel process group whose ranks run this model alike and agree
            on its plans (default: None: ``fully_shard``'s group when the model's units
            are sharded, else none). Give it under DDP, or under HSDP on part of the
            world; never a group whose ranks hold different models (a pipeline's stages).

    Returns:
        The planned view of ``model`` (an ``nn.Module`` of the model's class).

    Raises:
        ProfileError: at construction, an empty nn.Sequential, ``loss_fn`` takes a
            target and none is given, a profiling option is out of range, or ``name``
            cannot name a profile; at the first forward, a language model whose loss
            cannot be computed without its logits (a
            :class:`~chainplan.graph.capture.CaptureError` naming the option:
            ``keep_logits=True`` keeps them).
        PlanError: at construction, an unknown algorithm, a malformed budget, or a
            bandwidth missing, malformed or given to an algorithm that does not use it.
        InfeasibleBudget: at the first forward of a shape, the budget is below the
            algorithm's smallest for that shape (given by ``min_budget_bytes``); in a
            data-parallel group, the group's smallest budget, on every rank.
        PlanError: at the first forward of a shape in a data-parallel group, another rank
            failed (the error names it, of its error's class when chainplan defines it),
            or the ranks' models or options differ.
    """

    def __new__(cls, model: nn.Module, *, budget: Budget,  # type: ignore[misc]
                algo: str | None = None,
                bandwidth: float | str | None = None, loss_fn: LossFn | None = None,
                target: Target | None = None, name: str | None = None,
                slots: int | None = None, reuse: bool = True, rescale: bool = True,
                repeats: int = 3, warmup: int = 1, keep_logits: bool = False,
                group: Any = None) -> nn.Module:
        model = plain_model(model)
        state = CheckpointedPlans(model, budget=budget, algo=algo, bandwidth=bandwidth,
                                  loss_fn=loss_fn, target=target, name=name, slots=slots,
                                  reuse=reuse, rescale=rescale, repeats=repeats, warmup=warmup,
                                  keep_logits=keep_logits, group=group)
        return planned_view(model, state)
