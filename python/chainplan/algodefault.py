"""Which planning algorithm ``chainplan.plan`` and ``Checkpointed`` use when none is named."""

from __future__ import annotations

from chainplan import _bind
from chainplan.errors import NotFoundError
from chainplan.profiler.document import Profile
from chainplan.towers.profile import TowersProfile

__all__ = ["default_algo", "profiles_towers"]


def default_algo(source: object) -> str:
    """The default algorithm for ``source``: ``multichain`` for towers joined at the loss,
    ``rotor-ops`` for the profile of a model captured from its graph (the stages have
    operation-level options), else ``rotor``."""
    if profiles_towers(source):
        return "multichain"
    if isinstance(source, Profile) and any(r.options_json for r in source.rows):
        return "rotor-ops"
    return "rotor"


def profiles_towers(source: object) -> bool:
    """Whether ``source`` is a profile (or stored run) of towers joined at the loss, whose
    default algorithm is ``multichain``."""
    if isinstance(source, TowersProfile):
        return True
    if isinstance(source, Profile):
        return False
    if isinstance(source, int) and not isinstance(source, bool):
        try:
            return bool(_bind.run(source).get("towers", False))
        except NotFoundError:
            return False  # planning reports the missing run
    return False
