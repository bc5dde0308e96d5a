"""Forms of the worker-quality pages."""

import json
from typing import Any

from django import forms

from annotation.models import Campaign
from config.errors import ApplicationError
from crowd.marketplaces.prolific.filters import prolific_filters_check
from crowd.marketplaces.registry import policies
from crowd.models import ParticipantLink, WorkerQuality


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

    channel = forms.ChoiceField(choices=Campaign.Channel.choices)
    environment = forms.ChoiceField(
        choices=Campaign.Environment.choices,
        help_text="Local rehearses on this server's own endpoint. "
        + " ".join(f"{p.label}: {', '.join(label for _, label in p.environments)}." for p in policies()),
    )
    tasks_per_session = forms.IntegerField(min_value=1, max_value=100, help_text="Prolific and links only.")
    prolific_filters = forms.CharField(
        label="Prolific filters",
        widget=forms.Textarea(attrs={"rows": 5, "spellcheck": "false"}),
        required=False,
        max_length=20_000,
        help_text=(
            'Prolific only. A JSON list, as Prolific\'s API takes it, e.g. [{"filter_id": "approval_rate", '
            '"selected_range": {"lower": 95}}]; filter ids and choices are listed by Prolific\'s '
            "GET /api/v1/filters/. Empty: anyone on Prolific."
        ),
    )

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


class LinksForm(forms.Form):
    """Personal links, one per line of `labels`, or one open link."""

    kind = forms.ChoiceField(choices=ParticipantLink.Kind.choices)
    labels = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        max_length=20_000,
        help_text="Personal links: one line per invited person (a name or an e-mail; only you see it).",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        lines = [line.strip() for line in data.get("labels", "").splitlines() if line.strip()]
        if data.get("kind") == ParticipantLink.Kind.PERSONAL and not lines:
            self.add_error("labels", "Write one line per person to invite.")
        if len(lines) > 500:
            self.add_error("labels", f"{len(lines)} lines: create at most 500 links at a time.")
        data["lines"] = lines
        return data
