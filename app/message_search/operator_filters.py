"""What a messageSearch query's operators mean for one viewer: each value resolved against what
the viewer may see (app.data.query_names), compiled into the filters the arguments use
(app.data.message_search.conditions), and read back to the client (interpretation).

The rules (docs/api.md, Operators):
- several values of one operator (`from:a from:b`) are OR'd; different operators AND;
- a positive operator whose values resolve to nothing matches nothing: it is never dropped, since
  dropping it would widen the search; a negated one then excludes nothing. A value that names
  nothing and a value that names something the viewer may not see are the same case;
- `from:` and `agents-of:` take `@key` (a key; a display name only if no key is that), `key` or
  `"Display Name"` (keys and display names: two people called Sam both match), or `me`;
- `in:` takes `#channel` (a channel's key or name), `@person` (the viewer's DM with them) or a
  key of any conversation the viewer may list; a conversation includes its threads;
- `since:` / `until:` / `on:` take a date (a whole day in the request's time zone) or an RFC 3339
  instant; every bound intersects with the others and with the arguments.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from app.data.message_search.inputs import AuthorSet, ScopeSet
from app.data.query_names import actors_named, scopes_named
from app.data.readers import Reader
from app.data.rows import ActorRow, ScopeRow
from app.data.session import Session
from app.errors import BadUserInput
from app.message_search.operators import WHEN, Operator

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
MAX_TIME_ZONE_CHARS = 64


def time_zone(name: str) -> ZoneInfo:
    """The IANA zone a request's dates are read in; BAD_USER_INPUT for an unknown one."""
    if not name or len(name) > MAX_TIME_ZONE_CHARS or name.startswith(("/", ".")):
        raise BadUserInput("timeZone must be an IANA time zone name such as Europe/Paris")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise BadUserInput(
            f"unknown timeZone {name!r}; use an IANA name such as Europe/Paris"
        ) from None


@dataclass(frozen=True, slots=True)
class Reading:
    """How one operator was read: whether its value named anything the viewer may see, and
    what (members or agents for from:, the member for agents-of:, scopes for in:)."""

    operator: Operator
    known: bool
    matches: tuple[ActorRow | ScopeRow, ...] = ()


@dataclass(frozen=True, slots=True)
class CompiledOperators:
    readings: tuple[Reading, ...] = ()
    authors: tuple[AuthorSet, ...] = ()
    scopes: tuple[ScopeSet, ...] = ()
    # The time operators' bounds (since inclusive, until exclusive), already intersected.
    since: datetime | None = None
    until: datetime | None = None

    def audited(self) -> list[dict[str, object]]:
        """What the audit keeps of the operators: what each compiled to, never the name typed
        (that is query text, kept only inside the query's digest)."""
        return [_audited(r) for r in self.readings]


async def compile_operators(
    db: Session, reader: Reader, operators: Sequence[Operator], zone: ZoneInfo
) -> CompiledOperators:
    """Resolve and compile a query's operators (none: no statement)."""
    if not operators:
        return CompiledOperators()
    since, until = _time_bounds([o for o in operators if o.name in WHEN], zone)
    who = [o for o in operators if o.name in ("from", "agents-of")]
    where = [o for o in operators if o.name == "in"]
    person_values = [o.value for o in where if o.value.startswith("@")]
    actor_names = {_bare(v).lower() for v in [o.value for o in who] + person_values}
    actors = await actors_named(db, reader, sorted(actor_names)) if actor_names else []

    readings: dict[int, Reading] = {}
    for i, o in enumerate(operators):
        if o.name in WHEN:
            readings[i] = Reading(o, True)
        elif o.name in ("from", "agents-of"):
            kinds = ("member",) if o.name == "agents-of" else ("member", "agent")
            found = _actors_for(o.value, actors, reader.actor_id, kinds)
            readings[i] = Reading(o, bool(found), tuple(found))
    if where:
        people = {
            o.value: _actors_for(o.value, actors, reader.actor_id, ("member", "agent"))
            for o in where
            if o.value.startswith("@")
        }
        scope_names = {_bare(o.value).lower() for o in where if not o.value.startswith("@")}
        person_ids = sorted({a.id for found in people.values() for a in found})
        named, dms = await scopes_named(db, reader, sorted(scope_names), person_ids)
        for i, o in enumerate(operators):
            if o.name != "in":
                continue
            if o.value.startswith("@"):
                ids = {a.id for a in people[o.value]}
                scopes = [s for person, s in dms if person in ids]
            else:
                scopes = _scopes_for(o.value, named)
            readings[i] = Reading(o, bool(scopes), tuple(_distinct(scopes)))
    ordered = tuple(readings[i] for i in range(len(operators)))
    return CompiledOperators(
        readings=ordered,
        authors=tuple(_author_sets(ordered)),
        scopes=tuple(_scope_sets(ordered)),
        since=since,
        until=until,
    )


def _bare(value: str) -> str:
    return value[1:] if value[:1] in ("@", "#") else value


def _actors_for(
    value: str, actors: Sequence[ActorRow], viewer_id: int, kinds: Sequence[str]
) -> list[ActorRow]:
    """The actors a from:/agents-of:/in:@ value names. `me` is the viewer; `@key` the actor
    with that key (the same case first), or, when no key is that, those with that display
    name; a bare value or a quoted name every actor whose key or display name it is."""
    candidates = [a for a in actors if a.kind in kinds]
    if value.lower() == "me":
        return [a for a in candidates if a.id == viewer_id]
    bare = _bare(value)
    low = bare.lower()
    by_key = [a for a in candidates if a.key == bare] or [
        a for a in candidates if a.key.lower() == low
    ]
    by_name = [a for a in candidates if a.name.lower() == low]
    if value.startswith("@"):
        return by_key or by_name
    return _distinct([*by_key, *by_name])


def _scopes_for(value: str, named: Sequence[ScopeRow]) -> list[ScopeRow]:
    """The conversations an in: value names: `#x` a channel whose key (else name) is x; a bare
    x any conversation whose key is x, else a channel whose name is x."""
    bare = _bare(value)
    low = bare.lower()
    pool = [s for s in named if s.kind == "channel"] if value.startswith("#") else list(named)
    by_key = [s for s in pool if s.key == bare] or [s for s in pool if s.key.lower() == low]
    if by_key:
        return by_key
    return [s for s in named if s.kind == "channel" and (s.name or "").lower() == low]


_Row = TypeVar("_Row", ActorRow, ScopeRow)


def _distinct(rows: Iterable[_Row]) -> list[_Row]:
    seen: set[int] = set()
    out = []
    for r in rows:
        if r.id not in seen:
            seen.add(r.id)
            out.append(r)
    return out


def _author_sets(readings: Sequence[Reading]) -> Iterable[AuthorSet]:
    """One condition per (operator, negated): the union of its values' actors. A positive one
    with no actor matches nothing; a negated one with none is left out (it excludes nothing)."""
    for name in ("from", "agents-of"):
        for negated in (False, True):
            group = [
                r for r in readings if r.operator.name == name and r.operator.negated == negated
            ]
            if not group:
                continue
            ids = tuple(sorted({m.id for r in group for m in r.matches}))
            if negated and not ids:
                continue
            yield AuthorSet(ids, agents_of=name == "agents-of", negated=negated)


def _scope_sets(readings: Sequence[Reading]) -> Iterable[ScopeSet]:
    for negated in (False, True):
        group = [r for r in readings if r.operator.name == "in" and r.operator.negated == negated]
        if not group:
            continue
        scopes = [m for r in group for m in r.matches if isinstance(m, ScopeRow)]
        if negated and not scopes:
            continue
        roots = tuple(sorted({s.id for s in scopes if s.parent_id is None}))
        threads = tuple(sorted({s.id for s in scopes if s.parent_id is not None}))
        yield ScopeSet(roots, threads, negated)


def _audited(r: Reading) -> dict[str, object]:
    entry: dict[str, object] = {"name": r.operator.name, "negated": r.operator.negated}
    if r.operator.name not in WHEN:
        entry["ids"] = [m.id for m in r.matches]
    return entry


def intersect(
    starts: Iterable[datetime | None], ends: Iterable[datetime | None]
) -> tuple[datetime | None, datetime | None]:
    """Time bounds intersected: the latest start, the earliest end (None: unbounded). An empty
    intersection (since:2026-03-02 until:2026-03-01) is a search that matches nothing, not an
    error: the bounds were typed, and say so."""
    given_starts = [t for t in starts if t is not None]
    given_ends = [t for t in ends if t is not None]
    return (max(given_starts, default=None), min(given_ends, default=None))


def _time_bounds(
    operators: Sequence[Operator], zone: ZoneInfo
) -> tuple[datetime | None, datetime | None]:
    """The intersection of the time operators."""
    spans = [(o.name, *_span(o, zone)) for o in operators]
    return intersect(
        (start for name, start, _ in spans if name in ("since", "on")),
        (end for name, _, end in spans if name in ("until", "on")),
    )


def _span(o: Operator, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """The operator's value as [start, end): a date is its whole day in `zone`; an instant is
    [instant, instant) for since:/until:, and its day in `zone` for on:."""
    value = o.value
    try:
        if _DATE.fullmatch(value):
            day = date.fromisoformat(value)
        else:
            instant = _instant(value, zone)
            if o.name != "on":
                return instant, instant
            day = instant.astimezone(zone).date()
        start = datetime(day.year, day.month, day.day, tzinfo=zone)
        after = day + timedelta(days=1)
        end = datetime(after.year, after.month, after.day, tzinfo=zone)
        return start.astimezone(ZoneInfo("UTC")), end.astimezone(ZoneInfo("UTC"))
    except (ValueError, OverflowError):
        raise BadUserInput(
            f"{o.name}: takes a date (YYYY-MM-DD) or an RFC 3339 time"
            " (2026-03-01T09:30:00Z), within the years 1-9998"
        ) from None


def _instant(value: str, zone: ZoneInfo) -> datetime:
    if "T" not in value.upper() and " " not in value:
        raise ValueError(value)
    parsed = datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=zone)
    return parsed.astimezone(ZoneInfo("UTC"))
