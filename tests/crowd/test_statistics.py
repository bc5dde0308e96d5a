"""The crowd-level statistics the QC job stores (crowd.qc.statistics): per campaign and per
topic, hand-checked figures, and recomputed only where their inputs changed."""

import pytest

from crowd.models import QualityStatistics
from crowd.qc.worker_quality import campaign_quality_refresh, worker_quality_override
from tests.crowd.quality_data import TRUTH, three_topic_campaign
from tests.factories import CampaignFactory, TopicFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign():
    return three_topic_campaign()


def stored(campaign, key=None) -> QualityStatistics:
    return (
        QualityStatistics.objects.get(campaign=campaign, topic__key=key)
        if key
        else (QualityStatistics.objects.get(campaign=campaign, topic__isnull=True))
    )


def test_refresh_stores_the_campaign_and_each_topic(campaign):
    campaign_quality_refresh(campaign_id=campaign.pk)
    assert QualityStatistics.objects.filter(campaign=campaign).count() == 4  # the campaign and 3 topics

    everything, loans, bees, empty = (stored(campaign, key) for key in (None, "loans", "bees", "empty"))
    # 84 + 30 labels; rev's and careless's 24 are excluded.
    assert (everything.figures["labels"], everything.figures["excluded_labels"], everything.figures["votes"]) == (
        114,
        24,
        0,
    )
    assert (loans.figures["labels"], loans.figures["excluded_labels"], bees.figures["labels"]) == (84, 24, 30)
    assert (empty.figures["labels"], empty.figures["workers"], empty.workers) == (0, 0, [])
    assert sorted(bees.workers) == sorted(w.pk for w in campaign.builders["bees"].workers.values())
    # Without rev and careless every loans item has five identical labels: agreement 1.
    assert loans.figures["alpha"][1] == pytest.approx(1.0)
    assert loans.figures["likert_agreement"][1] == pytest.approx(1.0)
    assert loans.figures["alpha"][0] < 1.0
    # Traps: obvious rated 1 by six workers and 5 by careless: 11/7; subtle (6 + 4)/7 = 10/7.
    assert loans.figures["trap_means"] == {"obvious": [pytest.approx(11 / 7), 7], "subtle": [pytest.approx(10 / 7), 7]}
    assert [point[0] for point in bees.figures["stability"]] == [1, 2, 3]
    # The campaign's own figures: rev (r = −1) is the one excluded for its correlation.
    assert everything.figures["loo_cutoff"] == pytest.approx(-1.0)
    assert everything.figures["seconds_per_hit"] == {}  # no time on task recorded
    assert sum(everything.figures["loo_histogram"]) == 10  # every worker has an r
    assert everything.computed_at == loans.computed_at


def test_costly_figures_are_recomputed_only_where_their_inputs_changed(campaign):
    campaign_quality_refresh(campaign_id=campaign.pk)
    # Mark the stored figures: a recomputation replaces the mark.
    for row in QualityStatistics.objects.filter(campaign=campaign):
        row.figures["alpha"] = ["mark", "mark"]
        row.save(update_fields=["figures"])

    campaign.builders["bees"].likert([("b9", f"bee-{item}", t) for item, t in TRUTH.items()])
    campaign_quality_refresh(campaign_id=campaign.pk)
    assert stored(campaign, "loans").figures["alpha"] == ["mark", "mark"]  # nothing new in loans
    assert stored(campaign, "bees").figures["alpha"] == [pytest.approx(1.0), pytest.approx(1.0)]
    assert stored(campaign, None).figures["alpha"] != ["mark", "mark"]
    assert stored(campaign, "loans").figures["labels"] == 84  # the cheap figures are always fresh

    # Excluding one of loans' workers changes what "without the excluded" rests on.
    worker_quality_override(
        campaign_id=campaign.pk,
        worker_id=campaign.builders["loans"].workers["g1"].pk,
        status="excluded",
        reason="Checked by hand.",
        user=None,
    )
    campaign_quality_refresh(campaign_id=campaign.pk)
    assert stored(campaign, "loans").figures["alpha"][1] == pytest.approx(1.0)
    assert stored(campaign, "loans").figures["excluded_labels"] == 36


def test_a_refresh_without_labels_stores_empty_figures():
    campaign = CampaignFactory()
    TopicFactory(campaign=campaign, key="loans")
    campaign_quality_refresh(campaign_id=campaign.pk)
    everything = stored(campaign)
    assert everything.figures["labels"] == 0 and everything.figures["alpha"] == [None, None]
    assert everything.figures["stability"] == [] and everything.figures["loo_cutoff"] is None
