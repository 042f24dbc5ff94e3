"""Checks, family by family, that a causal language model called as its users call it
(``model(input_ids=ids, labels=ids)``) trains through ``chainplan.Checkpointed`` with its
head fused with its loss: the loss and every gradient within fp32 rounding of the plain
model's, ``logits`` None, and with ``keep_logits=True`` the logits and loss of the plain
model (PyTorch's head). Tiny configs from transformers' config classes
(:mod:`families`), random weights, nothing downloaded.

Usage::

    .venv/bin/python bench/libraries/fused_heads.py [--families mistral phi ...]
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(__file__))
from families import FAMILIES, causal_lm  # noqa: E402

import chainplan  # noqa: E402


def check(family: str) -> str:
    torch.manual_seed(0)
    model = causal_lm(family, vocab=2000)
    ids = torch.randint(0, 2000, (2, 32))
    ref = copy.deepcopy(model)
    want = ref(input_ids=ids, labels=ids)
    want.loss.backward()
    opts = {"budget": "min", "repeats": 1, "warmup": 0, "reuse": False}
    out = chainplan.Checkpointed(model, **opts)(input_ids=ids, labels=ids)
    out.loss.backward()
    # Relative to the largest gradient entry of the model: a gradient that is zero in exact
    # arithmetic (a key bias under softmax's shift invariance) is rounding noise either way.
    scale = max(float(q.grad.abs().max()) for q in ref.parameters() if q.grad is not None)
    worst = 0.0
    for (name, p), q in zip(model.named_parameters(), ref.parameters(), strict=True):
        if q.grad is None:
            continue
        assert p.grad is not None, name
        worst = max(worst, float((p.grad - q.grad).abs().max()) / scale)
    model.zero_grad()
    kept = chainplan.Checkpointed(model, keep_logits=True, **opts)(input_ids=ids, labels=ids)
    same = torch.equal(kept.logits, want.logits) and torch.equal(kept.loss, want.loss)
    return (f"| {family} | {type(model).__name__} | {out.logits is None} | "
            f"{abs(float(out.loss.detach() - want.loss.detach())):.1e} | {worst:.1e} | {same} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=list(FAMILIES))
    opts = parser.parse_args()
    os.environ.setdefault("CHAINPLAN_DB", os.path.join(tempfile.mkdtemp(), "fused.sqlite"))
    print("| family | class | logits None | loss difference | largest gradient difference "
          "(relative to the model's largest gradient entry) | kept logits and loss equal |")
    print("|---|---|---|---|---|---|")
    for family in opts.families:
        print(check(family), flush=True)


if __name__ == "__main__":
    main()
