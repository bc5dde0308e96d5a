"""The researcher's channel page: choose the channel, create, list and revoke participant
links, see per-participant counts; someone else's campaign is a 404."""

import pytest
from django.contrib.messages import get_messages

from annotation.models import Campaign
from crowd.models import ParticipantLink
from crowd.sessions import holds
from tests.annotation.test_campaigns import published


def _messages(response):
    return [str(message) for message in get_messages(response.wsgi_request)]


def test_the_channel_and_the_session_length_are_chosen_on_the_page(owner_client, campaign):
    page = owner_client.get("/campaigns/loans/channel/")
    saved = owner_client.post(
        "/campaigns/loans/channel/set/", {"channel": "links", "environment": "local", "tasks_per_session": 8}
    )

    assert page.status_code == 200 and b"Where workers come from" in page.content
    assert saved.status_code == 302 and _messages(saved) == ["Channel settings saved."]
    campaign.refresh_from_db()
    assert (campaign.channel, campaign.tasks_per_session) == ("links", 8)


APPROVAL_95 = '[{"filter_id": "approval_rate", "selected_range": {"lower": 95}}]'
FILTER_PAGE = {"channel": "prolific", "environment": "local", "tasks_per_session": 10}


def test_prolific_filters_are_checked_saved_and_shown_again(owner_client, campaign):
    campaign.channel_settings = {"prolific": {"seconds_per_task": 30}}
    campaign.save(update_fields=["channel_settings"])

    saved = owner_client.post("/campaigns/loans/channel/set/", {**FILTER_PAGE, "prolific_filters": APPROVAL_95})

    assert saved.status_code == 302
    campaign.refresh_from_db()
    assert campaign.channel_settings == {
        "prolific": {
            "seconds_per_task": 30,
            "filters": [{"filter_id": "approval_rate", "selected_range": {"lower": 95}}],
        }
    }
    page = owner_client.get("/campaigns/loans/channel/").content.decode()
    assert 'name="approval_rate_min" value="95"' in page  # in its field, to edit (tests/dashboard/test_channel_form.py)
    owner_client.post("/campaigns/loans/channel/set/", {**FILTER_PAGE, "prolific_filters": ""})
    campaign.refresh_from_db()
    assert campaign.channel_settings["prolific"]["filters"] == []


@pytest.mark.parametrize(
    "text, message",
    [
        ('[{"filter_id": "approval_rate", "selected_range": {"lower": 95}', "Not JSON: Expecting"),
        ('{"filter_id": "handedness"}', "must be a JSON list"),
        ('[{"selected_values": ["0"]}]', "filter 1: &quot;filter_id&quot; is missing"),
        (
            '[{"filter_id": "handedness", "selected_values": []}]',
            "filter 1 (handedness): &quot;selected_values&quot; must",
        ),
        ('[{"filter_id": "age", "selected_range": {"lower": 40, "upper": 30}}]', "lower 40 is above upper 30"),
        ('[{"filter_id": "age"}]', "give either"),
        ('[{"filter_id": "age", "selected_range": {"lower": "18"}}]', "bounds must be numbers"),
        ('[{"filter_id": "handedness", "selected_values": ["0"], "weightings": {"1": 1}}]', "weightings"),
        ('[{"filter_id": "handedness", "selected_values": ["0"], "colour": "red"}]', "unknown field"),
        ('[{"filter_id": "age", "selected_range": {"lower": NaN}}]', "bounds must be numbers"),
        ('[{"filter_id": "x", "selected_values": [[1]], "weightings": {"1": 1}}]', "choice ids, as texts"),
    ],
)
def test_bad_prolific_filters_are_refused_with_what_is_wrong(owner_client, campaign, text, message):
    refused = owner_client.post("/campaigns/loans/channel/set/", {**FILTER_PAGE, "prolific_filters": text})

    assert refused.status_code == 400 and message in refused.content.decode()
    campaign.refresh_from_db()
    assert campaign.channel == "mturk" and "prolific" not in campaign.channel_settings  # nothing saved


def test_links_are_created_shown_downloaded_and_revoked(owner_client, campaign):
    Campaign.objects.filter(pk=campaign.pk).update(channel="links")
    missing = owner_client.post("/campaigns/loans/links/new/", {"kind": "personal", "labels": "  "})
    owner_client.post("/campaigns/loans/links/new/", {"kind": "personal", "labels": "Dr. A\nDr. B\n"})
    owner_client.post("/campaigns/loans/links/new/", {"kind": "open", "labels": "seminar"})
    first = ParticipantLink.objects.order_by("pk").first()
    revoked = owner_client.post(f"/campaigns/loans/links/{first.pk}/revoke/")
    page = owner_client.get("/campaigns/loans/channel/").content.decode()
    listing = owner_client.get("/campaigns/loans/links.csv").content.decode().splitlines()

    assert missing.status_code == 400 and "Write one line per person" in missing.content.decode()
    assert ParticipantLink.objects.count() == 3
    assert _messages(revoked)[-1] == "Link revoked."
    assert "Dr. B" in page and f"/s/l/{first.token}/" in page and "(revoked)" in page
    assert listing[0] == "label,kind,url,revoked,consent_version" and len(listing) == 4
    assert listing[1].endswith(",yes,")  # revoked; nobody agreed to a consent text through it


def test_the_labels_are_offered_for_personal_links_only_and_an_open_link_ignores_them(owner_client, campaign):
    Campaign.objects.filter(pk=campaign.pk).update(channel="links")

    page = owner_client.get("/campaigns/loans/channel/").content.decode()
    # Typed for personal links, then "open" chosen (without the script that hides the field).
    opened = owner_client.post("/campaigns/loans/links/new/", {"kind": "open", "labels": "Dr. A\nDr. B\n"})
    many = owner_client.post("/campaigns/loans/links/new/", {"kind": "open", "labels": "x\n" * 501})

    # The labels are in the group the script hides when another kind is chosen; the kind is not.
    group = page.index('<div data-shown-for-kind="personal">')
    assert page.index('name="kind"') < group < page.index('name="labels"') < page.index("Create</button>")
    assert "For personal links only: one line per invited person" in page
    assert "js/links-form.js" in page
    assert opened.status_code == 302 and many.status_code == 302
    assert list(ParticipantLink.objects.values_list("kind", "label")) == [("open", ""), ("open", "")]


def test_the_participants_table_counts_sessions_and_tasks(owner_client, campaign):
    from tests.crowd.sessions.conftest import links_batch

    batch = links_batch()
    batch.topic.campaign.owner = campaign.owner
    batch.topic.campaign.save()
    from crowd.channels.links import links

    link = links.link_create(campaign=batch.topic.campaign, label="Dr. Expert")
    holds.link_session_open(link=link, worker=link.worker)

    page = owner_client.get(f"/campaigns/{batch.topic.campaign.slug}/channel/").content.decode()

    assert "Dr. Expert" in page and "Participants" in page


def test_the_channel_is_fixed_after_publishing(owner_client, campaign):
    published(campaign)

    page = owner_client.get("/campaigns/loans/channel/").content.decode()
    refused = owner_client.post(
        "/campaigns/loans/channel/set/", {"channel": "prolific", "environment": "local", "tasks_per_session": 10}
    )

    assert "has published on Amazon Mechanical Turk; its channel is fixed" in page
    assert refused.status_code == 409
    refusal = refused.content.decode()
    assert "Campaign &#x27;loans&#x27; has published work: channel can no longer be changed." in refusal
    # The page shows the campaign as stored, never the refused channel as if it were in use.
    assert "has published on Amazon Mechanical Turk" in refusal and "Prolific studies" not in refusal
    campaign.refresh_from_db()
    assert (campaign.channel, campaign.tasks_per_session) == ("mturk", 10)


def test_a_draft_changes_its_channel_on_the_page_after_a_refused_attempt_writes_nothing(owner_client, campaign):
    """All or nothing: bad filters refuse the whole change, channel included."""
    refused = owner_client.post(
        "/campaigns/loans/channel/set/",
        {"channel": "prolific", "environment": "local", "tasks_per_session": 4, "prolific_filters": "[{}]"},
    )
    saved = owner_client.post(
        "/campaigns/loans/channel/set/", {"channel": "prolific", "environment": "local", "tasks_per_session": 4}
    )

    assert refused.status_code == 400 and saved.status_code == 302
    campaign.refresh_from_db()
    assert (campaign.channel, campaign.tasks_per_session) == ("prolific", 4)


def test_the_channel_page_names_the_channel_the_work_was_published_on(owner_client, campaign):
    """Even if the campaign's own field says otherwise (written around every guard), the page
    reads where its HITs are."""
    published(campaign)
    Campaign.objects.filter(pk=campaign.pk).update(channel="prolific")

    page = owner_client.get("/campaigns/loans/channel/").content.decode()

    assert "has published on Amazon Mechanical Turk; its channel is fixed" in page


def test_another_researchers_channel_page_is_not_found(client, campaign, django_user_model):
    client.force_login(django_user_model.objects.create_user("grace", password="pw-for-tests-only"))

    assert client.get("/campaigns/loans/channel/").status_code == 404
    assert client.post("/campaigns/loans/links/new/", {"kind": "open"}).status_code == 404
    assert client.get("/campaigns/loans/links.csv").status_code == 404


def test_the_channel_page_needs_a_login(client, campaign):
    assert client.get("/campaigns/loans/channel/").status_code == 302
