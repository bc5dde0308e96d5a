"""The import's guards on topics (annotation/importing/topics.py): a topic comes into being only
with a proposition, a topic whose Likert round is built takes no new one, and a topics file
reports the keys nothing else names instead of creating empty topics. Nothing is written when
a guard refuses."""

import io

import pytest

from annotation.importing.importers import ImportFailed
from annotation.models import Batch, ImportRecord, Proposition, Topic
from tests.annotation.test_importers import TSV, run_import
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory

pytestmark = pytest.mark.django_db

HEADER = "topic\tsubject\trelation\tobject\tconfidence\n"


@pytest.fixture
def campaign():
    return CampaignFactory(slug="c1")


def snapshot(campaign) -> dict:
    return {
        "topics": sorted(Topic.objects.filter(campaign=campaign).values_list("key", "description", "state")),
        "propositions": sorted(Proposition.objects.filter(topic__campaign=campaign).values_list("pk", flat=True)),
        "imports": ImportRecord.objects.filter(campaign=campaign).count(),
    }


def topics_file(text: str) -> dict:
    return {"topics_source": io.BytesIO(text.encode()), "topics_filename": "topics.tsv"}


@pytest.mark.parametrize(
    "state, reason",
    [
        (Topic.State.DONE, "it is done: its ranking is final"),
        (Topic.State.LIKERT, "it is in its Likert round"),
        (Topic.State.COMPARISONS, "it is in its comparison rounds"),
    ],
)
def test_a_topic_past_importing_refuses_new_propositions_and_nothing_is_written(campaign, state, reason):
    loans = TopicFactory(campaign=campaign, key="loans", description="paying for college", state=state)
    PropositionFactory(topic=loans, subject="federal loans", relation="do not require", object="a credit check")
    before = snapshot(campaign)
    text = HEADER + "bees\tmites\tweaken\tcolonies\t0.9\nloans\tgrants\tcover\ttuition\t0.9\nloans\tx\ty\tz\t0.9\n"

    with pytest.raises(ImportFailed) as raised:
        run_import(campaign, text)

    assert raised.value.details == [
        f"props.tsv:3 [topic]: topic 'loans' takes no new propositions ({reason}): they would never be rated; "
        "import them under a new topic key"
    ]
    assert snapshot(campaign) == before  # not even the new topic 'bees'


def test_a_topic_whose_likert_round_is_built_refuses_new_propositions(campaign):
    loans = TopicFactory(campaign=campaign, key="loans", state=Topic.State.IMPORTING)  # built, not published
    Batch.objects.create(topic=loans, kind=Batch.Kind.LIKERT, number=0)
    before = snapshot(campaign)

    with pytest.raises(ImportFailed) as raised:
        run_import(campaign, HEADER + "loans\tgrants\tcover\ttuition\t0.9\n")

    assert "topic 'loans' takes no new propositions (its Likert round is built)" in raised.value.details[0]
    assert snapshot(campaign) == before


def test_a_done_topic_takes_the_same_file_again_as_duplicates(campaign):
    """Importing the file a finished topic came from adds nothing, so it is not refused."""
    run_import(campaign, TSV)
    Topic.objects.filter(key="loans").update(state=Topic.State.DONE)

    summary = run_import(campaign, TSV)

    assert vars(summary.topics["loans"]) == {
        "read": 3,
        "kept": 0,
        "below_threshold": 1,
        "duplicates": 2,
        "ids_filled": 0,
    }
    assert Proposition.objects.count() == 2


def test_subtle_traps_for_a_done_topic_are_refused_too(campaign):
    TopicFactory(campaign=campaign, key="loans", state=Topic.State.DONE)
    with pytest.raises(ImportFailed) as raised:
        run_import(campaign, HEADER + "loans\tthe council\tapproved\ta garage\t\n", trap_kind="subtle")
    assert "topic 'loans' takes no new propositions" in raised.value.details[0]
    assert not Proposition.objects.exists()


def test_topics_file_keys_without_propositions_are_reported_and_create_nothing(campaign):
    topics = "key\tdescription\nloans\tpaying for college\nbess\ta typo of bees\nbees\tcolony collapse\n"
    summary = run_import(campaign, TSV, **topics_file(topics))

    assert sorted(Topic.objects.values_list("key", "description")) == [
        ("bees", "colony collapse"),
        ("loans", "paying for college"),
    ]
    assert summary.warnings == [
        "topics.tsv:3 [key]: the campaign has no topic 'bess' and props.tsv has no proposition for it, so its "
        "description was not used and no topic was created"
    ]
    assert sorted(summary.created_topics) == ["bees", "loans"]


def test_a_topics_file_describes_the_campaigns_other_topics(campaign):
    TopicFactory(campaign=campaign, key="sleep", description="", state=Topic.State.IMPORTING)
    run_import(campaign, TSV, **topics_file("key\tdescription\nsleep\tteenage sleep\n"))
    assert Topic.objects.get(key="sleep").description == "teenage sleep"


def test_a_published_topics_description_cannot_change(campaign):
    TopicFactory(campaign=campaign, key="sleep", description="teenage sleep", state=Topic.State.LIKERT)
    before = snapshot(campaign)

    with pytest.raises(ImportFailed) as raised:
        run_import(campaign, TSV, **topics_file("key\tdescription\nsleep\tsleep of teenagers\n"))

    assert raised.value.details == [
        "topics.tsv:2 [description]: the description of topic 'sleep' cannot change (it is in its Likert round): "
        "it is what its workers read"
    ]
    assert snapshot(campaign) == before


def test_the_same_description_of_a_published_topic_is_fine(campaign):
    TopicFactory(campaign=campaign, key="sleep", description="teenage sleep", state=Topic.State.DONE)
    run_import(campaign, TSV, **topics_file("key\tdescription\nsleep\tteenage sleep\n"))
    assert Topic.objects.get(key="sleep").description == "teenage sleep"


def test_a_key_whose_rows_are_all_below_the_threshold_creates_no_topic(campaign):
    summary = run_import(campaign, HEADER + "loans\ta\tb\tc\t0.9\nbees\td\te\tf\t0.2\nbees\tg\th\ti\t0.1\n")

    assert list(Topic.objects.values_list("key", flat=True)) == ["loans"]
    assert vars(summary.topics["bees"]) == {
        "read": 2,
        "kept": 0,
        "below_threshold": 2,
        "duplicates": 0,
        "ids_filled": 0,
    }
    assert "topic 'bees': all its 2 row(s) are below the confidence threshold (0.5), so no topic was created" in (
        summary.warnings
    )
    assert summary.created_topics == ["loans"]
