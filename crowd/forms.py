"""Forms of the worker-quality pages."""

from django import forms

from crowd.models import WorkerQuality


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
