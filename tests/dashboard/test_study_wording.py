"""Issue 25, point 7: pages say what a links or Prolific campaign's researcher does — no MTurk
words outside MTurk campaigns, money with currency and two decimals, the page's words in
quality.csv, "Not published" before a topic is, and how a colleague without an account gets one."""

import csv
import io
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Batch, Campaign
from crowd.models import Study, StudyBatch
from crowd.qc.worker_quality import campaign_quality_refresh
from tests.crowd.quality_data import TRAPS, LabelBuilder, small_crowd_labels
from tests.factories import BatchFactory, CampaignFactory, PropositionFactory, TopicFactory

pytestmark = pytest.mark.django_db


def links_campaign(owner, **options) -> Campaign:
    return CampaignFactory(owner=owner, slug="study", channel=Campaign.Channel.LINKS, **options)


def test_the_campaign_list_and_form_use_the_channels_words(owner_client, owner):
    links_campaign(owner)
    mturk = CampaignFactory(owner=owner, slug="old", channel=Campaign.Channel.MTURK)
    TopicFactory(campaign=mturk)

    listing = owner_client.get(reverse("dashboard:campaigns")).content.decode()
    assert "Answers submitted" in listing or "Nothing published yet" in listing
    form = owner_client.get(reverse("dashboard:campaign-create")).content.decode()
    settings_page = owner_client.get(reverse("dashboard:campaign-settings", args=["study"])).content.decode()

    for page in (form, settings_page):
        assert "Likert task reward (US$)" in page and "Answers per task" in page and "per Likert task" in page
        assert "HIT" not in page.replace("hit-", "") and "on MTurk" not in page


def test_the_quality_report_speaks_of_tasks_and_its_csv_says_included(owner_client, owner):
    campaign = links_campaign(owner, qc_max_label_share=0.3)
    builder = LabelBuilder(TopicFactory(campaign=campaign, key="loans"))
    builder.likert(small_crowd_labels(), TRAPS)
    campaign_quality_refresh(campaign_id=campaign.pk)

    page = owner_client.get(reverse("crowd:campaign-quality", args=["study"])).content.decode()
    rows = list(
        csv.DictReader(
            io.StringIO(owner_client.get(reverse("crowd:campaign-quality-csv", args=["study"])).content.decode())
        )
    )

    assert "Time per task" in page and "median seconds per task" in page and "per HIT" not in page
    assert {row["status"] for row in rows} == {"included", "excluded"}
    assert {row["computed_status"] for row in rows} <= {"included", "excluded"} and "ok" not in {
        row["override_status"] for row in rows
    }


def test_a_never_published_topic_says_not_published(owner_client, owner):
    campaign = links_campaign(owner)
    topic = TopicFactory(campaign=campaign, key="loans", description="paying for college", state="importing")
    PropositionFactory.create_batch(3, topic=topic)

    page = owner_client.get(reverse("dashboard:campaign", args=["study"])).content.decode()
    progress = owner_client.get(reverse("dashboard:campaign-progress", args=["study"])).json()

    assert 'data-state="importing">Not published</span>' in page and ">Importing<" not in page
    assert progress["topics"][0]["state_label"] == "Not published"


def test_prolific_study_rewards_have_currency_and_two_decimals(owner_client, owner):
    campaign = CampaignFactory(owner=owner, slug="pro", channel=Campaign.Channel.PROLIFIC)
    batch = BatchFactory(topic=TopicFactory(campaign=campaign), kind=Batch.Kind.LIKERT)
    study = Study.objects.create(
        topic=batch.topic, kind=batch.kind, places=7, reward_cents=120, internal_name="s1", completion_code="C1"
    )
    StudyBatch.objects.create(study=study, batch=batch, places=7, places_to=7)

    page = owner_client.get(reverse("crowd:campaign-channel", args=["pro"])).content.decode()

    assert "<td>$1.20</td>" in page and "¢" not in page


def test_adding_a_colleague_without_an_account_says_how_to_make_one(owner_client, owner):
    campaign = links_campaign(owner)

    members = owner_client.get(reverse("dashboard:members", args=[campaign.slug])).content.decode()
    refused = owner_client.post(
        reverse("dashboard:member-add", args=[campaign.slug]), {"username": "ana", "role": "view"}
    )

    assert 'id="no-account"' in members and "python manage.py create_researcher" in members
    assert reverse("admin:auth_user_add") in members
    assert "python manage.py create_researcher ana" in refused.content.decode()


def test_create_researcher_makes_an_account_with_a_first_password():
    out = StringIO()

    call_command("create_researcher", "ana", stdout=out)

    username, password = out.getvalue().split("\n")[0].removeprefix("Created ").split(" / ")
    user = get_user_model().objects.get(username="ana")
    assert username == "ana" and user.check_password(password) and not user.is_staff and not user.is_superuser
    with pytest.raises(CommandError, match="has an account already"):
        call_command("create_researcher", "ana", stdout=StringIO())
