"""Collaborators (issue 16): a campaign shared with a viewer and an editor, attacked over HTTP
through every address of a campaign, in the dashboard and the API.

The addresses are read from the URL configuration (every route with a campaign slug, the
participants' own pages under /s/ left out), so a page added later is attacked too: a route
with a parameter this file cannot fill fails `_kwargs`. Every write is checked against a
snapshot of every row of the project's apps, taken before and after.

* A viewer reads every page and download the owner reads, and changes nothing through any
  address with any writing method (403, or 405 where the address takes no such method).
* An editor changes what a viewer cannot (the control), but adds or removes no collaborator
  and touches no money: no higher budget cap, no production switch, no new owner.
* Someone who is neither sees nothing (404), and a removed collaborator is at once such a user.
* The add form: not yourself, a clear error for an unknown username, hostile names escaped.
* The campaign lists cost the same queries however many campaigns are shared with the user
  (tests/attacks/test_collaborator_lists.py: it counts every campaign, this module's included).
"""

import re
import uuid
from decimal import Decimal

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.members import member_set
from annotation.models import Campaign, CampaignMember
from annotation.suitability.studies import study_sample
from crowd.channels.links.links import link_url as links_url
from crowd.channels.links.links import links_issue
from crowd.hit_page.content import ProcessCache
from crowd.models import ParticipantLink, PlacesRaise, Study, StudyBatch, TaskHold, WorkerQuality, WorkSession
from maps.revision import revision_start
from maps.workbench import map_open
from tests.dashboard.test_views import CREATE_FORM
from tests.factories import (
    AssignmentFactory,
    BatchFactory,
    CampaignFactory,
    HITFactory,
    PropositionFactory,
    TaskFactory,
    TopicFactory,
    WorkerFactory,
)

pytestmark = [pytest.mark.attacks, pytest.mark.django_db]

APPS = ("annotation", "crowd", "ranking", "maps", "localturk", "localprolific")
WRITES = ("post", "put", "patch", "delete")
TSV = b"topic\tsubject\trelation\tobject\tconfidence\nsavings\tAn intruder\twrites into\tthe campaign\t0.9\n"


def _campaign_routes() -> list[tuple[str, tuple[str, ...]]]:
    """(name to reverse, parameter names) of every route with a campaign slug."""
    found = []

    def walk(patterns, prefix: str, namespace: str | None) -> None:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, prefix + str(entry.pattern), entry.namespace or namespace)
            elif isinstance(entry, URLPattern) and entry.name and namespace != "sessions":
                params = tuple(re.findall(r"<(?:\w+:)?(\w+)>", prefix + str(entry.pattern)))
                if {"slug", "campaign_slug"} & set(params):
                    found.append((f"{namespace}:{entry.name}" if namespace else entry.name, params))

    walk(get_resolver().url_patterns, "", None)
    return found


ROUTES = _campaign_routes()


def _is_api(name: str) -> bool:
    return name.startswith("api-")


def researcher(username: str):
    return get_user_model().objects.create_user(username)  # signed in by force: no password to hash


def api_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def web_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def snapshot() -> dict:
    """Every row of every model of the project's apps."""
    return {
        model._meta.label: list(model._default_manager.order_by("pk").values())
        for model in apps.get_models()
        if model._meta.app_label in APPS
    }


class World:
    """Olga's campaign, shared with Vic (view), Edie (edit) and Carol (view); Mallory is a stranger."""

    def __init__(self):
        self.owner, self.viewer, self.editor = researcher("olga"), researcher("vic"), researcher("edie")
        self.carol, self.stranger = researcher("carol"), researcher("mallory")
        self.campaign = CampaignFactory(
            owner=self.owner, slug="shared", name="Shared study", channel=Campaign.Channel.LINKS
        )
        self.topic = TopicFactory(campaign=self.campaign, key="loans")
        self.propositions = PropositionFactory.create_batch(5, topic=self.topic)
        self.batch = BatchFactory(topic=self.topic)
        task = TaskFactory(batch=self.batch, propositions=self.propositions)
        self.worker = WorkerFactory()
        AssignmentFactory(task=task, hit=HITFactory(task=task), worker=self.worker)
        WorkerQuality.objects.create(campaign=self.campaign, worker=self.worker)
        [self.link] = links_issue(campaign=self.campaign, kind=ParticipantLink.Kind.PERSONAL, labels=["invited"])
        # A place its participant holds now (the Channel page's release button).
        session = WorkSession.objects.create(
            campaign=self.campaign, worker=self.link.worker, link=self.link, key=uuid.uuid4(), tasks_target=1
        )
        now = timezone.now()
        self.hold = TaskHold.objects.create(
            session=session, task=task, assignment_id="SWORLDHOLD", position=1, held_at=now, expires_at=now
        )
        for user, role in ((self.viewer, "view"), (self.editor, "edit"), (self.carol, "view")):
            member_set(campaign_id=self.campaign.pk, username=user.username, role=role, by=self.owner)
        self.carol_membership = CampaignMember.objects.get(user=self.carol)
        # The owner's and the editor's concept maps of the topic (the maps pages' routes).
        revision_start(topic=self.topic)
        # A Prolific raise of places waiting for the owner's yes (crowd.channels.prolific.raises).
        study = Study.objects.create(
            topic=self.batch.topic,
            kind=self.batch.kind,
            environment="local",
            internal_name="world-study",
            places=5,
            reward_cents=100,
            completion_code="C0DE",
        )
        StudyBatch.objects.create(study=study, batch=self.batch, places=5, places_to=5)
        self.places_raise = PlacesRaise.objects.create(
            study=study,
            places_from=5,
            places_to=7,
            missing=2,
            cost=Decimal("2.80"),
            reason="answers missing",
            requested_at=timezone.now(),
        )
        # A topic whose Likert round is not built yet, sampled for suitability filtering.
        PropositionFactory.create_batch(5, topic=TopicFactory(campaign=self.campaign, key="rates"))
        study_sample(campaign_id=self.campaign.pk, size=5)
        self.concept_map = map_open(topic=self.topic, annotator=self.owner)
        map_open(topic=self.topic, annotator=self.editor)

    def url(self, name: str, params: tuple[str, ...]) -> str:
        return reverse(name, kwargs=_kwargs(self, name, params))

    def client(self, user, name: str):
        return api_client(user) if _is_api(name) else web_client(user)


def _kwargs(world: World, name: str, params: tuple[str, ...]) -> dict:
    values = {
        "slug": world.campaign.slug,
        "campaign_slug": world.campaign.slug,
        "key": world.topic.key,
        "topic_key": world.topic.key,
        "batch_id": world.batch.pk,
        "worker_id": world.worker.pk,
        "link_id": world.link.pk,
        "hold_id": world.hold.pk,
        "member_id": world.carol_membership.pk,
        "username": world.carol.username,
        "fmt": "json" if name == "maps:download" else "csv",
        "map_id": world.concept_map.pk,
        "raise_id": world.places_raise.pk,
        "pk": world.link.pk if name == "api-link-revoke" else world.propositions[0].pk,
    }
    missing = set(params) - set(values)
    assert not missing, f"{name}: give this test a value for {', '.join(sorted(missing))}"
    return {param: values[param] for param in params}


def hostile_form() -> dict:
    """Every field any campaign form or API body takes, each set to change something."""
    return {
        **CREATE_FORM,
        "name": "Taken over",
        "description": "taken over",
        "likert_reward": "0.07",
        "consent_text": "",
        "channel": "links",
        "tasks_per_session": "3",
        "kind": "personal",
        "labels": ["intruder"],
        "status": "excluded",
        "reason": "taken over",
        "username": "mallory",
        "role": "edit",
        "confirmation": "shared",
        "batches": "2",
        "file": SimpleUploadedFile("takeover.tsv", TSV),
    }


def send(client, method: str, url: str):
    if method == "get":
        return client.get(url)
    if method == "delete":
        return client.delete(url)
    if isinstance(client, APIClient):
        return getattr(client, method)(url, hostile_form(), format="multipart")
    return getattr(client, method)(url, hostile_form()) if method == "post" else getattr(client, method)(url)


@pytest.fixture(scope="module")
def _world(django_db_setup, django_db_blocker):
    """Built once for the module, in a transaction rolled back at its end: every test of the
    module uses it (pytest-django runs each in a savepoint inside that transaction, rolled back
    after the test), so building it per test was most of the module's time."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield World()
        transaction.set_rollback(True)


@pytest.fixture
def world(_world) -> World:
    """The module's world as the database holds it at the start of this test: what an earlier
    test changed was rolled back, and the objects are read again (and this process's caches of
    pages emptied) so nothing of it lingers in memory either."""
    ProcessCache.clear_all()
    for value in vars(_world).values():
        for instance in value if isinstance(value, list) else [value]:
            instance.refresh_from_db()
    return _world


def _route_id(route) -> str:
    return route[0]


def test_the_routes_under_attack_include_every_kind_of_write():
    names = {name for name, _ in ROUTES}
    assert {
        "dashboard:campaign-settings",
        "dashboard:propositions-import",
        "dashboard:likert-publish",
        "dashboard:campaign-pause",
        "dashboard:campaign-resume",
        "dashboard:batch-expire",
        "ranking:topic-budget-extend",
        "dashboard:member-add",
        "dashboard:member-remove",
        "crowd:worker-override",
        "crowd:campaign-channel-set",
        "crowd:links-new",
        "crowd:link-revoke",
        "api-campaign-detail",
        "api-proposition-import",
        "api-campaign-channel",
        "api-link-list",
        "api-link-revoke",
        "api-member-list",
        "api-member-detail",
    } <= names


EDITORS_ONLY_READS = {"crowd:links-csv"}


@pytest.mark.parametrize("route", ROUTES, ids=_route_id)
def test_a_viewer_reads_every_page_and_download_the_owner_reads(world, route):
    name, params = route
    url = world.url(name, params)

    as_owner = world.client(world.owner, name).get(url)
    as_viewer = world.client(world.viewer, name).get(url)

    if name in EDITORS_ONLY_READS:  # participants' identities: see the test below
        assert as_owner.status_code == 200 and as_viewer.status_code == 403
        return
    assert as_viewer.status_code == as_owner.status_code
    assert as_viewer.get("Content-Type") == as_owner.get("Content-Type")
    assert as_viewer.get("Location") == as_owner.get("Location")  # an old address moved
    assert as_owner.status_code in (200, 301, 405), f"{name}: {as_owner.status_code}"


@pytest.mark.parametrize("route", ROUTES, ids=_route_id)
def test_a_viewer_changes_nothing_through_any_address(world, route):
    name, params = route
    url = world.url(name, params)
    client = world.client(world.viewer, name)
    before = snapshot()

    for method in WRITES if _is_api(name) else ("post",):  # the dashboard's forms post
        response = send(client, method, url)
        # 301: an old address that only points at its new one (the new one is attacked too).
        assert response.status_code in (301, 403, 405), f"{method.upper()} {name}: {response.status_code}"
        assert snapshot() == before, f"{method.upper()} {name} changed something"


@pytest.mark.parametrize("route", ROUTES, ids=_route_id)
def test_a_stranger_finds_nothing_at_any_address(world, route):
    name, params = route
    url = world.url(name, params)
    client = world.client(world.stranger, name)
    missing = url.replace(f"/{world.campaign.slug}/", "/no-such-campaign/", 1)
    before = snapshot()

    for method in ("get", *WRITES) if _is_api(name) else ("get", "post"):
        response = send(client, method, url)
        assert response.status_code in (301, 404, 405), f"{method.upper()} {name}: {response.status_code}"
        if response.status_code == 301:  # an old address's pointer, the same for any slug: it tells nothing
            assert send(client, method, missing).status_code == 301
        assert snapshot() == before, f"{method.upper()} {name} changed something"


# What an editor's post changes (the control: the viewer's refusals are about the role).
EDITOR_WRITES = [
    ("dashboard:campaign-settings", "post", {"name": "Renamed by the editor"}),
    ("dashboard:propositions-import", "post", {}),
    ("dashboard:campaign-pause", "post", {}),
    ("crowd:worker-override", "post", {}),
    ("crowd:links-new", "post", {}),
    ("crowd:link-revoke", "post", {}),
    ("ranking:topic-budget-extend", "post", {}),
    ("api-campaign-detail", "patch", {"name": "Renamed by the editor"}),
    ("api-proposition-import", "post", {}),
    ("api-link-list", "post", {}),
    ("api-link-revoke", "post", {}),
]


@pytest.mark.parametrize(("name", "method", "extra"), EDITOR_WRITES, ids=[write[0] for write in EDITOR_WRITES])
def test_an_editor_changes_what_a_viewer_cannot(world, name, method, extra):
    params = dict(ROUTES)[name]
    url = world.url(name, params)
    before = snapshot()
    client = world.client(world.editor, name)
    if name == "dashboard:campaign-settings":
        page = client.get(url).context["form"]
        data = {**{field: page[field].value() for field in page.fields}, **extra}
        response = client.post(url, {key: "" if value is None else value for key, value in data.items()})
    elif method == "patch":
        response = client.patch(url, extra, format="json")
    elif isinstance(client, APIClient):
        response = client.post(url, hostile_form(), format="multipart")
    else:
        response = client.post(url, hostile_form())

    assert response.status_code in (200, 201, 302), f"{name}: {response.status_code}"
    assert snapshot() != before


# --- what stays with the owner ----------------------------------------------------------------


def test_an_editor_cannot_add_or_remove_a_collaborator(world):
    before = snapshot()
    web, api = web_client(world.editor), api_client(world.editor)
    members_url = reverse("api-member-list", args=[world.campaign.slug])

    for response in (
        web.post(reverse("dashboard:member-add", args=[world.campaign.slug]), {"username": "mallory", "role": "edit"}),
        web.post(reverse("dashboard:member-remove", args=[world.campaign.slug, world.carol_membership.pk])),
        api.post(members_url, {"username": "mallory", "role": "edit"}, format="json"),
        api.delete(reverse("api-member-detail", args=[world.campaign.slug, "carol"])),
    ):
        assert response.status_code == 403
    assert snapshot() == before
    # Nor raise their own role's reach: an editor who adds themselves is refused the same way.
    assert (
        web.post(reverse("dashboard:member-add", args=[world.campaign.slug]), {"username": "edie"}).status_code == 403
    )


def test_an_editor_cannot_raise_the_cap_but_may_lower_it(world):
    settings_url = reverse("dashboard:campaign-settings", args=[world.campaign.slug])
    web, api = web_client(world.editor), api_client(world.editor)
    form = web.get(settings_url).context["form"]
    data = {field: "" if form[field].value() is None else form[field].value() for field in form.fields}
    detail = reverse("api-campaign-detail", args=[world.campaign.slug])

    page = web.post(settings_url, {**data, "budget_cap": "5000.00"})
    refused = api.patch(detail, {"budget_cap": "5000.00"}, format="json")

    assert page.status_code == 403 and "money stays with them" in page.content.decode()
    assert refused.status_code == 403 and refused.json()["code"] == "owner_only"
    world.campaign.refresh_from_db()
    assert world.campaign.budget_cap == Decimal("100.00")

    assert web.post(settings_url, {**data, "budget_cap": "60.00"}).status_code == 302
    assert api.patch(detail, {"budget_cap": "50.00"}, format="json").status_code == 200
    world.campaign.refresh_from_db()
    assert world.campaign.budget_cap == Decimal("50.00")
    # The owner raises it again.
    assert api_client(world.owner).patch(detail, {"budget_cap": "500.00"}, format="json").status_code == 200


def test_the_settings_page_says_that_money_stays_with_the_owner(world):
    page = web_client(world.editor).get(reverse("dashboard:campaign-settings", args=[world.campaign.slug]))

    text = page.content.decode()
    assert "money stays with the owner" in text
    assert "you can view and change this campaign" in text
    assert reverse("dashboard:member-add", args=[world.campaign.slug]) not in text  # the owner's form only


# --- losing access, and the add form -------------------------------------------------------------


def test_a_removed_collaborator_loses_access_at_once(world):
    page = reverse("dashboard:campaign", args=[world.campaign.slug])
    topics = reverse("api-topic-list", args=[world.campaign.slug])
    web, api = web_client(world.carol), api_client(world.carol)
    assert web.get(page).status_code == 200 and api.get(topics).status_code == 200

    response = web_client(world.owner).post(
        reverse("dashboard:member-remove", args=[world.campaign.slug, world.carol_membership.pk])
    )

    assert response.status_code == 302
    assert web.get(page).status_code == 404  # the same session, the next request
    assert api.get(topics).status_code == 404
    assert world.campaign.slug not in {row["slug"] for row in api.get(reverse("api-campaign-list")).json()["results"]}


def test_a_removed_editor_can_no_longer_change_anything(world):
    api_client(world.owner).delete(reverse("api-member-detail", args=[world.campaign.slug, "edie"]))

    response = web_client(world.editor).post(reverse("dashboard:campaign-pause", args=[world.campaign.slug]))

    assert response.status_code == 404
    world.campaign.refresh_from_db()
    assert world.campaign.status == Campaign.Status.DRAFT


def test_nobody_adds_themselves(world):
    add = reverse("dashboard:member-add", args=[world.campaign.slug])
    before = snapshot()

    page = web_client(world.owner).post(add, {"username": "olga", "role": "edit"})
    by_api = api_client(world.owner).post(
        reverse("api-member-list", args=[world.campaign.slug]), {"username": "olga"}, format="json"
    )
    by_stranger = web_client(world.stranger).post(add, {"username": "mallory", "role": "edit"})
    by_viewer = web_client(world.viewer).post(add, {"username": "vic", "role": "edit"})

    assert page.status_code == 400 and "You cannot add yourself" in page.content.decode()
    assert by_api.status_code == 400 and by_api.json()["code"] == "member_self"
    assert by_stranger.status_code == 404 and by_viewer.status_code == 403
    assert snapshot() == before


def test_an_unknown_username_is_a_form_error(world):
    before = snapshot()

    page = web_client(world.owner).post(
        reverse("dashboard:member-add", args=[world.campaign.slug]), {"username": "ghost", "role": "view"}
    )
    by_api = api_client(world.owner).post(
        reverse("api-member-list", args=[world.campaign.slug]), {"username": "ghost"}, format="json"
    )

    assert page.status_code == 400
    assert page.context["member_form"].errors["username"][0].startswith("No user is called 'ghost'")
    assert "No user is called &#x27;ghost&#x27;" in page.content.decode()
    assert by_api.status_code == 400 and by_api.json()["code"] == "unknown_user"
    assert snapshot() == before


HOSTILE = '<script>alert("owned")</script>'


def test_a_hostile_username_in_the_form_is_shown_escaped(world):
    page = web_client(world.owner).post(
        reverse("dashboard:member-add", args=[world.campaign.slug]), {"username": HOSTILE, "role": "view"}
    )

    text = page.content.decode()
    assert page.status_code == 400
    assert "<script>alert" not in text and "&lt;script&gt;alert(&quot;owned&quot;)&lt;/script&gt;" in text


def test_a_hostile_username_of_a_collaborator_is_listed_escaped(world):
    # Django's username validator refuses this name; a user made another way (a script, an
    # identity provider) may still have it.
    hostile = get_user_model().objects.create(username='<img src=x onerror="alert(1)">')
    owner = web_client(world.owner)

    added = owner.post(
        reverse("dashboard:member-add", args=[world.campaign.slug]), {"username": hostile.username, "role": "edit"}
    )
    page = owner.get(added["Location"])
    listing = web_client(world.viewer).get(reverse("dashboard:members", args=[world.campaign.slug]))

    assert added.status_code == 302
    for response in (page, listing):
        text = response.content.decode()
        assert "<img src=x" not in text and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in text
    members = api_client(world.owner).get(reverse("api-member-list", args=[world.campaign.slug])).json()["results"]
    assert hostile.username in {member["username"] for member in members}  # JSON: data, not markup


# --- the lists' cost -------------------------------------------------------------------------------


# --- the owner's other campaigns ---------------------------------------------------------------------


def test_a_collaborator_cannot_compare_with_the_owner_s_other_campaigns(world):
    """The quality report offers the owner's other runs of the same topics; a collaborator is
    offered only those shared with them too, and cannot name another."""
    private = CampaignFactory(owner=world.owner, slug="private-run", name="Olga's private run")
    TopicFactory(campaign=private, key=world.topic.key)
    report = reverse("crowd:campaign-quality", args=[world.campaign.slug])

    as_owner = web_client(world.owner).get(report)
    as_viewer = web_client(world.viewer).get(report)

    assert [run.slug for run in as_owner.context["report"].comparable] == ["private-run"]
    assert as_viewer.context["report"].comparable == []
    assert "Olga&#x27;s private run" not in as_viewer.content.decode()
    assert web_client(world.viewer).get(f"{report}?compare=private-run").status_code == 404
    assert web_client(world.owner).get(f"{report}?compare=private-run").status_code == 200

    member_set(campaign_id=private.pk, username="vic", role="view", by=world.owner)
    assert web_client(world.viewer).get(f"{report}?compare=private-run").status_code == 200


def test_a_viewer_never_sees_a_participant_link_s_address_and_an_editor_does(world):
    """A personal link is its participant's identity: whoever holds it answers, and is counted,
    as that participant. Its address is for those who may run the campaign."""
    address = links_url(world.link)
    channel = reverse("crowd:campaign-channel", args=[world.campaign.slug])
    api = reverse("api-link-list", kwargs={"campaign_slug": world.campaign.slug})
    csv_url = reverse("crowd:links-csv", args=[world.campaign.slug])

    for user, shown in ((world.viewer, False), (world.carol, False), (world.editor, True), (world.owner, True)):
        page = web_client(user).get(channel).content.decode()
        listed = api_client(user).get(api).json()["results"]
        download = web_client(user).get(csv_url)
        assert (address in page) is shown
        assert [row["url"] for row in listed] == [address if shown else None]
        assert download.status_code == (200 if shown else 403)
        assert (address in download.content.decode()) is shown


# --- what the pages offer: a viewer is shown no form that would change the campaign ------------

# A form that posts, but not the header's "Log out" nor a task preview's (disabled) HIT form.
POST_FORM = re.compile(r"<form\b(?![^>]*(?:/logout/|id=\"hit-form\"))[^>]*\bmethod=\"post\"", re.IGNORECASE)


def _html_pages() -> list[tuple[str, tuple[str, ...]]]:
    return [(name, params) for name, params in ROUTES if not _is_api(name)]


@pytest.mark.parametrize("route", _html_pages(), ids=_route_id)
def test_a_viewer_is_offered_no_form_that_changes_the_campaign(world, route):
    name, params = route
    TopicFactory(campaign=world.campaign, key="fresh", state="importing")  # a topic still open to edits
    PropositionFactory(topic=world.campaign.topics.get(key="fresh"))

    page = web_client(world.viewer).get(world.url(name, params))

    if page.status_code != 200 or not page.get("Content-Type", "").startswith("text/html"):
        return
    html = page.content.decode()
    assert not POST_FORM.search(html), f"{name} offers a viewer a form: {POST_FORM.search(html)}"
    assert "Publish the Likert round…" not in html and ">Upload<" not in html and ">Save<" not in html


def test_an_editor_is_offered_what_a_viewer_is_not(world):
    """The control for the test above: the same pages, as an editor, carry the forms."""
    fresh = TopicFactory(campaign=world.campaign, key="fresh", state="importing")
    PropositionFactory(topic=fresh)
    editor, viewer = web_client(world.editor), web_client(world.viewer)
    pages = {
        "campaign": reverse("dashboard:campaign", args=[world.campaign.slug]),
        "settings": reverse("dashboard:campaign-settings", args=[world.campaign.slug]),
        "description": reverse("dashboard:topic-description", args=[world.campaign.slug, "fresh"]),
        "publish": reverse("dashboard:likert-publish", args=[world.campaign.slug, "fresh"]),
        "channel": reverse("crowd:campaign-channel", args=[world.campaign.slug]),
    }
    for what, url in pages.items():
        assert POST_FORM.search(editor.get(url).content.decode()), f"the editor's {what} page has no form"
    campaign_page = editor.get(pages["campaign"]).content.decode()
    assert "Publish the Likert round…" in campaign_page and ">Upload<" in campaign_page
    assert "Shared with you to view" in viewer.get(pages["settings"]).content.decode()
    assert "only the campaign's owner and editors publish" in viewer.get(pages["publish"]).content.decode()


def test_publish_is_offered_only_where_publishing_would_go_ahead(world):
    """A topic without a description is refused by publishing (crowd.work.publishing), so its
    card offers no Publish button — the owner's neither; a done topic offers none either."""
    described = TopicFactory(campaign=world.campaign, key="described", state="importing")
    undescribed = TopicFactory(campaign=world.campaign, key="undescribed", state="importing", description="")
    done = TopicFactory(campaign=world.campaign, key="finished", state="done")
    for topic in (described, undescribed, done):
        PropositionFactory(topic=topic)

    html = web_client(world.owner).get(reverse("dashboard:campaign", args=[world.campaign.slug])).content.decode()

    assert reverse("dashboard:likert-publish", args=[world.campaign.slug, "described"]) in html
    assert reverse("dashboard:likert-publish", args=[world.campaign.slug, "undescribed"]) not in html
    assert reverse("dashboard:likert-publish", args=[world.campaign.slug, "finished"]) not in html
    # What the button would have done is refused, and says why.
    refused = web_client(world.owner).post(
        reverse("dashboard:likert-publish", args=[world.campaign.slug, "undescribed"]), {}
    )
    assert "has no description" in refused.content.decode()
    assert not undescribed.batches.exists()
