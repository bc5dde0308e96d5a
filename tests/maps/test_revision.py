"""maps.revision on PostgreSQL: the crowd's top 50 with a tie at the cut in whole, conjunction
splits, span edits kept to the source sentence's words, added propositions, "50 → n"."""

import pytest

from maps.models import RevisedProposition
from maps.revision import (
    RevisionError,
    proposition_add,
    proposition_span_edit,
    proposition_split,
    revision_start,
    revision_summary,
    split_suggestions,
)
from ranking.models import PropositionScore
from tests.maps.builders import chain_triples, ranked_topic

pytestmark = pytest.mark.django_db


def test_the_revision_starts_from_the_top_50_in_ranking_order(campaign):
    topic = ranked_topic(campaign=campaign, triples=chain_triples(60))
    started = revision_start(topic=topic)
    assert (started.created, started.tie_note) == (50, "")
    revised = list(topic.revised_propositions.order_by("position"))
    assert [p.position for p in revised] == [p.crowd_rank for p in revised] == list(range(1, 51))
    assert all(p.operation == RevisedProposition.Operation.KEPT and p.revised_from_id for p in revised)
    assert revision_start(topic=topic).created == 0  # once per topic
    assert revision_summary(topic=topic) == {
        "sources": 50,
        "revised": 50,
        "kept": 50,
        "split": 0,
        "span_edit": 0,
        "added": 0,
    }


def test_a_tie_at_the_cut_comes_in_whole_and_is_said(campaign):
    topic = ranked_topic(campaign=campaign, triples=chain_triples(60))
    PropositionScore.objects.filter(proposition__topic=topic, likert_mean__lte=5 - 47 / 100).update(likert_mean=1.0)
    started = revision_start(topic=topic)  # ranks 48-60 tied
    assert started.created == 60 and "Ranks 48–60 are tied" in started.tie_note


def test_a_conjunction_is_split_in_place_keeping_its_source(campaign):
    topic = ranked_topic(
        campaign=campaign,
        triples=[("rain", "feeds", "rivers"), ("compost", "needs", "air, water and warmth"), ("sun", "dries", "soil")],
    )
    revision_start(topic=topic)
    original = topic.revised_propositions.get(position=2)
    (suggestion,) = split_suggestions(original)
    assert (suggestion.field, suggestion.parts) == ("object", ("air", "water", "warmth"))
    made = proposition_split(topic=topic, proposition_id=original.pk, field="object", parts=list(suggestion.parts))
    rows = list(topic.revised_propositions.order_by("position").values_list("position", "object", "operation"))
    assert rows == [
        (1, "rivers", "kept"),
        (2, "air", "split"),
        (3, "water", "split"),
        (4, "warmth", "split"),
        (5, "soil", "kept"),
    ]
    assert {p.revised_from_id for p in made} == {original.revised_from_id}
    assert revision_summary(topic=topic)["sources"] == 3 and revision_summary(topic=topic)["revised"] == 5


def test_span_edits_keep_to_the_source_sentence(campaign):
    sentence = "Most compost piles need a balance of green and brown materials to heat up."
    topic = ranked_topic(
        campaign=campaign, triples=[("compost piles", "need", "a balance of green")], sources=[sentence]
    )
    revision_start(topic=topic)
    proposition = topic.revised_propositions.get()
    with pytest.raises(RevisionError, match="not in it: yellow"):
        proposition_span_edit(
            topic=topic,
            proposition_id=proposition.pk,
            subject="compost piles",
            relation="need",
            object="yellow materials",
        )
    proposition.refresh_from_db()
    assert proposition.object == "a balance of green" and proposition.operation == "kept"
    edited = proposition_span_edit(
        topic=topic,
        proposition_id=proposition.pk,
        subject="compost piles",
        relation="need",
        object="a balance of green and brown materials",
    )
    assert edited.operation == "span_edit" and edited.object == "a balance of green and brown materials"


def test_an_added_proposition_comes_last_with_no_source(campaign):
    topic = ranked_topic(campaign=campaign, triples=chain_triples(3))
    revision_start(topic=topic)
    added = proposition_add(topic=topic, subject="worms", relation="eat", object="scraps")
    assert (added.position, added.revised_from, added.operation) == (4, None, "added")
    with pytest.raises(RevisionError, match="cannot be empty"):
        proposition_add(topic=topic, subject=" ", relation="eat", object="scraps")


def test_a_document_name_as_source_limits_no_span_edit(campaign):
    topic = ranked_topic(campaign=campaign, triples=[("compost piles", "need", "air")], sources=["doc01.html"])
    revision_start(topic=topic)
    proposition = topic.revised_propositions.get()
    edited = proposition_span_edit(
        topic=topic, proposition_id=proposition.pk, subject="compost piles", relation="need", object="fresh air"
    )
    assert edited.object == "fresh air"
