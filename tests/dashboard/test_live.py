"""The campaign page's live parts (issue 16): a topic's description edited in place, the upload
form's traps and import options, and the progress figures as JSON for the page's script —
over HTTP, with the attacks on each new input (hostile text, another researcher's campaign,
a viewer's post)."""

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.batching import likert_tasks_build
from annotation.members import member_set
from annotation.models import Batch, Campaign, ImportRecord, Proposition, Topic
from annotation.topic_descriptions import topic_description_set
from config.errors import Conflict
from tests.dashboard.test_views import topic_with_work
from tests.factories import BatchFactory, CampaignFactory, PropositionFactory, TopicFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("unreachable_endpoint")]

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
SEMICOLON_CSV = (
    "topic;subject;relation;object;confidence\n"
    + "".join(f"loans;lender {n};offers;loans to students, variant {n};0,{n}\n" for n in range(10))
).encode()
TRAPS_TSV = (
    b"topic\tsubject\trelation\tobject\nloans\tthe moon\tis made of\tcheese\nloans\tpenguins\tlive in\tAntarctica\n"
)


@pytest.fixture
def campaign(owner):
    return CampaignFactory(owner=owner, slug="loans-run", name="Student loans", trap_rate=0)


@pytest.fixture
def topic(campaign):
    topic = TopicFactory(campaign=campaign, key="loans", state=Topic.State.IMPORTING, description="old words")
    PropositionFactory.create_batch(5, topic=topic)
    return topic


def messages_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def stranger_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("mallory", password="x"))
    return client


def viewer_client(client, campaign, owner, django_user_model):
    django_user_model.objects.create_user("vic", password="x")
    member_set(campaign_id=campaign.pk, username="vic", role="view", by=owner)
    client.force_login(django_user_model.objects.get(username="vic"))
    return client


# ---- A topic's description ---------------------------------------------------------------


def description_url(campaign, topic) -> str:
    return reverse("dashboard:topic-description", args=[campaign.slug, topic.key])


def test_the_card_offers_the_form_and_saving_returns_to_the_topic(owner_client, campaign, topic):
    page = owner_client.get(reverse("dashboard:campaign", args=[campaign.slug])).content.decode()
    assert f'action="{description_url(campaign, topic)}"' in page and ">old words</textarea>" in page

    response = owner_client.post(description_url(campaign, topic), {"description": "  student loans \n for all "})

    assert response.status_code == 302 and response.url == f"/campaigns/{campaign.slug}/?page=1#topic-loans"
    topic.refresh_from_db()
    assert topic.description == "student loans for all"
    assert messages_of(response) == ["Description of topic loans saved."]


def test_a_hostile_description_is_stored_as_text_and_shown_escaped(owner_client, campaign, topic):
    owner_client.post(description_url(campaign, topic), {"description": HOSTILE})

    page = owner_client.get(reverse("dashboard:campaign", args=[campaign.slug])).content.decode()
    topic.refresh_from_db()
    assert topic.description == HOSTILE
    assert HOSTILE not in page and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page


@pytest.mark.parametrize(
    ("text", "problem"),
    [("   ", "This field is required."), ("x" * 1001, "Ensure this value has at most 1000 characters")],
)
def test_an_empty_or_overlong_description_is_refused_with_the_text_kept(owner_client, campaign, topic, text, problem):
    response = owner_client.post(description_url(campaign, topic), {"description": text})

    assert response.status_code == 400 and problem in response.content.decode()
    topic.refresh_from_db()
    assert topic.description == "old words"


def test_once_the_likert_round_is_built_the_description_is_fixed(owner_client, campaign, topic):
    BatchFactory(topic=topic, kind=Batch.Kind.LIKERT, number=0)

    response = owner_client.post(description_url(campaign, topic), {"description": "new words"})
    card = owner_client.get(reverse("dashboard:campaign", args=[campaign.slug])).content.decode()

    assert response.status_code == 409
    assert "can no longer change (its Likert round is built): it is what its workers read" in response.content.decode()
    assert "new words</textarea>" in response.content.decode()  # the text as typed, to copy
    topic.refresh_from_db()
    assert topic.description == "old words"
    assert f'action="{description_url(campaign, topic)}"' not in card  # no form where it cannot be used


def test_an_editor_is_offered_the_form_only_where_saving_would_be_accepted(
    client, django_user_model, owner, campaign, topic
):
    django_user_model.objects.create_user("eddie", password="x")
    member_set(campaign_id=campaign.pk, username="eddie", role="edit", by=owner)
    client.force_login(django_user_model.objects.get(username="eddie"))
    form = f'action="{description_url(campaign, topic)}"'
    before = client.get(description_url(campaign, topic)).content.decode()
    BatchFactory(topic=topic, kind=Batch.Kind.LIKERT, number=0)  # the round is built: the text is fixed

    page = client.get(description_url(campaign, topic)).content.decode()
    card = client.get(reverse("dashboard:campaign", args=[campaign.slug])).content.decode()
    refused = client.post(description_url(campaign, topic), {"description": "new words"})

    assert form in before and ">Save</button>" in before
    fixed = "can no longer change (its Likert round is built): it is what its workers read"
    assert fixed in page and form not in page and ">Save</button>" not in page
    assert form not in card
    typed = refused.content.decode()
    assert refused.status_code == 409 and fixed in typed and form not in typed
    assert "readonly>new words</textarea>" in typed  # the text as typed, to copy
    topic.refresh_from_db()
    assert topic.description == "old words"


@pytest.mark.parametrize("state", [Topic.State.LIKERT, Topic.State.COMPARISONS, Topic.State.DONE])
def test_the_service_refuses_a_topic_that_moved_on_and_accepts_the_same_text(topic, state):
    Topic.objects.filter(pk=topic.pk).update(state=state)

    with pytest.raises(Conflict) as refused:
        topic_description_set(topic_id=topic.pk, description="new words")

    assert refused.value.code == "description_fixed"
    assert topic_description_set(topic_id=topic.pk, description="old  words ").description == "old words"


def test_another_researchers_topic_is_not_found(client, django_user_model, campaign, topic):
    client = stranger_client(client, django_user_model)

    assert client.get(description_url(campaign, topic)).status_code == 404
    assert client.post(description_url(campaign, topic), {"description": "mine now"}).status_code == 404
    topic.refresh_from_db()
    assert topic.description == "old words"


def test_a_viewer_cannot_change_a_description(client, django_user_model, owner, campaign, topic):
    client = viewer_client(client, campaign, owner, django_user_model)

    assert client.post(description_url(campaign, topic), {"description": "mine now"}).status_code == 403
    topic.refresh_from_db()
    assert topic.description == "old words"


# ---- Uploads: traps and import options -----------------------------------------------------


def upload(client, campaign, **fields):
    return client.post(reverse("dashboard:propositions-import", args=[campaign.slug]), fields)


def test_a_semicolon_csv_is_read_and_the_message_names_the_delimiter(owner_client, campaign):
    response = upload(
        owner_client, campaign, file=SimpleUploadedFile("loans.csv", SEMICOLON_CSV), min_confidence="0.35"
    )

    assert response.status_code == 302
    assert messages_of(response)[0] == (
        "Imported 6 propositions from loans.csv (csv, semicolon-separated): loans: 6 kept of 10 read, "
        "4 below the confidence threshold (0.35), 0 duplicates."
    )


def test_a_delimiter_chosen_by_hand_is_used(owner_client, campaign):
    response = upload(owner_client, campaign, file=SimpleUploadedFile("loans.csv", SEMICOLON_CSV), delimiter="comma")

    assert response.status_code == 200 and "missing required column(s)" in response.content.decode()
    assert not Proposition.objects.exists() and not ImportRecord.objects.exists()


def test_subtle_traps_come_with_their_propositions(owner_client, campaign):
    response = upload(
        owner_client,
        campaign,
        file=SimpleUploadedFile("loans.csv", SEMICOLON_CSV),
        traps=SimpleUploadedFile("traps.tsv", TRAPS_TSV),
        trap_kind="subtle",
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    assert messages_of(response)[0].startswith("Imported 5 propositions and 2 subtle traps from loans.csv")
    assert Proposition.objects.filter(trap_kind=Proposition.TrapKind.SUBTLE).count() == 2


def test_the_card_counts_subtle_traps_imported_apart_from_obvious_traps_placed(owner_client, campaign):
    Campaign.objects.filter(pk=campaign.pk).update(trap_rate=0.2)
    traps = SimpleUploadedFile("traps.tsv", TRAPS_TSV)
    upload(owner_client, campaign, file=SimpleUploadedFile("loans.csv", SEMICOLON_CSV), traps=traps, trap_kind="subtle")
    topic = campaign.topics.get()
    page_url = reverse("dashboard:campaign", args=[campaign.slug])

    uploaded = owner_client.get(page_url).content.decode()
    likert_tasks_build(topic=topic, seed=topic.pk)  # what publishing does first: the obvious traps join the topic
    built = owner_client.get(page_url).content.decode()

    obvious = Proposition.objects.filter(topic=topic, trap_kind=Proposition.TrapKind.OBVIOUS).count()
    assert obvious > 1
    assert "5 propositions, 2 subtle traps imported, 0 obvious traps placed in its Likert tasks." in uploaded
    assert f"5 propositions, 2 subtle traps imported, {obvious} obvious traps placed in its Likert tasks." in built


def test_obvious_traps_replace_the_campaigns_sentences(owner_client, campaign):
    sentences = b"Please rate this as not important at all\n\n  This sentence   is a test \n"

    response = upload(
        owner_client,
        campaign,
        file=SimpleUploadedFile("loans.csv", SEMICOLON_CSV),
        traps=SimpleUploadedFile("obvious.txt", sentences),
        trap_kind="obvious",
    )

    assert response.status_code == 302
    assert messages_of(response)[1] == "Obvious traps: 2 sentences from obvious.txt."
    campaign.refresh_from_db()
    assert campaign.obvious_traps == ["Please rate this as not important at all", "This sentence is a test"]
    assert not Proposition.objects.exclude(trap_kind=Proposition.TrapKind.NONE).exists()


def test_after_publishing_obvious_traps_are_refused_and_nothing_is_imported(owner_client, campaign):
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.ACTIVE)
    before = list(Campaign.objects.get(pk=campaign.pk).obvious_traps)

    response = upload(
        owner_client,
        campaign,
        file=SimpleUploadedFile("loans.csv", SEMICOLON_CSV),
        traps=SimpleUploadedFile("obvious.txt", b"Rate this low\n"),
        trap_kind="obvious",
    )

    assert response.status_code == 200 and "obvious_traps can no longer be changed" in response.content.decode()
    assert Campaign.objects.get(pk=campaign.pk).obvious_traps == before
    assert not Proposition.objects.exists() and not ImportRecord.objects.exists()


def test_a_hostile_obvious_trap_file_name_and_bad_options_are_refused_by_field(owner_client, campaign):
    response = upload(
        owner_client,
        campaign,
        file=SimpleUploadedFile("loans.csv", SEMICOLON_CSV),
        traps=SimpleUploadedFile(f"{HOSTILE}.txt", b"\xff\xfe not text"),
        trap_kind="obvious",
        delimiter="pipe",
        min_confidence="2",
    )

    page = response.content.decode()
    assert response.status_code == 200
    assert "not UTF-8 text" in page and "<script>alert" not in page
    assert "Select a valid choice. pipe is not one of the available choices." in page
    assert "Ensure this value is less than or equal to 1.0." in page
    assert not Proposition.objects.exists()


def test_a_viewer_cannot_upload(client, django_user_model, owner, campaign):
    client = viewer_client(client, campaign, owner, django_user_model)

    assert upload(client, campaign, file=SimpleUploadedFile("loans.csv", SEMICOLON_CSV)).status_code == 403
    assert not Proposition.objects.exists()


# ---- Live progress -------------------------------------------------------------------------


def progress_url(campaign) -> str:
    return reverse("dashboard:campaign-progress", args=[campaign.slug])


def test_the_json_has_the_figures_the_page_shows(owner_client, campaign):
    topic = topic_with_work(campaign)

    data = owner_client.get(progress_url(campaign)).json()
    page = owner_client.get(reverse("dashboard:campaign", args=[campaign.slug])).content.decode()

    [loans] = data["topics"]
    assert (loans["id"], loans["key"], loans["state"], loans["pending"]) == (topic.pk, "loans", "comparisons", 1)
    assert loans["meters"]["submitted"] == {"done": 2, "total": 10, "percent": 20}
    assert loans["meters"]["labels"] == {"done": 6, "total": 30, "percent": 20}
    assert loans["current_batch"] == topic.batches.get(number=1).pk
    for name, figures in loans["meters"].items():
        assert f'<span class="meter-label" id="meter-{topic.pk}-{name}">' in page
        assert f'<span class="done">{figures["done"]}</span> / <span class="total">{figures["total"]}</span>' in page
    assert f'<dd data-money="committed">{data["money"]["committed"]}</dd>' in page
    assert f'data-progress-url="{progress_url(campaign)}"' in page and "js/campaign-progress.js" in page


def test_the_json_follows_the_pages_of_topics(owner_client, campaign):
    for n in range(12):
        TopicFactory(campaign=campaign, key=f"topic-{n:02d}")

    first = owner_client.get(progress_url(campaign)).json()["topics"]
    second = owner_client.get(progress_url(campaign) + "?page=2").json()["topics"]

    assert [t["key"] for t in first] == [f"topic-{n:02d}" for n in range(10)]
    assert [t["key"] for t in second] == ["topic-10", "topic-11"]


def test_the_json_makes_as_many_queries_for_five_topics_as_for_one(owner_client, campaign, django_assert_num_queries):
    topic_with_work(campaign, "topic-0")
    # session, user, campaign, its membership check, money, page count, page of topics, ten of
    # progress (one: the places held, for what each topic waits for)
    with django_assert_num_queries(15) as one:
        assert owner_client.get(progress_url(campaign)).status_code == 200
    for n in range(1, 5):
        topic_with_work(campaign, f"topic-{n}")
    with django_assert_num_queries(len(one.captured_queries)):
        assert len(owner_client.get(progress_url(campaign)).json()["topics"]) == 5


def test_the_json_is_for_the_campaigns_researchers_only(client, django_user_model, campaign):
    assert client.get(progress_url(campaign)).status_code == 302  # to the login page
    assert stranger_client(client, django_user_model).get(progress_url(campaign)).status_code == 404


def test_a_hostile_topic_key_is_data_in_the_json(owner_client, campaign):
    TopicFactory(campaign=campaign, key="<b>x</b>")

    response = owner_client.get(progress_url(campaign))

    assert response["Content-Type"] == "application/json" and response["Cache-Control"] == "no-store"
    assert response.json()["topics"][0]["key"] == "<b>x</b>"
