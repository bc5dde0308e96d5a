"""Forms of the researcher's dashboard. Each default is the paper's (Falke & Gurevych 2017)
and says why, so a researcher changes it knowingly."""

from decimal import Decimal
from typing import cast

from django import forms
from django.db import models

from annotation.campaigns import FIXED_AFTER_PUBLISH, campaign_has_published
from annotation.importing.formats import DELIMITERS, FORMATS
from annotation.models import Campaign
from annotation.topic_descriptions import DESCRIPTION_MAX_CHARS
from config.errors import ApplicationError
from crowd.marketplaces.registry import channel_choices, channel_policy, policies

RESERVED_SLUGS = {"new"}  # /campaigns/new/ is the create page


def _default(name: str):
    return cast(models.Field, Campaign._meta.get_field(name)).default  # a column, not a relation


class CampaignForm(forms.Form):
    name = forms.CharField(max_length=200, help_text="Shown on the dashboard and in exports.")
    slug = forms.SlugField(
        max_length=80,
        help_text="Names the campaign in addresses and commands: lower-case letters, digits and hyphens.",
    )
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), help_text="For you and your colleagues."
    )
    channel = forms.ChoiceField(
        label="Channel",
        choices=channel_choices,  # the default first, MTurk last and labelled closed (its policy's words)
        required=False,  # a client that sends none gets the default, as the API and the command do
        widget=forms.RadioSelect,
        initial=_default("channel"),
        help_text="Where workers come from; it can change on the campaign's Channel page until the first publish.",
    )
    environment = forms.ChoiceField(
        label="Environment",
        choices=Campaign.Environment.choices,  # the channel's own, set in __init__
        initial=_default("environment"),
        help_text="Local endpoint: offline, no money. Sandbox: the marketplace's free test site, where it has "
        "one. Production: real money; it also needs the deployment's setting, the campaign's production switch "
        "and a typed confirmation.",
    )
    budget_cap = forms.DecimalField(
        label="Budget cap (US$)",
        min_value=Decimal("0.00"),
        max_digits=10,
        decimal_places=2,
        initial=_default("budget_cap"),
        help_text="Publishing refuses work that would commit more, {fees}. $100 covers one topic of about "
        "1,000 propositions at the paper's rates: Likert round about $71, comparisons about $19.",
    )
    likert_reward = forms.DecimalField(
        label="Likert HIT reward (US$)",
        min_value=Decimal("0.01"),
        max_digits=6,
        decimal_places=2,
        initial=_default("likert_reward"),
        help_text="$0.06 per Likert HIT: the paper's rate for rating 5 statements.",
    )
    comparison_reward = forms.DecimalField(
        label="Comparison HIT reward (US$)",
        min_value=Decimal("0.01"),
        max_digits=6,
        decimal_places=2,
        initial=_default("comparison_reward"),
        help_text="$0.05 per comparison HIT: the paper's rate for putting 5 statements in order (10 pairs).",
    )
    assignments_per_hit = forms.IntegerField(
        label="Assignments per HIT",
        min_value=1,
        max_value=100,
        initial=_default("assignments_per_hit"),
        help_text="5 workers per HIT, as in the paper: enough for a stable mean and for quality control to "
        "compare each worker with the others.",
    )
    top_k = forms.IntegerField(
        label="Top k for comparisons",
        min_value=2,
        initial=_default("top_k"),
        help_text="The best 100 by Likert mean, plus every proposition tied with the 100th (about 112 in the "
        "paper), are ranked finely by comparisons; concept maps use the top 50.",
    )
    pair_budget_fraction = forms.FloatField(
        label="Pair budget (share of all pairs)",
        min_value=0.001,
        max_value=1.0,
        initial=_default("pair_budget_fraction"),
        help_text="0.1: compare about 10 % of all pairs among the top k, the paper's budget; the ranking had "
        "settled by then.",
    )
    batch_pairs = forms.IntegerField(
        label="Pairs per comparison batch",
        min_value=1,
        initial=_default("batch_pairs"),
        help_text="100 pairs (10 HITs of 5 statements), as in the paper: TrueSkill is refit after each batch "
        "and the next batch goes where the ranking is least certain.",
    )
    trap_rate = forms.FloatField(
        label="Trap rate",
        min_value=0.0,
        max_value=0.5,
        initial=_default("trap_rate"),
        help_text="The least share of Likert HITs with a trap statement that a careful worker rates low; 0 turns "
        "traps off. More get one when quality control needs it: every imported kind is shown, and any run of "
        "HITs as long as a session holds the minimum of traps it judges on (one HIT in 5 by default).",
    )
    consent_text = forms.CharField(
        label="Information and consent page",
        required=False,
        widget=forms.Textarea(attrs={"rows": 8}),
        help_text="Shown to Prolific and link participants before their first task: who you are, what the study "
        "is for, what is recorded, how to withdraw, whom to contact. They must agree before any task is handed "
        "to them, and the time they agreed is recorded. Leave it empty for no consent step.",
    )

    def __init__(self, *args, channel: str | None = None, **kwargs):
        """`channel`: the campaign's, whose policy names the environments and the fees; None for
        a new campaign, which chooses its channel here."""
        super().__init__(*args, **kwargs)
        if channel is None:
            cast(forms.ChoiceField, self.fields["environment"]).choices = _environment_choices()
            fees = "the chosen channel's fees included (participant links pay nobody)"
        else:
            policy = channel_policy(channel)
            cast(forms.ChoiceField, self.fields["environment"]).choices = policy.environments
            fees = policy.fees_wording
        self.fields["budget_cap"].help_text = self.fields["budget_cap"].help_text.format(fees=fees)
        self._wording_set(channel_policy(channel or self.fields["channel"].initial or Campaign.Channel.LINKS))

    def _wording_set(self, policy) -> None:
        """The channel's words for its units of work ("task" and "answers", or MTurk's "HIT" and
        "assignments") in the labels and help texts."""
        task, answers = policy.task_noun[0], policy.answer_noun
        self.fields["likert_reward"].label = f"Likert {task} reward (US$)"
        self.fields["comparison_reward"].label = f"Comparison {task} reward (US$)"
        self.fields["assignments_per_hit"].label = f"{answers.capitalize()} per {task}"
        for field in self.fields.values():  # the rest of the help texts say "HIT": the channel's words instead
            field.help_text = str(field.help_text).replace("HITs", policy.task_noun[1]).replace("HIT", task)

    def clean_slug(self):
        slug = self.cleaned_data["slug"]
        if slug in RESERVED_SLUGS:
            raise forms.ValidationError(f"{slug!r} is reserved for the dashboard's own pages: choose another slug.")
        return slug

    def clean_channel(self):
        return self.cleaned_data["channel"] or _default("channel")

    def clean(self):
        """The environment must be one the chosen channel has (Prolific has no sandbox, links only this server)."""
        cleaned = super().clean() or {}
        channel, environment = cleaned.get("channel"), cleaned.get("environment")
        if channel and environment and "environment" in self.fields:
            try:
                channel_policy(channel).environment_check(environment, campaign_slug=cleaned.get("slug", ""))
            except ApplicationError as refused:
                self.add_error("environment", refused.message)
        return cleaned


def _environment_choices() -> list[tuple[str, str]]:
    """Every environment, each named with the channels that have it when not all do."""
    choices = []
    for value, label in Campaign.Environment.choices:
        having = [policy.short_name for policy in policies() if value in dict(policy.environments)]
        choices.append((value, label if len(having) == len(policies()) else f"{label} ({', '.join(having)} only)"))
    return choices


class CampaignSettingsForm(CampaignForm):
    """The settings page of a campaign: the create form without the slug (fixed: it names the
    campaign everywhere) and the marketplace (the channel page sets it). Once the campaign has
    published, the settings fixed by annotation.campaigns are shown read-only; a request that
    changes one anyway is refused there, with the message every interface shows."""

    SETTINGS = (
        "name",
        "description",
        "budget_cap",
        "likert_reward",
        "comparison_reward",
        "assignments_per_hit",
        "top_k",
        "pair_budget_fraction",
        "batch_pairs",
        "trap_rate",
        "consent_text",
    )

    def __init__(self, *args, campaign: Campaign, **kwargs):
        super().__init__(
            *args, initial={name: getattr(campaign, name) for name in self.SETTINGS}, channel=campaign.channel, **kwargs
        )
        for name in set(self.fields) - set(self.SETTINGS):
            del self.fields[name]
        self.published = campaign_has_published(campaign)
        if self.published:
            for name in set(self.fields) & set(FIXED_AFTER_PUBLISH):
                self.fields[name].widget.attrs["readonly"] = True
                self.fields[name].help_text = "Fixed: the campaign has published work. " + self.fields[name].help_text

    @property
    def changes(self) -> dict:
        return {name: self.cleaned_data[name] for name in self.changed_data}


class ImportForm(forms.Form):
    file = forms.FileField(
        label="Proposition file",
        help_text="TSV, CSV or JSON Lines with topic, subject, relation, object (optional: confidence, source, "
        "id); or Open IE output. Rows below the minimum confidence are left out.",
    )
    topics = forms.FileField(
        label="Topic descriptions (optional)",
        required=False,
        help_text="TSV or CSV with key and description. Workers see only the description, so a topic "
        "cannot be published without one.",
    )
    traps = forms.FileField(
        label="Traps (optional)",
        required=False,
        help_text="Statements a careful worker rates low, so that careless ones can be told apart (Falke & "
        "Gurevych 2017, §4). Their kind is chosen below.",
    )
    trap_kind = forms.ChoiceField(
        label="Kind of traps",
        choices=[
            ("subtle", "Subtle: plausible but off-topic statements, in the same columns as the propositions"),
            ("obvious", "Obvious: sentences such as “Please rate this as not important”, one per line"),
        ],
        initial="subtle",
        required=False,  # a client that sends none: subtle, the import's own default for a traps file
        widget=forms.RadioSelect,
        help_text="Subtle traps join their topics. Obvious sentences replace the campaign's own, which every topic "
        "shows; they are fixed once the campaign has published.",
    )
    format = forms.ChoiceField(
        label="Format",
        choices=[("auto", "Auto: from its name and first line"), *((name, name) for name in FORMATS)],
        initial="auto",
        required=False,
    )
    delimiter = forms.ChoiceField(
        label="Delimiter (TSV and CSV)",
        choices=[("auto", "Auto: from the header"), *((name, name.capitalize()) for name in DELIMITERS)],
        initial="auto",
        required=False,
        help_text="Excel writes semicolons where the decimal mark is a comma; their confidences may read 0,75.",
    )
    min_confidence = forms.FloatField(
        label="Minimum confidence",
        min_value=0.0,
        max_value=1.0,
        initial=0.5,
        required=False,
        help_text="0.5, as in the paper: Open IE extractions below it are mostly wrong. Rows without a confidence "
        "are kept.",
    )

    def clean_trap_kind(self):
        return self.cleaned_data["trap_kind"] or "subtle"

    def clean_format(self):
        return self.cleaned_data["format"] or "auto"

    def clean_delimiter(self):
        return self.cleaned_data["delimiter"] or "auto"

    def clean_min_confidence(self):
        value = self.cleaned_data["min_confidence"]
        return 0.5 if value is None else value

    def clean(self):
        """Obvious traps are read here, as the sentences they are (`obvious_traps`); subtle ones go to
        the import as a file."""
        cleaned = super().clean() or {}
        traps = cleaned.get("traps")
        cleaned["obvious_traps"] = None
        if traps and cleaned.get("trap_kind") == "obvious":
            try:
                cleaned["obvious_traps"] = obvious_traps_read(traps)
            except forms.ValidationError as error:
                self.add_error("traps", error)
        return cleaned


OBVIOUS_TRAPS_MAX = 20
OBVIOUS_TRAP_MAX_CHARS = 300


def obvious_traps_read(upload) -> list[str]:
    """The sentences of an obvious-traps file: UTF-8 text, one a line, blank lines skipped."""
    try:
        text = upload.read().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise forms.ValidationError(f"{upload.name}: not UTF-8 text (byte {error.start}).") from None
    sentences = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    if not sentences:
        raise forms.ValidationError(f"{upload.name} holds no sentence: write one obvious trap a line.")
    if len(sentences) > OBVIOUS_TRAPS_MAX:
        raise forms.ValidationError(f"{upload.name} has {len(sentences)} lines: at most {OBVIOUS_TRAPS_MAX}.")
    long = [number for number, sentence in enumerate(sentences, 1) if len(sentence) > OBVIOUS_TRAP_MAX_CHARS]
    if long:
        raise forms.ValidationError(
            f"{upload.name}: line {long[0]} is longer than {OBVIOUS_TRAP_MAX_CHARS} characters; an obvious trap is "
            "one short sentence."
        )
    return sentences


class TopicDescriptionForm(forms.Form):
    """A topic's description, as its workers will read it (annotation.topic_descriptions)."""

    description = forms.CharField(
        label="Description",
        max_length=DESCRIPTION_MAX_CHARS,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="What workers are asked about, e.g. “students loans without credit history”. Fixed once the "
        "topic's Likert round is built.",
    )


class PublishForm(forms.Form):
    """Confirms publishing; for production the researcher types the campaign's slug,
    the dashboard's equivalent of the publish command's --live."""

    confirmation = forms.CharField(required=False, label="Type the campaign's slug to confirm")

    def __init__(self, *args, campaign: Campaign, **kwargs):
        super().__init__(*args, **kwargs)
        self.campaign = campaign

    @property
    def needs_typed_confirmation(self) -> bool:
        return self.campaign.environment == Campaign.Environment.PRODUCTION

    def clean_confirmation(self):
        typed = self.cleaned_data["confirmation"].strip()
        if self.needs_typed_confirmation and typed != self.campaign.slug:
            raise forms.ValidationError(
                f"This publishes to {channel_policy(self.campaign.channel).short_name} production with real money: "
                f"type {self.campaign.slug} to confirm."
            )
        return typed
