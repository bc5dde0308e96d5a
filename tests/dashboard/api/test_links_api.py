"""Participant links over the API: the channel through PATCH, links created, listed with
their counts and revoked; another researcher's campaign stays a 404."""

from crowd.models import ParticipantLink


def _links_campaign(api, campaign):
    response = api.put(f"/api/campaigns/{campaign.slug}/channel/", {"channel": "links"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "channel": "links",
        "environment": "local",
        "tasks_per_session": 10,
        "prolific_filters": [],
        "seconds_per_task": 45,
    }
    return campaign


def test_personal_links_are_created_listed_and_revoked(api, campaign):
    _links_campaign(api, campaign)

    created = api.post("/api/campaigns/loans/links/", {"labels": ["Dr. A", "Dr. B"]}, format="json")
    listed = api.get("/api/campaigns/loans/links/").json()
    revoked = api.post(f"/api/campaigns/loans/links/{created.json()[0]['id']}/revoke/")

    assert created.status_code == 201
    assert [link["label"] for link in created.json()] == ["Dr. A", "Dr. B"]
    assert created.json()[0]["url"].startswith("http") and "/s/l/" in created.json()[0]["url"]
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [(row["sessions"], row["tasks_done"], row["revoked"]) for row in rows] == [(0, 0, False)] * 2
    assert revoked.status_code == 200 and revoked.json()["revoked"] is True
    assert ParticipantLink.objects.filter(revoked_at__isnull=False).count() == 1


def test_an_open_link_and_bad_requests(api, campaign):
    _links_campaign(api, campaign)

    opened = api.post("/api/campaigns/loans/links/", {"kind": "open", "labels": ["seminar"]}, format="json")
    no_labels = api.post("/api/campaigns/loans/links/", {"kind": "personal"}, format="json")
    bad_kind = api.post("/api/campaigns/loans/links/", {"kind": "secret"}, format="json")

    assert opened.status_code == 201 and opened.json()[0]["kind"] == "open"
    assert no_labels.status_code == 400 and "labels" in no_labels.json()
    assert bad_kind.status_code == 400 and "kind" in bad_kind.json()
    assert ParticipantLink.objects.count() == 1


def test_links_need_the_links_channel(api, campaign):
    refused = api.post("/api/campaigns/loans/links/", {"labels": ["Dr. A"]}, format="json")

    assert refused.status_code == 400 and refused.json()["code"] == "channel_mismatch"
    assert not ParticipantLink.objects.exists()


def test_another_researchers_links_are_not_found(api, other_researcher, campaign):
    from tests.dashboard.api.conftest import client_for

    _links_campaign(api, campaign)
    api.post("/api/campaigns/loans/links/", {"labels": ["Dr. A"]}, format="json")
    intruder = client_for(other_researcher)

    assert intruder.get("/api/campaigns/loans/links/").status_code == 404
    assert intruder.post("/api/campaigns/loans/links/", {"labels": ["x"]}, format="json").status_code == 404
    assert intruder.post(f"/api/campaigns/loans/links/{ParticipantLink.objects.get().pk}/revoke/").status_code == 404


def test_the_channel_is_fixed_once_something_is_published(api, campaign):
    from tests.annotation.test_campaigns import published

    published(campaign)

    refused = api.put("/api/campaigns/loans/channel/", {"channel": "prolific", "tasks_per_session": 5}, format="json")
    bad = api.put("/api/campaigns/loans/channel/", {"channel": "carrier-pigeon"}, format="json")
    same = api.put("/api/campaigns/loans/channel/", {"channel": "mturk"}, format="json")

    assert refused.status_code == 409 and refused.json()["code"] == "settings_fixed"
    assert refused.json()["message"].startswith(
        "Campaign 'loans' has published work: channel, tasks_per_session can no longer be changed."
    )
    assert bad.status_code == 400 and "channel" in bad.json()
    assert same.status_code == 200  # sending the stored channel back changes nothing
    campaign.refresh_from_db()
    assert (campaign.channel, campaign.tasks_per_session) == ("mturk", 10)


def test_prolific_filters_are_set_and_checked_through_the_api(api, campaign):
    filters = [{"filter_id": "approval_rate", "selected_range": {"lower": 95}}]

    saved = api.put(
        "/api/campaigns/loans/channel/", {"channel": "prolific", "prolific_filters": filters}, format="json"
    )
    bad = api.put(
        "/api/campaigns/loans/channel/",
        {"channel": "prolific", "prolific_filters": [{"filter_id": "age", "selected_range": {}}]},
        format="json",
    )

    assert saved.status_code == 200 and saved.json()["prolific_filters"] == filters
    assert bad.status_code == 400 and "filter 1 (age)" in str(bad.json()["prolific_filters"])
    assert api.get("/api/campaigns/loans/channel/").json()["prolific_filters"] == filters
