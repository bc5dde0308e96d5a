"""Ties in a ranking, for the page to say in words what the exports' `tie_rank` and
`tie_size` columns say: which ranks share a place, and on what.

Propositions are tied when the ranking's order (`ranking.export.ranking_key`) cannot tell
them apart: in the comparison rounds, exactly the same TrueSkill μ and σ (propositions the
refits never separated, such as two nobody compared yet); outside them, exactly the same
Likert mean, or none. Their order among themselves is by id, which says nothing about
importance, so they share the best of their ranks (1, 2, 2, 4).
"""

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class TieNote:
    first: int  # the rank the group shares
    last: int  # the last rank the group fills
    compared: bool  # in the comparison rounds: tied on μ and σ; else on the Likert mean
    mu: float | None
    sigma: float | None
    likert_mean: float | None


def tie_notes(rows: Iterable[dict]) -> list[TieNote]:
    """One note per tie among `rows` (ranking rows with `tie_rank` and `tie_size`), in rank
    order; a tie that runs past the rows given still names all of its ranks."""
    notes: dict[int, TieNote] = {}
    for row in rows:
        if row["tie_size"] > 1 and row["tie_rank"] not in notes:
            notes[row["tie_rank"]] = TieNote(
                first=row["tie_rank"],
                last=row["tie_rank"] + row["tie_size"] - 1,
                compared=row["mu"] is not None,
                mu=row["mu"],
                sigma=row["sigma"],
                likert_mean=row["likert_mean"],
            )
    return sorted(notes.values(), key=lambda note: note.first)
