"""One training step of :class:`~chainplan.executors.checkpoint.CheckpointedChain`.

:class:`CheckpointStep` holds what a step of the checkpointing executor needs between the
forward phase and the backward (the module docstring of :mod:`.checkpoint` says how the
two phases run): the activations it holds, the saved tensors its stages dropped, and how
far the plan's sequence has run. It runs the forward phase (whole stages, stretches of
store-all stages), and in the backward the operations between two backwards
(recomputations, recomputation regions, graphs refilled), each activation dropped after
its last reader (:class:`~chainplan.executors.program.Program`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import torch
from torch import nn

from chainplan.errors import ScheduleError
from chainplan.executors.program import Program
from chainplan.executors.regions import Run
from chainplan.executors.stretch import Stretch
from chainplan.ops import Op
from chainplan.runtime import compiled
from chainplan.runtime.recompute import AutocastState, RNGState, frozen_buffers, not_a_leaf
from chainplan.runtime.saved import (
    StageSaves,
    StopRecomputation,
    buffer_storages,
    dropping,
    filling,
)
from chainplan.runtime.side import SideInputs

__all__ = ["CheckpointStep", "side_scope"]


class CheckpointStep:
    """One training step of a :class:`CheckpointedChain`: its activations, its stages'
    dropped saved tensors, and how far the plan's sequence has run."""

    def __init__(self, stages: Sequence[nn.Module], program: Program, sequence: tuple[Op, ...],
                 x: torch.Tensor, side: SideInputs | None, callback: Any = None,
                 choices: dict[int, tuple[int, ...]] | None = None,
                 stretches: dict[int, Stretch] | None = None,
                 recomputations: dict[int, tuple[Run, Stretch]] | None = None) -> None:
        self.stages = stages
        # Runs of store-all stages as one region, by first stage: compiled under
        # torch.compile, straight-line graphs in eager execution
        # (chainplan.executors.stretch).
        self.stretches = stretches or {}
        # Recomputation runs as one region, by first operation (chainplan.executors.regions).
        self.regions = recomputations or {}
        self.choices = choices or {}  # the plan's operation-level options, by stage
        self.options: dict[int, Any] = {}  # the option programs this step runs, by stage
        # Under torch.compile, the stages whose option runs as "keep nothing, recompute the
        # whole stage before its backward" (_record): a compiled stage does not save the
        # tensors the option's positions name.
        self.refill: set[int] = set()
        self.callback = callback  # torch.compile's frame evaluation (chainplan.runtime.compiled)
        self.program = program
        self.sequence = sequence
        self.side = side
        self.acts: dict[int, torch.Tensor] = {0: x}
        self.saves: dict[int, StageSaves] = {}
        self.rng: dict[int, RNGState] = {}
        self.input_grad: dict[int, bool] = {}  # whether stage k's forward-phase input needed one
        self.autocast = AutocastState(x.device)
        self.device = x.device
        self.pos = len(program.forward) + 2  # the next backward-phase operation
        self.busy = False

    # -- the forward phase -------------------------------------------------------------

    def forward(self) -> torch.Tensor:
        """Run the forward phase; return the chain output a_L.

        The executor keeps detached aliases of the activations for its later readers, so
        that nothing it holds refers to the graph: the graph refers to it (through its
        pre-hooks and holders), never the other way round, and it all goes with the graph.
        """
        x = self.acts[0]
        forward = self.program.forward
        j = 0
        while j < len(forward):
            i, op = forward[j]
            k = op.stage
            self.input_grad[k] = x.requires_grad
            run = self.stretches.get(k)
            if run is not None:  # stages k..run.last, one region
                # What the plan drops during the stretch is dropped now, and the executor
                # hands its input over (chainplan.executors.stretch: "Inputs go in a box").
                for i, _ in forward[j:j + run.last - k + 1]:
                    self._drop(i)
                box = [x]
                del x
                out = run(self.callback, box)
                if not isinstance(out, torch.Tensor):
                    raise ScheduleError(f"stages {k}-{run.last} returned "
                                        f"{type(out).__name__}; a chain stage must return "
                                        "one tensor")
                j += run.last - k
                k = run.last
            else:
                out = self._record(k, op, x)
            self.acts[k] = out.detach()
            if k in self.program.groups and out.grad_fn is not None:
                out.grad_fn.register_prehook(self._prehook(k))
            x = out
            del out
            for i, _ in forward[j - (k - op.stage):j + 1]:
                self._drop(i)
            j += 1
        self.acts.pop(self.program.stages, None)
        return x

    def _record(self, k: int, op: Op, x: torch.Tensor) -> torch.Tensor:
        stage = self.stages[k - 1]
        # A stage run with an option recomputes part of its forward before its backward:
        # it replays its RNG state too (chainplan.graph.partial).
        replays = k in self.program.recomputed or (op.kind == "F_all" and op.option > 0)
        state = RNGState(self.device) if replays else None
        option = op.kind == "F_all" and op.option > 0
        if option and self.callback is None:
            program = self._option(k, x)
            saves = StageSaves(k, self.before_backward)
            with dropping(saves, buffer_storages(stage), program.mask):
                out = compiled.stage_call(self.callback, stage, x)
            self.saves[k] = saves
        elif op.kind == "F_all" and not option:
            out = compiled.stage_call(self.callback, stage, x)
        else:
            # F_ck and F_none keep nothing. So does an option under torch.compile: its kept
            # positions number the saved tensors of the stage's eager graph, and a compiled
            # stage saves others (AOTAutograd's partition). It is recomputed whole before
            # its backward instead (_refill): no more memory than the option until then, the
            # same at its backward, one stage forward more in time.
            saves = StageSaves(k, self.before_backward)
            with dropping(saves, buffer_storages(stage)):
                out = compiled.stage_call(self.callback, stage, x)
            if saves.empty:
                self.saves[k] = saves
                if option:
                    self.refill.add(k)
        if state is not None and state.consumed():
            self.rng[k] = state
        if not isinstance(out, torch.Tensor):
            raise ScheduleError(f"stage {k} ({type(stage).__name__}) returned "
                                f"{type(out).__name__}; a chain stage must return one tensor")
        return out

    def _option(self, k: int, x: torch.Tensor) -> Any:
        """The program of stage k's operation-level option (:mod:`chainplan.graph.partial`)."""
        keep = self.choices.get(k)
        stage = self.stages[k - 1]
        make = getattr(stage, "option_program", None)
        if keep is None or make is None:
            raise ScheduleError(f"stage {k} runs an operation-level option, which only a stage "
                                "cut from a captured graph has (and the plan's 'options' entry)")
        program = make(keep, x)
        self.options[k] = program
        return program

    def _prehook(self, k: int) -> Any:
        def hook(_grads: Any) -> None:
            self.before_backward(k)
        return hook

    # -- the backward phase ------------------------------------------------------------

    def before_backward(self, k: int) -> None:
        """Run what the plan puts before ``B_k``: the operations since ``B_{k+1}``."""
        if self.busy:
            raise ScheduleError(f"the recomputation before B {k} needs a saved tensor of a "
                                "stage not yet recomputed (the plan is not one of this "
                                "executor's)")
        self.busy = True
        try:
            with self.side.scope() if self.side is not None else contextlib.nullcontext():
                self._advance(self.program.backward_at[k])
                if k in self.options and k in self.saves:
                    self._rest(k)
                elif k in self.refill and k in self.saves:
                    self._refill(k)
        finally:
            self.busy = False

    def _rest(self, k: int) -> None:
        """Run stage k's option program: bring back what its first forward dropped."""
        saves = self.saves.pop(k)
        program = self.options.pop(k)
        stage = self.stages[k - 1]
        inp = self._option_input(k)
        with self._replaying(k, stage):
            program.run(stage.inputs(inp), saves)  # type: ignore[operator]
        if saves.empty:
            raise ScheduleError(f"B {k}: the recomputation of stage {k}'s option left "
                                f"{saves.empty} saved tensors missing")
        saves.close()

    def _refill(self, k: int) -> None:
        """Under torch.compile, stage k ran its option keeping nothing: recompute it whole,
        compiled as its first forward ran, to bring back every saved tensor it dropped."""
        self.refill.discard(k)
        saves = self.saves.pop(k)
        stage = self.stages[k - 1]
        inp = self._option_input(k)
        with self._replaying(k, stage), torch.enable_grad(), filling(saves, stop=True):
            try:
                compiled.stage_call(self.callback, stage, inp)
            except StopRecomputation:
                pass
        if saves.empty:
            raise ScheduleError(f"B {k}: the recomputation of stage {k} left {saves.empty} "
                                "saved tensors missing")
        saves.close()

    def _option_input(self, k: int) -> torch.Tensor:
        """Stage k's input for the recomputation of its option right before B_k, needing a
        gradient as its first forward's did (the packs are that forward's)."""
        x = self.acts.get(k - 1)
        if x is None:
            raise ScheduleError(f"B {k}: the recomputation of stage {k}'s option needs its "
                                f"input a_{k - 1}, which is not in memory")
        inp = x.detach().requires_grad_(self.input_grad.get(k, False) and x.is_floating_point())
        if self.autocast.enabled:
            inp = not_a_leaf(inp)
        return inp

    def _advance(self, to: int) -> None:
        while self.pos < to:
            i = self.pos
            found = self.regions.get(i)
            if found is not None and self._region(*found):
                continue
            op = self.sequence[i]
            self.pos = i + 1
            if op.kind != "B":
                self._recompute(i, op)
            self._drop(i)

    def _region(self, run: Run, region: Stretch) -> bool:
        """Run the recomputation ``run`` as one region; False, running nothing, where it
        must go stage by stage this step (a stage that drew random numbers replays its own
        RNG state: chainplan.executors.regions)."""
        if any(k in self.rng for k in range(run.first, run.last + 1)):
            return False
        x = self.acts.get(run.first - 1)
        if x is None:
            raise ScheduleError(f"op {run.start} ({self.sequence[run.start]}): input "
                                f"a_{run.first - 1} is not in memory")
        # As a forward stretch: what the run drops goes now, and the region gets its input
        # boxed (chainplan.executors.stretch).
        for i in range(run.start, run.end + 1):
            self._drop(i)
        box = [x.detach()]
        del x
        with contextlib.ExitStack() as scope:
            scope.enter_context(self.autocast.replay())
            for k in range(run.first, run.last + 1):
                scope.enter_context(frozen_buffers(self.stages[k - 1]))
            with torch.no_grad():
                out = region(self.callback, box)
        outs = out if isinstance(out, tuple) else (out,)
        for k, t in zip(run.keep, outs, strict=True):
            self.acts[k] = t
        del out, outs
        for i in range(run.start, run.end + 1):
            self.pos = i + 1
            self._drop(i)
        return True

    def _recompute(self, i: int, op: Op) -> None:
        k = op.stage
        x = self.acts.get(k - 1)
        if x is None:
            raise ScheduleError(f"op {i} ({op}): input a_{k - 1} is not in memory")
        stage = self.stages[k - 1]
        saves = self.saves.get(k)
        fill = op.kind == "F_all" and saves is not None and saves.empty > 0
        early = i in self.program.early
        # The option's pack map is the first forward's, whose input needed a gradient as
        # recorded then (a_{k-1} is held detached here): the mask must index its packs.
        grad = self.input_grad.get(k, False) and x.is_floating_point()
        with self._replaying(k, stage):
            # Under the forward's autocast: the pack map runs the stage, and in the backward
            # (outside the user's autocast block) it would record other dtypes.
            if fill and op.option and self.callback is not None:
                fill = False  # compiled: the whole stage before its backward (_refill)
                self.refill.add(k)
            only = (self._option(k, x.detach().requires_grad_(grad)).mask
                    if fill and op.option else None)
            if not fill:
                if early:
                    return  # nothing to recompute: its graph kept what its backward reads
                with torch.no_grad():
                    out = compiled.stage_call(self.callback, stage, x.detach())
                self.acts[k] = out
                return
            assert saves is not None
            inp = x.detach()
            if self.input_grad.get(k, False):
                inp.requires_grad_(True)
            del x
            if self.autocast.enabled:
                inp = not_a_leaf(inp)
            try:
                with torch.enable_grad(), filling(saves, stop=early, only=only):
                    out = compiled.stage_call(self.callback, stage, inp)
            except StopRecomputation:
                out = None
            if saves.empty == 0:
                saves.close()
                del self.saves[k]
                self.options.pop(k, None)
            elif early and only is None:  # an option's rest is filled before B (_rest)
                raise ScheduleError(f"op {i} ({op}): the recomputation of stage {k} saved "
                                    f"{saves.empty} tensors fewer than its first forward")
            if not early:
                assert out is not None
                self.acts[k] = out.detach()

    @contextlib.contextmanager
    def _replaying(self, k: int, stage: nn.Module) -> Iterator[None]:
        state = self.rng.get(k)
        with (state.replay() if state is not None else contextlib.nullcontext(),
              self.autocast.replay(), frozen_buffers(stage)):
            yield

    def _drop(self, i: int) -> None:
        for k in self.program.drops.get(i, ()):
            if k:  # a_0 is the caller's
                self.acts.pop(k, None)


def side_scope(side: SideInputs | None) -> contextlib.AbstractContextManager[None]:
    """The stages see ``side``'s values while a step's operations run (nothing without)."""
    return side.scope() if side is not None else contextlib.nullcontext()
