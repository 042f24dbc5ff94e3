"""The chain a data-parallel group plans on: the ranks' chains, the most of each figure.

The ranks of a data-parallel group run one plan (:mod:`chainplan.agreed`), each having
measured the same model on its own device. A step of the group lasts as long as its
slowest rank (the collectives wait for it), and every rank must hold the plan's memory.
So the group's chain takes, field by field, the largest time and the largest size any
rank measured: the plan made on it is never predicted faster, nor smaller, than what a
rank measured. A stage saves its input (or its output) when any rank's does; an optional
field one rank did not measure (``recompute_time``, ...) is left out, which the planners
read conservatively (docs/formats.md, "Chains, version 2"). A stage's operation-level
options are chosen per rank from its measurements (the nodes each keeps differ between
ranks): the group's are those every rank measured (the same ``keep`` and ``form``), each
with the most of its figures; a plan names the nodes its options keep, so it runs on
every rank. Everything else (the stages' count and names) is the model's structure and
must be the same on every rank: a difference is refused, naming the field and the ranks,
because a plan of one rank's structure would not run on another's.

This module never imports torch.
"""

from __future__ import annotations

from typing import Any

from chainplan.errors import PlanError

__all__ = ["combine_chains"]


def combine_chains(chains: list[dict[str, Any]]) -> dict[str, Any]:
    """The group's chain of ``chains`` (``chainplan.chain/v1`` or ``v2`` documents, one per
    rank, in rank order): module docstring.

    Raises:
        PlanError: the chains differ in structure (stage count, names, option positions),
            naming the first field that differs and the ranks holding another value than
            rank 0's.
    """
    if not chains:
        raise PlanError("no chain to combine")
    formats = [str(c.get("format", "")) for c in chains]
    out = _merge([{k: v for k, v in c.items() if k != "format"} for c in chains], "chain")
    out["format"] = max(formats)  # v2 reads every v1 field: the newer holds both
    return dict(out)


def _merge(values: list[Any], where: str) -> Any:
    first = values[0]
    if all(isinstance(v, bool) for v in values):  # saves_input, saves_output
        return any(values)
    if all(_number(v) for v in values):
        if all(isinstance(v, int) for v in values):
            return max(values)
        return max(float(v) for v in values)
    if all(isinstance(v, dict) for v in values):
        out = {}
        for key in first:
            if key == "options" and all(isinstance(v.get(key), list) for v in values):
                common = _common_options([v[key] for v in values], _field(where, key))
                if common:
                    out[key] = common
            elif all(key in v for v in values):
                out[key] = _merge([v[key] for v in values], _field(where, key))
            # else: measured on some ranks only, read conservatively when absent
        return out
    if all(isinstance(v, list) for v in values):
        if all(all(_number(x) for x in v) for v in values):  # keep: node positions
            return _same(values, where)
        lengths = [len(v) for v in values]
        _same(lengths, f"{where}: the count")
        return [_merge([v[i] for v in values], _item(where, i, first[i]))
                for i in range(lengths[0])]
    return _same(values, where)


def _common_options(lists: list[list[Any]], where: str) -> list[Any]:
    """The options (dicts) every rank has, by the nodes they keep and their form, in rank
    0's order, each the most of its figures."""
    def key(o: Any) -> str:
        return repr((o.get("keep"), o.get("form"))) if isinstance(o, dict) else repr(o)

    by_rank = [{key(o): o for o in opts} for opts in lists]
    out = []
    for i, o in enumerate(lists[0]):
        k = key(o)
        if all(k in mine for mine in by_rank):
            out.append(_merge([mine[k] for mine in by_rank], _item(where, i, o)))
    return out


def _same(values: list[Any], where: str) -> Any:
    differ = [r for r, v in enumerate(values) if v != values[0]]
    if differ:
        raise PlanError(f"the ranks of the data-parallel group measured different chains: "
                        f"{where} is {values[0]!r} on rank 0 and {values[differ[0]]!r} on "
                        f"rank {differ[0]} (ranks {differ} differ from rank 0): every rank "
                        f"must run the same model on inputs of the same structure")
    return values[0]


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _field(where: str, key: str) -> str:
    return f"{where}'s {key}"


def _item(where: str, i: int, item: Any) -> str:
    name = item.get("name") if isinstance(item, dict) else None
    return f"{where}[{i + 1}]" + (f" ({name})" if isinstance(name, str) else "")
