"""Option names as the docs spell them, whatever case the caller wrote them in.

Spark lower-cases the names of a data source's options before the source sees
them (`startingOffsets` arrives as `startingoffsets`). A known name is matched
without case and shown in its documented camelCase; an unknown one is shown
cased after the known name it is closest to (`startingoffset` reads as
`startingOffset`, with "did you mean `startingOffsets`?"), never lower-cased
when a known name comes close. An option another kind of read takes is
refused naming the kind that does.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from gazette_core.errors import ValidationError


def closest(typed: str, known: Iterable[str]) -> str | None:
    """The known name `typed` is most likely a misspelling of, or None."""
    by_lower = {name.lower(): name for name in known}
    found = difflib.get_close_matches(typed.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[found[0]] if found else None


def recased(typed: str, like: str) -> str:
    """`typed` with the case of `like` where their letters match (`startingoffset` after
    `startingOffsets` is `startingOffset`)."""
    out = list(typed)
    matcher = difflib.SequenceMatcher(None, typed.lower(), like.lower(), autojunk=False)
    for a, b, size in matcher.get_matching_blocks():
        out[a:a + size] = like[b:b + size]
    return "".join(out)


def listing(modes: Mapping[str, tuple[str, ...]], mode: str | None) -> str:
    """What the read takes: the mode's names, or (mode unknown) every mode's."""
    if mode is not None:
        return f"a {mode} takes: {', '.join(modes[mode])}"
    common = [n for n in next(iter(modes.values())) if all(n in ns for ns in modes.values())]
    only = [f"{m}s only: {', '.join(n for n in ns if n not in common)}"
            for m, ns in modes.items()]
    return f"reads take: {', '.join(common)}; " + "; ".join(only)


def check_known(options: Iterable[str], modes: Mapping[str, tuple[str, ...]],
                mode: str | None) -> None:
    """Refuse any option `mode` (a key of `modes`; None: any of them) does not take."""
    taking = modes[mode] if mode is not None else tuple(
        dict.fromkeys(n for names in modes.values() for n in names))
    canonical = {n.lower(): n for names in modes.values() for n in names}
    for typed in options:
        name = canonical.get(typed.lower())
        if name is None:
            like = closest(typed, taking)
            guess = f"; did you mean {like}?" if like else ""
            raise ValidationError(f"option {recased(typed, like) if like else typed}",
                                  f"unknown option{guess} ({listing(modes, mode)})")
        if name not in taking:
            kinds = " and ".join(f"{m}s" for m, names in modes.items() if name in names)
            raise ValidationError(f"option {name}", f"only {kinds} take it, not a {mode}")
