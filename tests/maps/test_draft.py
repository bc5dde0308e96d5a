"""maps.draft: the automatic draft on PostgreSQL, its size limit, the largest map said when the
target cannot be reached, and the `map_draft` command; the jar agrees it passes (where Java is)."""

import pytest
from django.core.management import CommandError, call_command

from maps.checker import map_check
from maps.draft import Candidate, draft_select, map_draft
from maps.models import ConceptMap
from maps.workbench import map_propositions
from tests.maps.builders import chain_topic, ranked_topic

pytestmark = pytest.mark.django_db


def test_the_draft_stops_at_the_target_and_passes_the_checker(campaign):
    topic = chain_topic(campaign=campaign, length=30)
    result = map_draft(topic=topic)
    check = map_check(map_propositions(result.concept_map))
    assert (result.concepts, result.relations, check.concepts) == (25, 24, 25)
    assert check.passes and result.message == "Automatic draft: 25 concepts, 24 relations, connected."
    assert result.concept_map.kind == ConceptMap.Kind.AUTOMATIC
    assert map_draft(topic=topic).concept_map.pk != result.concept_map.pk
    assert ConceptMap.objects.filter(topic=topic, kind=ConceptMap.Kind.AUTOMATIC).count() == 1


def test_stemmed_labels_are_one_concept_and_the_largest_reachable_map_is_said(campaign):
    topic = ranked_topic(
        campaign=campaign,
        triples=[
            ("stars", "light", "deserts"),
            ("compost piles", "need", "air"),
            ("the compost pile", "holds", "worms"),  # "compost pile" ~ "compost piles"
            ("worms", "eat", "kitchen scraps"),
        ],
    )
    result = map_draft(topic=topic, target=25)
    labels = {p.source for p in map_propositions(result.concept_map)} | {
        p.target for p in map_propositions(result.concept_map)
    }
    assert result.concepts == 4 and "compost piles" in labels and "deserts" not in labels
    assert "no connected map of 25 concepts exists among the 4 propositions; the largest it reached has 4 concepts" in (
        result.message
    )


def test_draft_select_never_puts_two_relations_on_a_pair():
    candidates = [Candidate("a", "r", "b", None), Candidate("b", "r2", "a", None), Candidate("b", "r3", "c", None)]
    assert draft_select(candidates, target=25) == [0, 2]


def test_the_command_prints_the_result_and_names_the_topics(campaign, capsys):
    chain_topic(campaign=campaign, length=5)
    call_command("map_draft", "--campaign", "loans", "--topic", "alpha")
    out = capsys.readouterr().out
    assert "6 concepts, 5 relations" in out and "connected: true" in out
    with pytest.raises(CommandError, match="its topics: alpha"):
        call_command("map_draft", "--campaign", "loans", "--topic", "nope")
