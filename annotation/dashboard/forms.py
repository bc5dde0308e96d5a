"""Forms of the researcher's dashboard. Each default is the paper's (Falke & Gurevych 2017)
and says why, so a researcher changes it knowingly."""

from decimal import Decimal
from typing import cast

from django import forms
from django.db import models

from annotation.campaigns import FIXED_AFTER_PUBLISH, campaign_has_published
from annotation.models import Campaign
from crowd.marketplaces.registry import channel_policy

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
        "1,000 propositions at these rates on MTurk: Likert round about $71, comparisons about $19.",
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
        help_text="0.05: one Likert HIT in 20 carries a trap statement that a careful worker rates low, "
        "enough to spot careless workers at little cost.",
    )

    def __init__(self, *args, channel: str | None = None, **kwargs):
        """`channel`: the campaign's (a new campaign's is the model's default); its policy names
        the environments and the fees."""
        super().__init__(*args, **kwargs)
        policy = channel_policy(channel or _default("channel"))
        cast(forms.ChoiceField, self.fields["environment"]).choices = policy.environments
        self.fields["budget_cap"].help_text = self.fields["budget_cap"].help_text.format(fees=policy.fees_wording)

    def clean_slug(self):
        slug = self.cleaned_data["slug"]
        if slug in RESERVED_SLUGS:
            raise forms.ValidationError(f"{slug!r} is reserved for the dashboard's own pages: choose another slug.")
        return slug


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
        "id); or Open IE output. Rows below confidence 0.5 are left out.",
    )
    topics = forms.FileField(
        label="Topic descriptions (optional)",
        required=False,
        help_text="TSV or CSV with key and description. Workers see only the description, so a topic "
        "cannot be published without one.",
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
