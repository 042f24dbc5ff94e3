"""The profile's rows from a chain's stage measurements: one rule for the columns, shared by
``chainplan.profile`` (:mod:`chainplan.profiler.run`) and profiles read back from recorded
steps (:mod:`chainplan.profiler.recorded`).

Besides what each stage measures, the executor holds bytes that no stage's own measurement
sees (:func:`held_during`): they are added where the executor really holds them, so that
a plan's predicted peak stays the measured one, or, for the random-number states held from
one operation to a later one, given apart as the stage's ``replay_bytes``, which the
planners count once per plan.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass

import torch
from torch import nn

from chainplan.profiler.lossmeasure import ChainEnd, LossMeasurement, chain_end
from chainplan.profiler.sizes import nbytes
from chainplan.profiler.stagemeasure import StageMeasurement
from chainplan.profilerow import ProfileRow

__all__ = ["Form", "Held", "held_during", "loss_rows", "stage_rows"]


@dataclass(frozen=True)
class Form:
    """The last stage measured in another form (a language model's head unfused from its
    loss: :mod:`chainplan.graph.headform`).

    Attributes:
        measured: the form's measurement: its memory as the stage's is measured, its times
            taken in rounds alternating with the stage's own.
        stage_time: the stage's own median forward plus backward time in those rounds: the
            form's times are scaled by the stage's row time over it, so that the two forms
            compare as they ran side by side whatever the load when the rows were timed.
    """

    measured: StageMeasurement
    stage_time: float


@dataclass(frozen=True)
class Held:
    """Per stage, bytes the executor holds that the stage's measurement does not see.

    Attributes:
        step: held during every operation of the stage, whatever the plan (a tied
            weight's gradient): added to each of its overheads.
        replay: the size of the stage's random-number state (0 for a stage that draws
            none), which the executor keeps only when the plan recomputes the stage or runs
            it with an operation-level option, from the stage's first forward to the end of
            the step: written as the stage's ``replay_bytes``, in no overhead. The plan
            counts the states it keeps once, on top of its peak
            (``chainplan.Chain.ReplayStateBytes`` in Go); a store-all plan keeps none.
    """

    step: list[int]
    replay: list[int]


def stage_rows(measured: list[tuple[StageMeasurement, int]], names: list[str],
               lm: LossMeasurement | None, resident: int = 0,
               options: list[str | None] | None = None,
               held: Held | None = None, *, holds_end: bool = False,
               forms: dict[str, Form] | None = None) -> list[ProfileRow]:
    """One row per stage and repetition; the last stage's memory as the executor runs it;
    ``resident`` bytes held through the whole step (side values) in every overhead;
    ``options`` the stages' operation-level options (``options_json``); ``held`` more bytes
    the executor holds (:func:`held_during`); ``holds_end`` whether the model's output
    holds ``a_L`` to the end of the step (:func:`~chainplan.profiler.lossmeasure.chain_end`);
    ``forms`` the last stage measured in its other forms, each added to its options as a
    form option (:func:`_form_option`)."""
    rows: list[ProfileRow] = []
    n = len(measured)
    options = options or [None] * n
    held = held or Held([0] * n, [0] * n)
    end = chain_end(measured[-1][0], lm, holds_end=holds_end)
    for k, ((m, in_bytes), sname) in enumerate(zip(measured, names, strict=True), start=1):
        always = end.held_bytes + resident + held.step[k - 1]
        saved, fwd_tmp = m.saved_bytes, m.fwd_tmp_bytes
        bwd_always = always
        if k == n:
            saved, fwd_tmp = end.saved_bytes, end.fwd_tmp_bytes
            bwd_always = always - end.held_bytes + end.last_bwd_held_bytes
        opts = _with_overhead(options[k - 1], always)
        if k == n and forms:
            row = statistics.median(m.fwd_times_s) + statistics.median(m.bwd_times_s or (0.0,))
            opts = _with_forms(opts, [_form_option(name, f, row, lm, holds_end, always,
                                                   bwd_always) for name, f in forms.items()])
        bwd = m.bwd_times_s or tuple(0.0 for _ in m.fwd_times_s)
        rec: tuple[float | None, ...] = m.recompute_times_s or tuple(None for _ in m.fwd_times_s)
        for r, (f, b, u) in enumerate(zip(m.fwd_times_s, bwd, rec, strict=True)):
            rows.append(ProfileRow(
                k, sname, r, f, b, in_bytes, m.out_bytes, saved,
                fwd_tmp + always, m.bwd_tmp_bytes + bwd_always, m.param_bytes,
                saves_input=m.input_kept, saves_output=m.output_kept if m.input_kept is not None
                else None, recompute_time_s=u,
                recompute_tmp_bytes=None if m.recompute_tmp_bytes is None
                else m.recompute_tmp_bytes + always,
                options_json=opts, replay_bytes=held.replay[k - 1] or None))
    return rows


def _form_option(name: str, form: Form, row: float, lm: LossMeasurement | None,
                 holds_end: bool, always: int, bwd_always: int) -> dict[str, object]:
    """The last stage's form ``name`` as a form option (docs/formats.md, ``options``): its
    memory counted as the stage's own is (:func:`chain_end`, the bytes held beside it), its
    median times scaled to the stage's row time ``row`` (:class:`Form`), nothing
    recomputed. No random-number state is replayed for it: the executor runs the form as
    the stage (docs/executors.md)."""
    m = form.measured
    end = chain_end(m, lm, holds_end=holds_end)
    scale = row / form.stage_time if form.stage_time > 0 and row > 0 else 1.0
    return {"saved_bytes": end.saved_bytes, "fwd_tmp_bytes": end.fwd_tmp_bytes + always,
            "recompute_time": 0.0, "keep": [], "form": name,
            "fwd_time": statistics.median(m.fwd_times_s) * scale,
            "bwd_time": statistics.median(m.bwd_times_s or (0.0,)) * scale,
            "bwd_tmp_bytes": m.bwd_tmp_bytes + bwd_always}


def _with_forms(options: str | None, forms: list[dict[str, object]]) -> str | None:
    """Options JSON with the form options appended."""
    if not forms:
        return options
    return json.dumps([*(json.loads(options) if options else []), *forms])


def _with_overhead(options: str | None, extra: int) -> str | None:
    """Options JSON with ``extra`` bytes added to each option's forward overhead."""
    if options is None or not extra:
        return options
    opts = json.loads(options)
    for o in opts:
        o["fwd_tmp_bytes"] += extra
    return json.dumps(opts)


def held_during(stages: list[nn.Module], measured: list[tuple[StageMeasurement, int]],
                device: torch.device) -> Held:
    """Per stage, bytes the executor holds during its operations that no stage measures:

    * ``step``: a parameter read by several stages (a language model's embedding tied to
      its head): autograd holds the gradient the later stage's backward gives it until the
      earlier stage's backward adds its own, as in a plain backward; it counts in the
      overheads of the stages from the first reader up to, not including, the last;
    * ``replay``: the size of the random-number state (5 KiB) the executor keeps for a
      stage that draws random numbers (dropout) and that the plan recomputes or runs with
      an option, to replay it; 0 for a stage that draws none, and on a GPU, where the
      states (the CPU generator's and the GPU's) are host tensors outside the device's
      memory. It is held from the stage's first forward to the end of the step,
      only in plans that recompute the stage (a store-all plan takes none): no overhead
      of one operation can hold it, so the profile gives its size (``replay_bytes``) and
      the planners' façade counts the states of each plan once, on top of its peak
      (docs/executors.md, "RNG states").
    """
    n = len(stages)
    step = [0] * n
    readers: dict[int, tuple[nn.Parameter, list[int]]] = {}
    for k, stage in enumerate(stages):
        for p in stage.parameters():
            readers.setdefault(id(p), (p, []))[1].append(k)
    for p, ks in readers.values():
        if len(set(ks)) > 1:
            for k in range(min(ks), max(ks)):
                step[k] += nbytes(p)  # a DTensor's local shard
    # The states are host tensors (torch.cuda.get_rng_state() too: a CPU byte tensor), so
    # they take memory only where the profile measures the host's allocator.
    replay = [0] * n
    if device.type == "cpu":
        state = int(torch.get_rng_state().numel())
        replay = [state if m.draws_random else 0 for m, _ in measured]
    return Held(step, replay)


def loss_rows(k: int, in_bytes: int, lm: LossMeasurement | None, name: str,
              end: ChainEnd, resident: int = 0) -> list[ProfileRow]:
    """The loss stage's rows (one per repetition; one row of zeros without a loss), its
    overheads as ``end`` (:func:`~chainplan.profiler.lossmeasure.chain_end`) counts them."""
    if lm is None:  # no loss given: the loss stage costs nothing
        return [ProfileRow(k, name, 0, 0.0, 0.0, in_bytes, 0, 0, resident, resident, 0,
                           stage_kind="loss")]
    return [ProfileRow(k, name, r, f, b, in_bytes, 0, 0, end.loss_fwd_tmp_bytes + resident,
                       end.loss_bwd_tmp_bytes + resident, 0, stage_kind="loss")
            for r, (f, b) in enumerate(zip(lm.fwd_times_s, lm.bwd_times_s, strict=True))]
