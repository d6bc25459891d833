"""The audiences a conversation's messages are written with and shown to (docs/design.md,
Audiences), derived in one place for the importer and for live changes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AudienceSpec:
    """An audience before it has a row: kind and (for members/external) its reader ids, sorted
    and distinct, as audiences_identity expects. The namespace is the workspace's."""

    kind: str
    readers: tuple[int, ...] = ()


def conversation_audiences(
    kind: str, visibility: str | None, people: Sequence[int]
) -> tuple[AudienceSpec, AudienceSpec]:
    """(origin, destination) of a channel or DM whose human members are `people`.

    Agents are never readers: only the conversation's people are. A thread has its parent's.
    """
    readers = tuple(sorted(set(people)))
    if kind == "dm" or visibility == "private":
        both = AudienceSpec("members", readers)
        return both, both
    if visibility == "public":
        both = AudienceSpec("workspace")
        return both, both
    if visibility == "shared":
        return AudienceSpec("members", readers), AudienceSpec("external", readers)
    # "open": a truly public space; only public text may be shown there.
    return AudienceSpec("public"), AudienceSpec("external")


def follows_membership(kind: str, visibility: str | None) -> bool:
    """Whether the conversation's audiences are made of its people, so that a membership
    change gives its later messages a new audience (interval membership)."""
    return kind == "dm" or visibility in ("private", "shared")
