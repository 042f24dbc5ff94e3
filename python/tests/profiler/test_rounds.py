"""profile() times the stages in rounds over the whole chain (issue 20, item 8).

On a loaded host a stretch of contention of a second or more slowed every repeat of one
stage when the repeats ran back to back, so that the stage's median was off by 25-65x
(recorded against profiled times, 0.016-0.041). In rounds, such a stretch slows one round
of several stages, which the medians drop."""

from __future__ import annotations

import time

import torch
from torch import nn

import chainplan


class Logged(nn.Module):
    """A linear layer that writes its name in a shared log at every forward."""

    def __init__(self, name: str, log: list[str]) -> None:
        super().__init__()
        self.name, self.log, self.lin = name, log, nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.log.append(self.name)
        return torch.relu(self.lin(x))


def test_stages_are_timed_in_rounds_over_the_chain() -> None:
    log: list[str] = []
    model = nn.Sequential(*(Logged(f"s{k}", log) for k in range(3)))
    x = torch.randn(4, 8)

    def loss_fn(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        log.append("loss")
        return nn.functional.mse_loss(out, target)

    prof = chainplan.profile(model, x, loss_fn=loss_fn, target=torch.zeros(4, 8), repeats=4,
                             warmup=1, ingest=False, progress=False, spread_warning=None)
    # The last runs: three rounds over the chain and the loss, each a timed forward and the
    # forward its timed backward starts from.
    one_round = ["s0", "s0", "s1", "s1", "s2", "s2", "loss", "loss"]
    assert log[-24:] == one_round * 3, log[-24:]
    for k in range(1, 5):
        rows = [r for r in prof.rows if r.stage_index == k]
        assert len(rows) == 4, (k, rows)  # one row per timed run: 1 measured + 3 rounds
        assert all(r.fwd_time_s > 0 and r.bwd_time_s > 0 for r in rows)


class Host:
    """A host that stalls: counts the forwards of every stage, and makes the ``span``
    forwards from the watched stage's ``at``-th forward on sleep ``pause`` seconds each,
    whichever stage runs them. Counted in forwards, not seconds, so that the stall covers
    the same runs on a quiet host and on a loaded one."""

    def __init__(self, at: int, span: int, pause: float) -> None:
        self.at, self.span, self.pause = at, span, pause
        self.watched_calls = 0
        self.left = 0

    def forward(self, watched: bool) -> None:
        if watched:
            self.watched_calls += 1
            if self.watched_calls == self.at:
                self.left = self.span
        if self.left > 0:
            self.left -= 1
            time.sleep(self.pause)


class OnHost(nn.Module):
    def __init__(self, host: Host, watched: bool = False) -> None:
        super().__init__()
        self.lin, self.host, self.watched = nn.Linear(8, 8), host, watched

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.host.forward(self.watched)
        return self.lin(x)


def test_a_stall_of_the_host_does_not_make_one_stage_slow() -> None:
    """A stall of 24 forwards from the second stage's third forward on: back to back, every
    timed forward of that stage falls in it (the median is the stall's); in rounds over 12
    stages, the stall ends during the first pass and slows at most one of its runs."""
    pause = 0.2
    host = Host(at=3, span=24, pause=pause)
    model = nn.Sequential(OnHost(host), OnHost(host, watched=True),
                          *(OnHost(host) for _ in range(10)))
    x = torch.randn(4, 8)
    prof = chainplan.profile(model, x, repeats=7, warmup=1, ingest=False, progress=False,
                             spread_warning=None)
    assert host.watched_calls > 3 and host.left == 0  # the stall happened and ended
    times = [r.fwd_time_s for r in prof.rows if r.stage_index == 2]
    # Sleeping never takes less than asked, so a loaded host can only add slow runs, and a
    # Linear(8, 8) taking 0.2 s on its own is far out; the median is clean while fewer than
    # half the runs are slow.
    assert sum(t >= pause for t in times) < len(times) / 2, times
