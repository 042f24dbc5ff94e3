"""Tensor parallelism on the mesh's ``tp`` dimension: which linears split, and how.

Megatron's split, through DTensor's ``parallelize_module``: in an attention block the
query, key and value projections are split by columns (each rank computes its share of the
heads) and the output projection by rows (a sum over the ranks); in an MLP the up and gate
projections by columns, the down projection by rows. The model's own code then runs on
each rank's heads: an attention that reshapes with a stored head count
(``x.view(B, T, self.n_heads, -1)``) gets that count divided by ``tp``.

Two sources of the split:

* a HuggingFace model whose config has ``base_model_tp_plan`` (Llama, Qwen, Mistral, ...):
  that plan, applied to ``model.base_model``;
* any other model: its attention and MLP blocks recognised by their linears' names
  (:data:`ATTENTION`, :data:`MLP`), wherever they sit (a ``ModuleList`` of blocks, an
  ``nn.Sequential``).

:func:`tp_plan` finds the split without touching the model or any process group, so that
a model tensor parallelism cannot split (a head count that ``tp`` does not divide, a fused
``qkv`` projection, no recognised block) is refused on every rank before any collective.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import nn

from chainplan.errors import PlanError

__all__ = ["ATTENTION", "MLP", "TPSplit", "apply_tp", "tp_plan"]

#: Names of an attention block's (query, key, value, output) linears.
ATTENTION: tuple[tuple[str, str, str, str], ...] = (
    ("q_proj", "k_proj", "v_proj", "o_proj"), ("q_proj", "k_proj", "v_proj", "out_proj"),
    ("q", "k", "v", "o"), ("query", "key", "value", "out"), ("wq", "wk", "wv", "wo"))
#: Names of an MLP's column-split linears and its row-split one.
MLP: tuple[tuple[tuple[str, ...], str], ...] = (
    (("gate_proj", "up_proj"), "down_proj"), (("up", "gate"), "down"), (("up",), "down"),
    (("w1", "w3"), "w2"), (("fc1",), "fc2"), (("c_fc",), "c_proj"))
#: Attributes holding an attention's head counts, divided by ``tp`` on each rank.
HEADS: tuple[str, ...] = ("n_heads", "num_heads", "n_head", "num_attention_heads",
                          "n_kv_heads", "num_kv_heads", "num_key_value_heads")
# Names that mark a fused projection tensor parallelism cannot split by columns.
_FUSED = ("qkv", "c_attn", "in_proj", "Wqkv", "query_key_value")


@dataclass(frozen=True)
class TPSplit:
    """How one model splits: ``styles`` maps a module path (``fnmatch`` patterns for a
    HuggingFace plan) to ``colwise`` or ``rowwise``, under ``root`` (the model's path of
    the module the plan applies to); ``heads`` the head-count attributes to divide
    (module path, attribute)."""

    root: str
    styles: dict[str, str]
    heads: tuple[tuple[str, str], ...]
    source: str


def tp_plan(model: nn.Module, tp: int) -> TPSplit:
    """The split of ``model`` over ``tp`` ranks (module docstring).

    Raises:
        PlanError: naming the block or the count tensor parallelism cannot split.
    """
    config = getattr(model, "config", None)
    hf = getattr(config, "base_model_tp_plan", None) if config is not None else None
    if hf:
        return _hf_plan(model, dict(hf), tp)
    styles: dict[str, str] = {}
    heads: list[tuple[str, str]] = []
    for path, mod in model.named_modules():
        linears = {n: c for n, c in mod.named_children() if isinstance(c, nn.Linear)}
        fused = [n for n in linears if any(f.lower() == n.lower() for f in _FUSED)]
        counts = [(a, getattr(mod, a)) for a in HEADS if isinstance(getattr(mod, a, None), int)]
        names = next((q for q in ATTENTION if all(n in linears for n in q)), None)
        if names is not None:
            for a, n in counts:
                if n % tp:
                    raise PlanError(f"tensor parallelism over tp={tp} cannot split "
                                    f"{_name(path, mod)}: its {a} = {n} heads is not a "
                                    f"multiple of {tp}")
            if not counts:
                raise PlanError(f"tensor parallelism cannot split {_name(path, mod)}: it has "
                                f"no head count attribute ({', '.join(HEADS[:4])}) to divide "
                                f"by tp={tp}")
            heads += [(path, a) for a, _ in counts]
            for n in names[:3]:
                styles[_join(path, n)] = "colwise"
            styles[_join(path, names[3])] = "rowwise"
            continue
        if fused and counts:
            raise PlanError(f"tensor parallelism cannot split {_name(path, mod)}: its fused "
                            f"projection {fused[0]!r} holds queries, keys and values in one "
                            f"linear (want separate q/k/v/o linears: "
                            f"{', '.join('/'.join(a) for a in ATTENTION)})")
        mlp = next(((c, r) for c, r in MLP if r in linears and all(n in linears for n in c)),
                   None)
        if mlp is not None:
            for n in mlp[0]:
                styles[_join(path, n)] = "colwise"
            styles[_join(path, mlp[1])] = "rowwise"
    if not styles:
        attention = ", ".join("/".join(a) for a in ATTENTION)
        mlps = ", ".join("/".join((*c, r)) for c, r in MLP)
        raise PlanError(f"tensor parallelism cannot split {type(model).__name__}: no attention "
                        f"block (linears named {attention} and a head count) or MLP ({mlps}) "
                        f"was recognised, and its config has no base_model_tp_plan")
    _check_divisible(model, styles, tp)
    return TPSplit(root="", styles=styles, heads=tuple(heads), source="recognised blocks")


def _hf_plan(model: nn.Module, plan: dict[str, str], tp: int) -> TPSplit:
    config: Any = model.config
    for a in ("num_attention_heads", "num_key_value_heads"):
        n = getattr(config, a, None)
        if isinstance(n, int) and n % tp:
            raise PlanError(f"tensor parallelism over tp={tp} cannot split "
                            f"{type(model).__name__}: config.{a} = {n} is not a multiple of "
                            f"{tp}")
    bad = {k: v for k, v in plan.items() if v not in ("colwise", "rowwise")}
    if bad:
        k, v = next(iter(bad.items()))
        raise PlanError(f"{type(model).__name__}'s base_model_tp_plan splits {k!r} as {v!r}: "
                        f"chainplan applies colwise and rowwise only")
    base = getattr(model, "base_model", model)
    root = next((p for p, m in model.named_modules() if m is base), "")
    return TPSplit(root=root, styles=plan, heads=(), source="config.base_model_tp_plan")


def _check_divisible(model: nn.Module, styles: dict[str, str], tp: int) -> None:
    for path, style in styles.items():
        lin = model.get_submodule(path)
        assert isinstance(lin, nn.Linear)
        size, what = (lin.out_features, "output") if style == "colwise" \
            else (lin.in_features, "input")
        if size % tp:
            raise PlanError(f"tensor parallelism over tp={tp} cannot split {path} "
                            f"(Linear {lin.in_features}→{lin.out_features}) by "
                            f"{'columns' if style == 'colwise' else 'rows'}: its {what} size "
                            f"{size} is not a multiple of {tp}")


def apply_tp(model: nn.Module, split: TPSplit, mesh: object) -> None:
    """Split ``model`` in place over the 1-D ``mesh`` (the ``tp`` dimension)."""
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    root = model.get_submodule(split.root) if split.root else model
    tp = int(mesh.size())  # type: ignore[attr-defined]
    plan = {p: ColwiseParallel() if s == "colwise" else RowwiseParallel()
            for p, s in split.styles.items()}
    parallelize_module(root, mesh, plan)  # type: ignore[arg-type]
    for path, attr in split.heads:
        mod = model.get_submodule(path)
        setattr(mod, attr, getattr(mod, attr) // tp)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _name(path: str, mod: nn.Module) -> str:
    return f"{path or 'the model'} ({type(mod).__name__})"
