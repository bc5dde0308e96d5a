"""An open link's participant codes (issue 24 N3, issue 25 point 7), over HTTP: restricted by
the researcher to a list or a pattern on the Channel page (crowd.channels.links.codes), read
without case or surrounding spaces, and an old mixed-case code found as it was stored."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from crowd.channels.links import links
from crowd.models import ParticipantLink, Worker, WorkSession
from crowd.sessions import holds
from tests.crowd.sessions.conftest import links_batch
from tests.crowd.sessions.test_session_pages import _start

pytestmark = pytest.mark.django_db

CATASTROPHIC = "(?:a{1,3}){1,40}b"  # backtracks for minutes on 39 a's with Python's own engine


@pytest.fixture
def world():
    batch = links_batch(propositions=10, tasks_per_session=2, assignments=2)
    campaign = batch.topic.campaign
    campaign.owner = get_user_model().objects.create_user("ada")
    campaign.save(update_fields=["owner"])
    researcher = Client()
    researcher.force_login(campaign.owner)
    link = links.link_create(campaign=campaign, kind="open", label="lab")
    return campaign, link, researcher


def _codes(researcher, link, codes="", pattern=""):
    url = f"/campaigns/{link.campaign.slug}/links/{link.pk}/codes/"
    return researcher.post(url, {f"link{link.pk}-codes": codes, f"link{link.pk}-code_pattern": pattern})


def test_a_link_restricted_to_a_list_lets_in_its_codes_only_and_refuses_others_politely(world):
    campaign, link, researcher = world
    saved = _codes(researcher, link, codes="P-017\n  p-018  \n\nP-017\n")
    assert saved.status_code == 302
    link.refresh_from_db()
    assert link.codes_allowed == "p-017\np-018"  # normalised, blank lines and repeats left out
    page = researcher.get(f"/campaigns/{campaign.slug}/channel/").content.decode()
    assert "Lets in 2 listed codes" in page

    participant = Client()
    refused = _start(participant, link, code="P-999")
    assert refused.status_code == 403
    assert "not one the researcher gave out for this study" in refused.content.decode()
    assert not WorkSession.objects.exists() and not Worker.objects.filter(external_id__contains="999").exists()

    assert _start(participant, link, code="P-018").status_code == 302


def test_a_pattern_lets_in_what_it_matches_whatever_the_case(world):
    _, link, researcher = world
    assert _codes(researcher, link, pattern="P-[0-9]{3}").status_code == 302

    assert _start(Client(), link, code="Q-001").status_code == 403
    assert _start(Client(), link, code="P-0011").status_code == 403  # the whole code must match
    assert _start(Client(), link, code="p-001").status_code == 302
    assert Worker.objects.filter(external_id=f"link{link.pk}-p-001").count() == 1
    assert WorkSession.objects.count() == 1


@pytest.mark.parametrize(
    ("codes", "pattern", "field", "message"),
    [
        ("P-001\nno spaces inside\nP-003\n<script>", "", "codes", "line 2, line 4"),
        ("", "P-[0-9", "code_pattern", "Not a regular expression"),
        ("", "a" * 201, "code_pattern", "201 characters: a pattern takes at most 200"),
        ("", CATASTROPHIC, "code_pattern", "takes too long to check a code"),
    ],
    ids=["bad-line", "not-a-regex", "too-long", "catastrophic"],
)
def test_a_wrong_list_or_pattern_is_refused_on_its_field_and_nothing_changes(world, codes, pattern, field, message):
    _, link, researcher = world
    _codes(researcher, link, codes="P-001")

    refused = _codes(researcher, link, codes=codes, pattern=pattern)

    assert refused.status_code == 400
    form = next(codes_form for shown, _, _, codes_form in refused.context["links"] if shown == link)
    assert message in " ".join(form.errors[field])
    link.refresh_from_db()
    assert (link.codes_allowed, link.code_pattern) == ("p-001", "")


def test_a_catastrophic_pattern_stored_anyhow_refuses_the_code_instead_of_hanging(world):
    """Saved past the form (the admin, an old row): the match at arrival is bounded too."""
    _, link, _ = world
    ParticipantLink.objects.filter(pk=link.pk).update(code_pattern=CATASTROPHIC)

    refused = _start(Client(), link, code="a" * 39)

    assert refused.status_code == 403
    assert not WorkSession.objects.exists() and not Worker.objects.filter(external_id__startswith="link").exists()


def test_a_new_open_link_can_be_restricted_when_it_is_made_and_old_links_stay_open(world):
    campaign, old, researcher = world
    made = researcher.post(
        f"/campaigns/{campaign.slug}/links/new/", {"kind": "open", "codes": "s-1\ns-2", "code_pattern": ""}
    )
    assert made.status_code == 302
    new = ParticipantLink.objects.exclude(pk=old.pk).get()
    assert new.codes_allowed == "s-1\ns-2"

    assert _start(Client(), new, code="s-3").status_code == 403
    assert _start(Client(), old, code="anyone-at-all").status_code == 302  # made before: unrestricted

    personal = researcher.post(
        f"/campaigns/{campaign.slug}/links/new/", {"kind": "personal", "labels": "Ann", "codes": "not checked here!"}
    )
    assert personal.status_code == 302  # a personal link has no codes: the field is ignored
    bad = researcher.post(f"/campaigns/{campaign.slug}/links/new/", {"kind": "open", "code_pattern": CATASTROPHIC})
    assert bad.status_code == 400 and "takes too long" in " ".join(bad.context["links_form"].errors["code_pattern"])
    assert ParticipantLink.objects.count() == 3


def test_codes_are_one_participant_whatever_their_case_and_spaces(world):
    _, link, _ = world
    client = Client()
    first = _start(client, link, code="P-017")
    again = _start(Client(), link, code=" p-017 ")

    assert first.status_code == again.status_code == 302
    assert first["Location"] == again["Location"]  # the same session, resumed
    assert Worker.objects.filter(external_id__istartswith=f"link{link.pk}-").count() == 1


def test_an_old_mixed_case_code_is_found_as_stored_and_never_made_twice(world):
    """Stored before codes were read without case (`link<id>-P-017`): its participant comes
    back as `p-017` to the same worker and session."""
    _, link, _ = world
    old = holds.session_worker(channel="links", external_id=f"link{link.pk}-P-017")
    session = holds.link_session_open(link=link, worker=old)

    resumed = _start(Client(), link, code="p-017")

    assert resumed["Location"] == f"/s/{session.key}/"
    assert list(Worker.objects.filter(external_id__iexact=f"link{link.pk}-p-017")) == [old]
