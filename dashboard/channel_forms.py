"""Forms of the worker-quality pages."""

import json
from typing import Any

from django import forms

from annotation.models import Campaign
from config.errors import ApplicationError
from crowd.channels.links.codes import CodeRule, code_rule_parse
from crowd.marketplaces.prolific import eligibility
from crowd.marketplaces.prolific.filters import campaign_prolific_filters, prolific_filters_check
from crowd.marketplaces.prolific.study_opening import seconds_per_task
from crowd.marketplaces.registry import channel_choices, policies
from crowd.models import ParticipantLink, WorkerQuality
from crowd.sessions.holds import IDLE_MINUTES_MAX, IDLE_MINUTES_MIN


class OverrideForm(forms.Form):
    """An admin's decision on one worker; the reason goes into the audit trail."""

    status = forms.ChoiceField(
        choices=[
            ("", "Clear the override"),
            (WorkerQuality.Status.OK, "Include"),
            (WorkerQuality.Status.EXCLUDED, "Exclude"),
        ],
        required=False,
    )
    reason = forms.CharField(max_length=1000, strip=True)
    next = forms.CharField(required=False)


class ChannelForm(forms.Form):
    """Where a draft campaign recruits, and how long a session is."""

    channel = forms.ChoiceField(choices=channel_choices)  # MTurk labelled closed, by its policy
    environment = forms.ChoiceField(
        choices=Campaign.Environment.choices,
        help_text="Local rehearses on this server's own endpoint. "
        + " ".join(f"{p.label}: {', '.join(label for _, label in p.environments)}." for p in policies()),
    )
    tasks_per_session = forms.IntegerField(min_value=1, max_value=100, help_text="Prolific and links only.")
    # Prolific's estimated completion time and its pay check (crowd.marketplaces.prolific.policy).
    seconds_per_task = forms.IntegerField(
        label="Seconds per task (Prolific)",
        min_value=5,
        max_value=3600,
        required=False,
        help_text="How long one task takes a participant: the study's estimated time, and the time Prolific's "
        "minimum hourly pay is checked at. Rewards under that minimum are raised to it when you save.",
    )
    # Prolific's eligibility filters (crowd.marketplaces.prolific.eligibility): four fields, and
    # anything else as Prolific's own JSON; stored together as one list.
    approval_rate_min = forms.IntegerField(
        label="Approval rate at least (%)",
        required=False,
        min_value=0,
        max_value=100,
        help_text="The share of their earlier submissions that researchers approved. Empty: any.",
    )
    previous_submissions_min = forms.IntegerField(
        label="Approved submissions at least",
        required=False,
        min_value=0,
        max_value=1_000_000,
        help_text="How many studies they have done on Prolific and had approved. Empty: any.",
    )
    # Choices with Prolific's ids, set per form from filters.eligibility_choices().
    countries = forms.MultipleChoiceField(
        label="Country of residence",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: any country. Others: as custom filters below.",
    )
    first_languages = forms.MultipleChoiceField(
        label="First language", required=False, widget=forms.CheckboxSelectMultiple, help_text="None ticked: any."
    )
    prolific_filters = forms.CharField(
        label="Custom filters (JSON)",
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        required=False,
        max_length=20_000,
        help_text=(
            'Any other filter, as a JSON list in the shape Prolific\'s API takes, e.g. [{"filter_id": "age", '
            '"selected_range": {"lower": 18, "upper": 30}}]; filter ids and choice ids are listed by Prolific\'s '
            "GET /api/v1/filters/. Empty: no other filter."
        ),
    )

    FIELDS = ("approval_rate_min", "previous_submissions_min", "countries", "first_languages")

    def __init__(self, *args: Any, choices: eligibility.Choices, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.choices = choices
        self.fields["countries"].choices = choices.countries  # type: ignore[attr-defined]
        self.fields["first_languages"].choices = choices.first_languages  # type: ignore[attr-defined]

    @classmethod
    def initial_for(cls, campaign: Campaign, choices: eligibility.Choices) -> dict[str, Any]:
        """The form as the campaign stands: its filters split into the fields and the custom rest."""
        fields, custom = eligibility.eligibility_split(campaign_prolific_filters(campaign), choices)
        return {
            "channel": campaign.channel,
            "environment": campaign.environment,
            "tasks_per_session": campaign.tasks_per_session,
            "seconds_per_task": seconds_per_task(campaign),
            **{name: getattr(fields, name) for name in cls.FIELDS},
            "prolific_filters": json.dumps(custom, indent=2, ensure_ascii=False) if custom else "",
        }

    def clean_prolific_filters(self) -> list[dict]:
        text = self.cleaned_data["prolific_filters"].strip()
        if not text:
            return []
        try:
            filters = json.loads(text)
        except json.JSONDecodeError as error:
            raise forms.ValidationError(
                f"Not JSON: {error.msg} at line {error.lineno}, column {error.colno}."
            ) from None
        try:
            return prolific_filters_check(filters)
        except ApplicationError as error:
            raise forms.ValidationError(error.message) from None

    def clean(self) -> dict[str, Any]:
        """One list of filters, as stored (`prolific_filters`): the fields' first, then the custom
        ones; a custom filter that a filled-in field sets too is an error of the custom filters."""
        cleaned = super().clean() or {}
        fields = eligibility.Eligibility(
            approval_rate_min=cleaned.pop("approval_rate_min", None),  # None when empty (or in error)
            previous_submissions_min=cleaned.pop("previous_submissions_min", None),
            countries=cleaned.pop("countries", []),
            first_languages=cleaned.pop("first_languages", []),
        )
        custom = cleaned.get("prolific_filters")
        if custom is None:
            return cleaned  # its own error is shown
        from_fields = eligibility.eligibility_filters(fields, [])
        twice = sorted({item["filter_id"] for item in from_fields} & {item["filter_id"] for item in custom})
        if twice:
            self.add_error(
                "prolific_filters",
                f"{', '.join(twice)} {'is' if len(twice) == 1 else 'are'} set by the fields above too: remove "
                f"{'it' if len(twice) == 1 else 'them'} here, or clear the field.",
            )
            return cleaned
        cleaned["prolific_filters"] = prolific_filters_check(from_fields + custom)
        return cleaned


class LinksForm(forms.Form):
    """Personal links, one per line of `labels`, or one open link. The labels are for personal
    links only: for an open link they are ignored (static/js/links-form.js hides the field
    then), so text typed before choosing "open" never names it."""

    kind = forms.ChoiceField(choices=ParticipantLink.Kind.choices)
    labels = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        max_length=20_000,
        help_text="For personal links only: one line per invited person (a name or an e-mail; only you see it). "
        "An open link takes none.",
    )

    codes = forms.CharField(
        label="Participant codes allowed",
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        required=False,
        max_length=500_000,
        help_text="For an open link only: one code per line (capitals and spaces around a code do not matter). "
        "Empty, with no pattern either: any code is let in.",
    )
    code_pattern = forms.CharField(
        label="or codes matching",
        required=False,
        max_length=1000,  # the rule's own cap (codes.PATTERN_MAX_CHARS) gives the clearer message
        help_text="For an open link only: a regular expression the whole code must match, capitals aside, "
        "e.g. P-[0-9]{3} for P-000 to P-999. A code on the list or matching the pattern is let in.",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        data["code_rule"] = CodeRule()
        if data.get("kind") == ParticipantLink.Kind.OPEN:
            rule = code_rule_from(self, data)
            data["code_rule"] = rule or CodeRule()
        personal = data.get("kind") == ParticipantLink.Kind.PERSONAL
        lines = [line.strip() for line in data.get("labels", "").splitlines() if line.strip()] if personal else []
        if personal and not lines:
            self.add_error("labels", "Write one line per person to invite.")
        if len(lines) > 500:
            self.add_error("labels", f"{len(lines)} lines: create at most 500 links at a time.")
        data["lines"] = lines
        return data


def code_rule_from(form: forms.Form, data: dict[str, Any]) -> CodeRule | None:
    """The form's `codes` and `code_pattern` as a checked rule, or None with the error on its field."""
    try:
        return code_rule_parse(codes_text=data.get("codes", ""), pattern=data.get("code_pattern", ""))
    except ApplicationError as error:
        field = error.details.get("field") if isinstance(error.details, dict) else None
        form.add_error("code_pattern" if field == "pattern" else "codes", error.message)
        return None


class CodesForm(forms.Form):
    """Which codes an open link lets in (crowd.channels.links.codes): a list and/or a pattern."""

    codes = LinksForm.base_fields["codes"]
    code_pattern = LinksForm.base_fields["code_pattern"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if "codes" in data and "code_pattern" in data:
            data["code_rule"] = code_rule_from(self, data)
        return data


class IdleForm(forms.Form):
    """The campaign's idle window on participant links (crowd.sessions.holds.link_idle_set)."""

    idle_minutes = forms.IntegerField(
        label="Release an idle place after (minutes)",
        required=False,
        min_value=IDLE_MINUTES_MIN,
        max_value=IDLE_MINUTES_MAX,
        help_text=f"A task's place is freed when its page shows no sign of life for this long ({IDLE_MINUTES_MIN} "
        f"to {IDLE_MINUTES_MAX} minutes); the open page keeps it. Empty: the deployment's setting.",
    )
