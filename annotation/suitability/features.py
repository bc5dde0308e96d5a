"""Features of an Open IE tuple that need no downloaded model (pure: no Django).

Falke & Gurevych 2017 (§5.3) used extraction confidence, lengths of the arguments and the
relation, and part-of-speech information. Without a tagger, part of speech is approximated
by closed-class word lists (pronouns, determiners, prepositions, conjunctions — closed
classes are short, fixed lists), a verb-like relation head (an auxiliary, a modal or a word
with a verbal ending) and the shape of each argument (starts with a pronoun, holds a clause
marker such as "that", "which", "who", capitalised, digits).
"""

import re
from collections.abc import Sequence

PERSONAL_PRONOUNS = frozenset(
    [
        "i",
        "me",
        "my",
        "mine",
        "myself",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "he",
        "him",
        "his",
        "himself",
        "she",
        "her",
        "hers",
        "herself",
        "it",
        "its",
        "itself",
        "we",
        "us",
        "our",
        "ours",
        "ourselves",
        "they",
        "them",
        "their",
        "theirs",
        "themselves",
        "one",
    ]
)
DEMONSTRATIVES = frozenset(["this", "that", "these", "those", "such"])
OTHER_PRONOUNS = frozenset(
    [
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "whatever",
        "whoever",
        "anyone",
        "anybody",
        "anything",
        "someone",
        "somebody",
        "something",
        "everyone",
        "everybody",
        "everything",
        "none",
        "nobody",
        "nothing",
        "each",
        "either",
        "neither",
        "both",
        "few",
        "many",
        "several",
        "some",
        "all",
        "another",
        "other",
        "others",
    ]
)
PRONOUNS = PERSONAL_PRONOUNS | DEMONSTRATIVES | OTHER_PRONOUNS
DETERMINERS = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "some",
        "any",
        "no",
        "every",
        "each",
        "either",
        "neither",
        "my",
        "your",
        "his",
        "her",
        "its",
        "our",
        "their",
    ]
)
PREPOSITIONS = frozenset(
    [
        "about",
        "above",
        "across",
        "after",
        "against",
        "along",
        "among",
        "around",
        "as",
        "at",
        "before",
        "behind",
        "below",
        "beneath",
        "beside",
        "between",
        "beyond",
        "by",
        "despite",
        "down",
        "during",
        "except",
        "for",
        "from",
        "in",
        "inside",
        "into",
        "like",
        "near",
        "of",
        "off",
        "on",
        "onto",
        "out",
        "outside",
        "over",
        "past",
        "since",
        "through",
        "throughout",
        "till",
        "to",
        "toward",
        "towards",
        "under",
        "until",
        "up",
        "upon",
        "via",
        "with",
        "within",
        "without",
    ]
)
CONJUNCTIONS = frozenset(
    [
        "and",
        "or",
        "but",
        "nor",
        "yet",
        "so",
        "because",
        "although",
        "though",
        "while",
        "whereas",
        "if",
        "unless",
        "since",
        "whether",
    ]
)
CLAUSE_MARKERS = frozenset(
    ["that", "which", "who", "whom", "whose", "where", "when", "whether", "because", "if", "although", "while"]
)
AUXILIARIES = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "has",
        "have",
        "had",
        "having",
        "do",
        "does",
        "did",
        "will",
        "would",
        "shall",
        "should",
        "can",
        "could",
        "may",
        "might",
        "must",
        "'s",
        "'re",
        "'ve",
        "'d",
    ]
)
VERB_ENDINGS = ("ed", "es", "s", "ing", "en", "ize", "ise", "ate", "ify")

FEATURE_NAMES: tuple[str, ...] = (
    "confidence",
    "confidence_missing",
    "subject_tokens",
    "relation_tokens",
    "object_tokens",
    "object_empty",
    "subject_long",
    "object_long",
    "subject_pronoun_start",
    "object_pronoun_start",
    "subject_bare_pronoun",
    "object_bare_pronoun",
    "subject_demonstrative_start",
    "object_demonstrative_start",
    "pronouns_share",
    "determiners_share",
    "prepositions_share",
    "conjunctions_share",
    "subject_clause_marker",
    "object_clause_marker",
    "object_starts_preposition",
    "object_starts_to",
    "relation_verb_head",
    "relation_infinitive",
    "relation_has_preposition_end",
    "subject_capitalised",
    "object_capitalised",
    "digits",
    "quotes",
)

_TOKEN = re.compile(r"[A-Za-z]+(?:'[a-z]+)?|'[a-z]+|\d[\d.,%]*|\S")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text or "")


def _words(text: str) -> list[str]:
    return [token.lower() for token in tokens(text)]


def _starts(words: Sequence[str], vocabulary: frozenset[str]) -> float:
    return float(bool(words) and words[0] in vocabulary)


def _share(words: Sequence[str], vocabulary: frozenset[str]) -> float:
    return sum(word in vocabulary for word in words) / len(words) if words else 0.0


def bare_pronoun(text: str) -> bool:
    """The whole argument is one pronoun ("he", "it", "none of which" counts as pronoun-only)."""
    words = [word for word in _words(text) if word not in PREPOSITIONS]
    return bool(words) and all(word in PRONOUNS for word in words)


def verb_like(word: str) -> bool:
    return word in AUXILIARIES or (len(word) > 3 and word.endswith(VERB_ENDINGS))


def features(*, subject: str, relation: str, object: str, confidence: float | None) -> list[float]:
    """One row of FEATURE_NAMES for a tuple; lengths are token counts."""
    subj, rel, obj = _words(subject), _words(relation), _words(object)
    every = subj + rel + obj
    head = next((word for word in rel if word.isalpha() or word.startswith("'")), "")
    raw = f"{subject} {object}"
    return [
        float(confidence) if confidence is not None else 0.5,
        float(confidence is None),
        float(len(subj)),
        float(len(rel)),
        float(len(obj)),
        float(not obj),
        float(len(subj) > 10),
        float(len(obj) > 10),
        _starts(subj, PRONOUNS),
        _starts(obj, PRONOUNS),
        float(bare_pronoun(subject)),
        float(bare_pronoun(object)),
        _starts(subj, DEMONSTRATIVES),
        _starts(obj, DEMONSTRATIVES),
        _share(every, PRONOUNS),
        _share(every, DETERMINERS),
        _share(every, PREPOSITIONS),
        _share(every, CONJUNCTIONS),
        float(any(word in CLAUSE_MARKERS for word in subj)),
        float(any(word in CLAUSE_MARKERS for word in obj)),
        _starts(obj, PREPOSITIONS),
        float(bool(obj) and obj[0] == "to"),
        float(verb_like(head)),
        float(bool(rel) and rel[0] == "to"),
        float(bool(rel) and rel[-1] in PREPOSITIONS),
        float(bool(subject) and subject.strip()[:1].isupper()),
        float(bool(object) and object.strip()[:1].isupper()),
        float(any(char.isdigit() for char in raw)),
        float("``" in raw or '"' in raw or "''" in raw),
    ]


def known_weak(*, subject: str, relation: str, object: str) -> str:
    """A rule for a known-weak type, re-checked by a person whatever the classifier says:
    "bare_pronoun" when an argument is nothing but a pronoun; "" otherwise."""
    if bare_pronoun(subject) or bare_pronoun(object):
        return "bare_pronoun"
    return ""
