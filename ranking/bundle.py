"""One download with every topic of a campaign: a zip holding, per topic, the ranking (CSV
and TSV), the raw labels (CSV) and the top 50 propositions (TSV, no header), with a README.txt that
says which file is which and which are spreadsheet-safe or exact.

The zip is written entry by entry into a file the caller gives (a temporary file for the
web, the `--output` of `export_ranking --all-topics`): one topic's ranking rows are in
memory at a time and the labels stream from the database, so a campaign of 30 topics of
1,750 propositions is never held in memory, let alone twice. The files are those of the
per-topic downloads, written by the same functions (ranking.export).
"""

import io
import itertools
import tempfile
import textwrap
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import IO, Generic, TypeVar

from django.utils import timezone

from annotation.models import Campaign, Topic
from ranking import export
from ranking.pipeline import TOP_FOR_CONCEPT_MAPS
from ranking.stopping import Stopping, topics_stopping

README_NAME = "README.txt"
T = TypeVar("T")


def bundle_filename(campaign: Campaign) -> str:
    return f"{campaign.slug}-all-topics.zip"


def topic_folder(topic: Topic) -> str:
    """The topic's folder in the zip: its key, or `topic-<id>` for a key the URL rule refuses
    (one imported before the rule), which could hold a "/" or be ".."."""
    return topic.key if topic.url_safe else f"topic-{topic.pk}"


def topic_files(campaign: Campaign, topic: Topic) -> dict[str, str]:
    """What each file of a topic is called, by what it holds: the per-topic downloads' names."""
    stem = f"{campaign.slug}-{topic_folder(topic)}"
    return {
        "ranking.csv": f"{stem}-ranking.csv",
        "ranking.tsv": f"{stem}-ranking.tsv",
        "labels.csv": f"{stem}-labels.csv",
        "top": f"{stem}-{export.TOP_PROPOSITIONS_NAME}",
    }


def campaign_bundle_file(*, campaign: Campaign) -> IO[bytes]:
    """The zip in a temporary file, rewound, for sending: the file is gone once closed, or at
    once if writing failed."""
    archive = tempfile.TemporaryFile()
    try:
        campaign_bundle_write(campaign=campaign, target=archive)
        archive.seek(0)
    except BaseException:
        archive.close()
        raise
    return archive


def campaign_bundle_write(*, campaign: Campaign, target: IO[bytes]) -> int:
    """Write the campaign's zip into `target` (binary, seekable or not); returns the number
    of topics. Each topic's files are in a folder of its own, under one named after the
    campaign; README.txt is beside the topic folders.

    The rankings, the Likert labels and the votes are each read in one query for the whole
    campaign, ordered by topic key, and taken topic by topic as the folders are written: the
    queries do not grow with the number of topics (tests/ranking/test_bundle.py)."""
    root = campaign.slug
    topics = list(campaign.topics.order_by("key"))
    propositions = _ByTopic(
        (p.topic_id, p)
        for p in export.campaign_ranked_with_ties(campaign=campaign).iterator(chunk_size=export.CAMPAIGN_CHUNK)
    )
    labels = export.campaign_label_rows(campaign=campaign, topics=topics)
    likert, votes = _ByTopic(labels.likert()), _ByTopic(labels.votes())
    stoppings = topics_stopping(campaign, topics)
    notes = []
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for topic in topics:
            folder = f"{root}/{topic_folder(topic)}"
            names = topic_files(campaign, topic)
            rows = export.ranked_rows(topic=topic, propositions=propositions.take(topic.pk))
            for fmt in ("csv", "tsv"):
                with _text_entry(archive, f"{folder}/{names['ranking.' + fmt]}") as stream:
                    export.write_rows(rows, fmt, stream)
            with _text_entry(archive, f"{folder}/{names['labels.csv']}") as stream:
                labelled = itertools.chain(likert.take(topic.pk), votes.take(topic.pk))
                export.write_rows(labelled, "csv", stream, columns=export.LABEL_COLUMNS)
            with _text_entry(archive, f"{folder}/{names['top']}") as stream:
                stream.write(
                    "".join(line + "\n" for line in export.top_proposition_lines_of(rows[:TOP_FOR_CONCEPT_MAPS]))
                )
            notes.append(_topic_note(topic, rows, stoppings[topic.pk]))
        archive.writestr(f"{root}/{README_NAME}", bundle_readme(campaign, notes))
    return len(topics)


class _ByTopic(Generic[T]):
    """A stream of (topic id, item) ordered by topic, taken one topic at a time, in that order."""

    def __init__(self, pairs: Iterable[tuple[int, T]]):
        self._pairs = iter(pairs)
        self._next: tuple[int, T] | None = next(self._pairs, None)

    def take(self, topic_id: int) -> Iterator[T]:
        """The items of `topic_id`, which must come next (a topic without items gives none)."""
        while self._next is not None and self._next[0] == topic_id:
            yield self._next[1]
            self._next = next(self._pairs, None)


@contextmanager
def _text_entry(archive: zipfile.ZipFile, name: str) -> Iterator[io.TextIOWrapper]:
    """A UTF-8 text stream into a new entry of `archive`; the CSV writers choose the line ends."""
    with archive.open(name, "w") as raw, io.TextIOWrapper(raw, encoding="utf-8", newline="") as text:
        yield text


def _topic_note(topic: Topic, rows: list[dict], stopping: Stopping) -> str:
    """A line of the README about one topic: its state and size, and whether the concept map's
    cut at the top 50 falls inside a tie (then the rows kept are the tied ones with the lowest ids)."""
    compared = sum(row["in_comparisons"] for row in rows)
    note = f"{topic_folder(topic)}/  {topic.state_label}: {len(rows)} propositions ranked, {compared} in the comparison rounds."
    if len(rows) > TOP_FOR_CONCEPT_MAPS:
        cut = rows[TOP_FOR_CONCEPT_MAPS - 1]
        last = cut["tie_rank"] + cut["tie_size"] - 1
        if last > TOP_FOR_CONCEPT_MAPS:
            note += (
                f" Ranks {cut['tie_rank']}-{last} are tied, so the top propositions' cut at {TOP_FOR_CONCEPT_MAPS} falls"
                " inside a tie: it keeps those with the lowest ids."
            )
    note += f" {stopping.sentence}"
    if stopping.likert_spearman is not None:
        note += f" Spearman ρ with the Likert-only order: {stopping.likert_spearman:.3f}."
    if topic.key != topic_folder(topic):
        note += f" (Topic key {topic.key!r}: not usable in a file or web address, so the folder is named by id.)"
    return note


def bundle_readme(campaign: Campaign, notes: list[str]) -> str:
    topics = "\n".join(f"  {note}" for note in notes) or "  (none yet)"
    return README_TEMPLATE.format(
        name=campaign.name,
        slug=campaign.slug,
        written=timezone.now().strftime("%Y-%m-%d %H:%M UTC"),
        count=len(notes),
        topics=topics,
        top=TOP_FOR_CONCEPT_MAPS,
        ranking_columns=_columns(export.RANKING_COLUMNS),
        label_columns=_columns(export.LABEL_COLUMNS),
    )


def _columns(names: tuple[str, ...]) -> str:
    return textwrap.fill(", ".join(names), width=86, initial_indent=" " * 8, subsequent_indent=" " * 8)


README_TEMPLATE = """\
Campaign "{name}" ({slug}): every topic's ranking, labels and concept map.
Written by Salience at {written}. All files are UTF-8 text.

Topics ({count}), one folder each:
{topics}

In the folder of topic KEY:

  {slug}-KEY-ranking.csv: SPREADSHEET-SAFE
      The ranking, best first: one row per proposition (traps left out). Columns:
{ranking_columns}
      (conservative is mu - 3 sigma; in_comparisons says whether the proposition went
      through the comparison rounds; ties below.)
      Open this one in Excel, LibreOffice Calc, Numbers or Google Sheets: a text cell
      starting with =, +, -, @, a tab or a carriage return has a leading ' added, so it
      shows as text and never runs as a formula. Numbers are plain numbers.

  {slug}-KEY-ranking.tsv: EXACT
      The same rows and columns, tab-separated, every text exactly as imported (a field
      holding a tab, a quote or a line break is quoted as in CSV). For scripts.

  {slug}-KEY-labels.csv: SPREADSHEET-SAFE
      Every Likert label and comparison vote its channel confirmed, one per row, with
      worker, assignment and time. Columns:
{label_columns}
      kind is likert (score 1-5) or comparison (winner placed above loser in one
      worker's ordering; untouched: submitted in the order shown). shown_order: the
      order the worker was shown the task's statements in, their own shuffle, ids top
      first separated by spaces (both kinds). excluded is True for
      a rejected answer or a worker quality control excludes: kept here, left out of the
      means and refits. Answers not yet confirmed by their channel are not in it.
      consent_version is the version of the consent text (the start of its SHA-256, as on
      the Channel page) the participant had agreed to when the task was handed to them;
      empty without a consent step (MTurk, or a campaign without a consent text). Text
      cells are neutralised as in the ranking CSV, so a worker id may carry a leading '
      that is not part of it.

  {slug}-KEY-top-50-propositions.tsv: EXACT (white space folded)
      The input of a concept map, not one: subject<TAB>relation<TAB>object, one
      proposition per line, the top {top} of the ranking, no header. A built map's .cmap
      comes from the topic's maps page. Texts are exact except that white space inside a field (tabs, line
      breaks, runs of spaces) is folded into one space, since tabs and line breaks
      separate the fields and lines.

Ranks and ties: rank numbers the rows 1, 2, 3, ... in the ranking's order: propositions
in the comparison rounds by TrueSkill mu (then sigma, the more certain first), then the
others by Likert mean, unrated last. Propositions the order cannot tell apart (exactly the
same mu and sigma, or outside the comparison rounds exactly the same Likert mean, or none)
are tied: they are listed by id, tie_rank is the rank they share (the best of theirs:
1, 2, 2, 4) and tie_size how many share it (1 when not tied). The ranking page shows the
same ties as "=12".

The same files, one topic at a time, are on each topic's ranking page.
"""
