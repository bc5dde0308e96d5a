"""maps.workbench on PostgreSQL: building a map in importance order, merges, synthetic
relations, the one-relation-per-pair rule, finalising only when the checker agrees, versions."""

import pytest

from config.errors import Conflict
from maps import workbench
from maps.models import ConceptMap, Relation
from tests.maps.builders import WORDS, chain_topic, map_built, ranked_topic

pytestmark = pytest.mark.django_db


@pytest.fixture
def topic(campaign):
    return chain_topic(campaign=campaign, length=30)


def change(function, concept_map, user, **fields):
    return function(map_id=concept_map.pk, user=user, version=concept_map.version, **fields)


def concept(concept_map, label):
    return concept_map.concepts.get(label=label)


def test_a_map_of_24_chained_propositions_has_25_connected_concepts_and_can_be_final(topic, owner):
    concept_map = map_built(topic=topic, annotator=owner, relations=24)
    constraints = workbench.map_constraints(concept_map)
    assert (constraints.concepts, constraints.relations, constraints.connected) == (25, 24, True)
    assert constraints.met and concept_map.version == 25
    final = change(workbench.map_finalise, concept_map, owner)
    assert final.status == ConceptMap.Status.FINAL
    with pytest.raises(workbench.MapRefused, match="final"):
        change(workbench.proposition_include, final, owner, proposition_id=topic.revised_propositions.last().pk)


def test_finalising_is_refused_with_the_reasons_and_changes_nothing(topic, owner):
    concept_map = map_built(topic=topic, annotator=owner, relations=3)
    with pytest.raises(workbench.MapRefused, match="4 concepts, the target is 25"):
        change(workbench.map_finalise, concept_map, owner)
    concept_map.refresh_from_db()
    assert concept_map.status == ConceptMap.Status.DRAFT and concept_map.version == 4


def test_a_stale_version_is_a_conflict_not_an_overwrite(topic, owner):
    concept_map = map_built(topic=topic, annotator=owner, relations=2)
    first, second = topic.revised_propositions.order_by("position")[2:4]
    workbench.proposition_include(
        map_id=concept_map.pk, user=owner, version=concept_map.version, proposition_id=first.pk
    )
    with pytest.raises(Conflict, match="another tab"):  # the second tab still holds the old version
        workbench.proposition_include(
            map_id=concept_map.pk, user=owner, version=concept_map.version, proposition_id=second.pk
        )
    assert Relation.objects.filter(concept_map=concept_map).count() == 3


def test_another_annotator_cannot_change_a_map(topic, owner, django_user_model):
    other = django_user_model.objects.create_user("other")
    concept_map = map_built(topic=topic, annotator=owner, relations=1)
    with pytest.raises(workbench.NotYourMap):
        change(workbench.relation_remove, concept_map, other, relation_id=concept_map.relations.get().pk)
    theirs = workbench.map_open(topic=topic, annotator=other)
    assert theirs.pk != concept_map.pk and concept_map.relations.count() == 1


def test_merging_keeps_one_of_the_labels_and_moves_the_relations(campaign, owner):
    topic = ranked_topic(
        campaign=campaign,
        triples=[("student loans", "need", "a cosigner"), ("a loan", "has", "interest"), ("banks", "give", "loans")],
    )
    from maps.revision import revision_start

    revision_start(topic=topic)
    concept_map = map_built(topic=topic, annotator=owner, relations=3)
    suggestions = workbench.merge_suggestions(concept_map)
    assert {(a.label, b.label) for a, b, _ in suggestions} >= {("student loans", "a loan")}
    with pytest.raises(workbench.MapRefused, match="Keep one of"):
        change(
            workbench.concepts_merge,
            concept_map,
            owner,
            keep_id=concept(concept_map, "student loans").pk,
            merge_id=concept(concept_map, "a loan").pk,
            label="money",
        )
    merged = change(
        workbench.concepts_merge,
        concept_map,
        owner,
        keep_id=concept(concept_map, "student loans").pk,
        merge_id=concept(concept_map, "a loan").pk,
        label="a loan",
    )
    kept = merged.concepts.get(label="a loan")
    assert kept.merged_from == ["student loans", "a loan"]
    assert merged.relations.filter(source=kept).count() == 2
    assert workbench.map_constraints(merged).connected is False  # "banks → loans" is still apart


def test_a_second_relation_on_a_pair_is_refused_in_either_direction(topic, owner):
    concept_map = map_built(topic=topic, annotator=owner, relations=2)
    a, b = concept(concept_map, WORDS[0]), concept(concept_map, WORDS[1])
    with pytest.raises(workbench.MapRefused, match="already related"):
        change(workbench.synthetic_add, concept_map, owner, source_id=b.pk, target_id=a.pk, label="feeds")
    assert not concept_map.relations.filter(synthetic=True).exists()


def test_at_most_three_synthetic_relations(topic, owner):
    concept_map = map_built(topic=topic, annotator=owner, relations=6)
    pairs = [(0, 2), (0, 3), (0, 4), (0, 5)]
    for index, (x, y) in enumerate(pairs):
        fields = {"source_id": concept(concept_map, WORDS[x]).pk, "target_id": concept(concept_map, WORDS[y]).pk}
        if index < 3:
            concept_map = change(workbench.synthetic_add, concept_map, owner, label=f"linked {index}", **fields)
        else:
            with pytest.raises(workbench.MapRefused, match="At most 3"):
                change(workbench.synthetic_add, concept_map, owner, label="one too many", **fields)
    assert workbench.map_constraints(concept_map).synthetic == 3


def test_next_connecting_skips_what_would_not_connect(campaign, owner):
    topic = ranked_topic(
        campaign=campaign,
        triples=[("rain", "feeds", "rivers"), ("stars", "shine on", "deserts"), ("rivers", "reach", "the sea")],
    )
    from maps.revision import revision_start

    revision_start(topic=topic)
    concept_map = workbench.map_open(topic=topic, annotator=owner)
    first = workbench.next_connecting(concept_map)
    assert first.subject == "rain"
    concept_map = map_built(topic=topic, annotator=owner, relations=1)
    assert workbench.next_connecting(concept_map).object == "the sea"


def test_active_time_is_capped_per_heartbeat(topic, owner):
    concept_map = workbench.map_open(topic=topic, annotator=owner)
    assert workbench.active_time_record(map_id=concept_map.pk, user=owner, seconds=30) == 30
    assert workbench.active_time_record(map_id=concept_map.pk, user=owner, seconds=10_000) == 30 + 120
    concept_map.refresh_from_db()
    assert concept_map.version == 1  # time is not a content change
