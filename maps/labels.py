"""How the map stage compares labels: one key per concept (the corpus tools lower-case labels,
so two labels that differ only in case are one concept to them), and the stemmed tokens and
head noun behind merge suggestions and the automatic draft's merges."""

import re

import snowballstemmer

from maps.cmap import label_normalise

_TOKEN = re.compile(r"\w+", re.UNICODE)
# Words that carry no concept (the strict evaluation's list in the corpus tools, plus articles).
STOP_WORDS = frozenset(
    {"a", "an", "all", "any", "the", "there", "there's", "these", "this", "that", "those", "many", "most"}
)
_STEMMER = snowballstemmer.stemmer("english")


def label_key(label: str) -> str:
    """The identity of a concept label: normalised (maps.cmap.label_normalise) and case-folded."""
    return label_normalise(label).casefold()


def label_tokens(label: str) -> list[str]:
    return _TOKEN.findall(label_normalise(label).casefold())


def stemmed_tokens(label: str) -> tuple[str, ...]:
    """The label's tokens without stop words, Snowball-stemmed, in order."""
    return tuple(_STEMMER.stemWords([token for token in label_tokens(label) if token not in STOP_WORDS]))


def stemmed_key(label: str) -> str:
    """Labels with the same stemmed key are merged by the automatic draft ("loans" ~ "loan")."""
    return " ".join(stemmed_tokens(label)) or label_key(label)


def head_noun(label: str) -> str | None:
    """The stemmed last content token: a crude head of an English noun phrase."""
    tokens = stemmed_tokens(label)
    return tokens[-1] if tokens else None
