"""Proposition text: how it is shown and how it is compared."""

import re

_SPACE = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """Lower-case, fold runs of white space into one space, strip: the duplicate key."""
    return _SPACE.sub(" ", text).strip().lower()


def proposition_text(subject: str, relation: str, obj: str) -> str:
    """`subject – relation – object`, skipping empty parts (obvious traps have one)."""
    return " – ".join(part for part in (subject, relation, obj) if part)
