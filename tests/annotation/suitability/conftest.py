"""Fixtures of the suitability tests: the shipped labelled CaRB set imported into a campaign."""

import csv
from pathlib import Path

import pytest

from annotation.models import Proposition
from annotation.text import normalize_text, proposition_text
from tests.factories import TopicFactory

DATA = Path(__file__).resolve().parents[2] / "data" / "suitability" / "carb_openie5_labelled.tsv"


def labelled_rows() -> list[dict]:
    with DATA.open(newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def import_labelled(campaign) -> dict[int, dict]:
    """The shipped tuples as propositions of `campaign` (one topic per `topic` column);
    proposition id → its row (gold label and reason)."""
    topics = {}
    gold = {}
    for row in labelled_rows():
        topic = topics.get(row["topic"]) or topics.setdefault(
            row["topic"], TopicFactory(campaign=campaign, key=row["topic"], state="importing")
        )
        text = proposition_text(row["subject"], row["relation"], row["object"])
        proposition = Proposition.objects.create(
            topic=topic,
            subject=row["subject"],
            relation=row["relation"],
            object=row["object"],
            normalized=normalize_text(text),
            confidence=float(row["confidence"]),
            source=row["sentence"],
            external_id=row["id"],
        )
        gold[proposition.pk] = row
    return gold


@pytest.fixture
def gold(campaign):
    return import_labelled(campaign)
