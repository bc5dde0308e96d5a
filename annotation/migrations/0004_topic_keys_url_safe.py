"""Topic keys become safe for URLs (annotation/url_keys.py): existing bad keys are renamed.

Why rename rather than refuse: a topic whose key holds a "/" cannot be reached by any URL, so
it can never be published, ranked, downloaded or inspected, from the dashboard or the API; a
page that refused it would leave it stuck for good, and the admin now refuses such a key, so
renaming is the one way out anyway. The rename is deterministic and keeps what it can:
accents dropped ("café" → "cafe"), every run of other characters outside letters, digits,
"-", "_" and "." replaced by one "-", a dot not between two other characters replaced by "-",
cut to 100 characters; if no letter or digit is left it is "topic", and if another topic of the
campaign already has it, "-2", "-3", ... is appended. Labels, scores and batches hang on the
topic's id, not its key, so nothing else changes. Each rename is printed (campaign, old key,
new key) so the operator can tell the researcher; a re-import of the old file is now refused
with file:line naming the allowed characters, never silently made into a second topic.

Reversing keeps the new keys (the old ones are exactly what cannot be served). The rule is
copied here, not imported, so this migration keeps doing what it did when the rule changes.
"""

import re
import unicodedata

import django.core.validators
from django.db import migrations, models

MAX_CHARS = 100
SAFE = re.compile(r"\A[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\Z")
OTHER_CHARACTERS = re.compile(r"[^A-Za-z0-9_.-]+")
LONE_DOT = re.compile(r"(?<![A-Za-z0-9_-])\.|\.(?![A-Za-z0-9_-])")
LETTER_OR_DIGIT = re.compile(r"[A-Za-z0-9]")


def safe_key(key: str) -> str:
    decomposed = unicodedata.normalize("NFKD", key)
    text = "".join(character for character in decomposed if not unicodedata.combining(character))
    text = LONE_DOT.sub("-", OTHER_CHARACTERS.sub("-", text))[:MAX_CHARS].rstrip(".")
    return text if LETTER_OR_DIGIT.search(text) else "topic"


def unique_key(base: str, taken: set[str]) -> str:
    key, number = base, 1
    while key in taken:
        number += 1
        suffix = f"-{number}"
        key = base[: MAX_CHARS - len(suffix)].rstrip(".") + suffix
    return key


def rename_unsafe_keys(apps, schema_editor):
    Topic = apps.get_model("annotation", "Topic")
    unsafe = [topic for topic in Topic.objects.select_related("campaign").order_by("pk") if not SAFE.match(topic.key)]
    for topic in unsafe:
        taken = set(Topic.objects.filter(campaign_id=topic.campaign_id).values_list("key", flat=True))
        new_key = unique_key(safe_key(topic.key), taken)
        print(f"\n  campaign {topic.campaign.slug}: topic key {topic.key!r} renamed to {new_key!r}", end="")
        Topic.objects.filter(pk=topic.pk).update(key=new_key)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0003_verbose_names"),
    ]

    operations = [
        migrations.RunPython(rename_unsafe_keys, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="topic",
            name="key",
            field=models.CharField(
                help_text="Part of the topic's web addresses: letters, digits, '-', '_' and '.' only.",
                max_length=100,
                validators=[
                    django.core.validators.RegexValidator(
                        "\\A[A-Za-z0-9_-]+(?:\\.[A-Za-z0-9_-]+)*\\Z",
                        code="invalid_topic_key",
                        message='A topic key goes into web addresses: use only letters A-Z and a-z, digits 0-9, "-", '
                        '"_" and "." (a dot only between two other characters).',
                    )
                ],
            ),
        ),
    ]
