"""The file a new profile is written to, named from the model's name: one rule for
``profile()``, ``record()``, the towers' profile and ``Checkpointed``.

A profile's name is a label (the model's name in the database, in reports and in the file
name), never a path: the file always goes to :func:`default_profile_dir`, and ``path=``
writes it anywhere else. A name that cannot be used as one file name as it is, such as
``../escape``, ``/some/dir/evil``, or one holding NUL or another control character, is
refused with a :class:`~chainplan.errors.ProfileError` saying why, before anything is
measured. It is refused rather than rewritten: a rewritten name would store and show
something the caller did not write, and two names could then share one file stem.
"""

from __future__ import annotations

import datetime as _dt
import os
import unicodedata
from pathlib import Path

from chainplan.errors import ProfileError
from chainplan.profiler.document import default_profile_dir

__all__ = ["MAX_NAME_BYTES", "check_profile_name", "new_profile_path"]

#: The longest name in UTF-8 bytes: with the longest suffix (``-towers-<date>-<time>-<µs>-
#: <pid>.arrow``, 47 bytes) the file name stays well within the 255 bytes a file name may
#: have on Linux file systems.
MAX_NAME_BYTES = 128

# Unicode categories no name may hold: control characters (NUL, tab, newline, escape),
# invisible format characters (zero-width spaces, the bidirectional overrides that make a
# name display as another), line and paragraph separators, and lone surrogates, which are no
# text at all (they cannot be encoded as UTF-8).
_REFUSED_CATEGORIES = {"Cc": "control", "Cf": "invisible formatting", "Zl": "line separator",
                       "Zp": "paragraph separator", "Cs": "surrogate"}

# The kinds of profile file, and what their names carry after the model's name.
_KINDS = {"profile": "", "record": "-record", "towers": "-towers"}


def _shown(name: str) -> str:
    """The name as an error message quotes it: its repr (escapes visible), cut when long."""
    return repr(name) if len(name) <= 60 else repr(name[:60]) + "…"


def _problem(name: str) -> str | None:
    """Why ``name`` cannot name a profile, or None when it can."""
    if not name:
        return "is empty"
    for ch in name:
        category = unicodedata.category(ch)
        if category in _REFUSED_CATEGORIES:
            return (f"holds a {_REFUSED_CATEGORIES[category]} character (U+{ord(ch):04X}), "
                    "which a file name and a report cannot show")
    for sep in ("/", "\\"):
        if sep in name:
            return (f"holds {sep!r}: a profile name is a label, not a path (every profile is "
                    f"written to the profile folder, path= writes one elsewhere); "
                    f"for example {name.replace(sep, '_')[:MAX_NAME_BYTES]!r}")
    if name in (".", ".."):
        return "names a folder, not a model"
    if name.startswith("."):
        return "starts with '.', which would hide its file"
    if name.startswith("-"):
        return "starts with '-', which would read as an option in a command line"
    if name != name.strip():
        return "starts or ends with white space"
    size = len(name.encode("utf-8"))
    if size > MAX_NAME_BYTES:
        return f"is {size} bytes long in UTF-8, over the {MAX_NAME_BYTES} a profile name may have"
    return None


def check_profile_name(name: object, *, default_from: object = None) -> str:
    """The name a profile is stored under: ``name``, or with None the class name of
    ``default_from`` (the model); refused with a :class:`ProfileError` when it cannot name
    a profile file (the module documentation lists the rules).

    Raises:
        ProfileError: ``name`` is not a string, or cannot be stored (the message names it
            and says why).
    """
    if name is None and default_from is not None:
        label = type(default_from).__name__
        why = _problem(label)
        if why is not None:
            raise ProfileError(f"the model's class name {_shown(label)} {why}: pass name= "
                               "to name its profile")
        return label
    if not isinstance(name, str):
        raise ProfileError(f"name must be a string (got {name!r} ({type(name).__name__}))")
    why = _problem(name)
    if why is not None:
        raise ProfileError(f"profile name {_shown(name)} {why}")
    return name


def new_profile_path(name: str, kind: str = "profile") -> Path:
    """A new file in the profile folder for a profile of ``kind`` (``profile``, ``record``
    or ``towers``) named ``name``: ``<name>[-record|-towers]-<time>-<pid>.arrow``, the time
    to the microsecond and the process id keeping concurrent writers apart.

    Raises:
        ProfileError: ``name`` cannot name a profile (:func:`check_profile_name`).
    """
    label = check_profile_name(name)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    return default_profile_dir() / f"{label}{_KINDS[kind]}-{stamp}-{os.getpid()}.arrow"
