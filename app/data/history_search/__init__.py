"""historySearch SQL: one statement for the examined window, its exclusion counts, the ranked
page and its neighbors, and the turn's ledger (app.data.history_search.statement)."""

from app.data.history_search.inputs import PageRequest, RankInputs, SearchFilters, Weights
from app.data.history_search.neighbors import Neighbors
from app.data.history_search.rows import HitRow, Person, SearchRows
from app.data.history_search.statement import search
from app.data.history_search.window import RULES

__all__ = [
    "RULES",
    "HitRow",
    "Neighbors",
    "PageRequest",
    "Person",
    "RankInputs",
    "SearchFilters",
    "SearchRows",
    "Weights",
    "search",
]
