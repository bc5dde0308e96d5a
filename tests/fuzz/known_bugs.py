"""Bugs the fuzz tests found and that are not fixed yet (issue #7).

Each one is reproduced by a strict xfail test with a minimal input, whose reason is the text
below. The properties skip an example only when it fails in exactly one of these ways,
recognised by the exception's type and message (`skip_known_bug`), so they keep fuzzing
everything else. When a bug is fixed its xfail test passes, strict xfail turns that into a
failure, and whoever fixed it deletes the marker, the entry here and its signature.
"""

import csv
import re

from django.db import DataError, OperationalError
from hypothesis import event, reject

# --- importers (annotation/formats.py, annotation/importers.py) ----------------------------

TOPIC_KEY_TOO_LONG = (
    "bug: a topic key over Topic.key's 100 characters (from a row, the topics file, or an Open IE file name) is not "
    "checked: PostgreSQL raises DataError (a 500 through the API), SQLite stores it past max_length"
)
NUL_CHARACTER = (
    "bug: a NUL character in a field (a JSON \\u0000 escape, or a NUL byte after the 8 KiB that _check_readable "
    "sniffs) reaches PostgreSQL, which refuses it: ValueError, a 500"
)
LONE_SURROGATE = (
    "bug: a JSON \\ud800 escape (e.g. a surrogate pair cut by a truncated file) decodes to a lone surrogate that no "
    "database driver can encode: UnicodeEncodeError from the insert, a 500"
)
JSON_NUMBER_OVERFLOW = (
    "bug: formats.parse_confidence catches TypeError and ValueError, not the OverflowError of float() on a JSON "
    "integer past 1e308"
)
JSON_INT_DIGITS = (
    "bug: formats.read_jsonl catches JSONDecodeError only; json.loads raises a plain ValueError for an integer of "
    "more than sys.get_int_max_str_digits() (4300) digits"
)
JSON_DEEP_NESTING = "bug: formats.read_jsonl lets the RecursionError of json.loads on deeply nested arrays escape"
TOPICS_CSV_ERROR = (
    "bug: formats.read_topics does not catch csv.Error (a bare CR in a row, a field over 131,072 characters), "
    "unlike read_tabular"
)
LONG_PROPOSITION = (
    "bug: a proposition whose normalized text is over about 2,700 bytes (incompressible) does not fit PostgreSQL's "
    "btree index row for proposition_unique_text: OperationalError, a 500"
)
CR_LINE_BREAKS = (
    "bug: an upload (API, admin, dashboard) is read with Django's File.__iter__, which ends lines at a bare CR too; "
    "the command's file and a BytesIO end them at LF only: the same bytes get other verdicts and line numbers"
)

# --- HIT submission (annotation/answers.py, annotation/submission.py, annotation/views.py) --

INT_DIGITS_IN_FORM = (
    "bug: int() of a digit string over 4300 digits raises ValueError: submission.time_on_task (elapsed_ms) and "
    "answers._int_or_none (rating-<id> names, scores, order parts) check isdigit() but not the length: a 500 for "
    "any worker holding a token"
)
RATING_ALIASES = (
    "bug: answers._likert_parse reads rating-7, rating-07 and 'rating- 7' as statement 7 without noticing that two "
    "fields rate it; the last one wins"
)
BAD_REQUEST_NOT_JSON = (
    "bug: a body Django refuses before the view runs (unparseable multipart, over DATA_UPLOAD_MAX_NUMBER_FIELDS "
    "fields or DATA_UPLOAD_MAX_MEMORY_SIZE bytes) gets Django's bare 'Bad Request (400)' page: HTML with no "
    "message, even for Accept: application/json, and without the HIT frame headers"
)

# --- REST API and its schema (config/api_urls.py, crowd/api.py, crowd/serializers.py) -----

SCHEMA_OMITS_ERRORS = (
    "schema: no operation documents its error responses (401 without a token, 404 for an unknown or another "
    "researcher's campaign, 400 for a refused body, 409 for a published campaign's settings): only the success"
)
BLANK_OVERRIDE_STATUS = (
    "schema: WorkerQuality.override_status is '' until an admin overrides it, but the schema's enum "
    "(WorkerQualityStatusEnum: ok, excluded) does not allow ''"
)
LINK_ID_NOT_A_NUMBER = (
    "bug: crowd/api.py ParticipantLinkViewSet.revoke passes the URL's id to get_object_or_404 unchecked; a "
    "non-numeric id raises ValueError (a 500), not a 404 (lookup_value_converter = 'int' fixes route and schema)"
)

_SIGNATURES = [
    (DataError, re.compile(r"value too long for type character varying\(100\)"), TOPIC_KEY_TOO_LONG),
    (ValueError, re.compile(r"cannot contain NUL \(0x00\) characters"), NUL_CHARACTER),
    (UnicodeEncodeError, re.compile(r"surrogates not allowed"), LONE_SURROGATE),
    (OverflowError, re.compile(r"int too large to convert to float"), JSON_NUMBER_OVERFLOW),
    (ValueError, re.compile(r"Exceeds the limit \(\d+ digits\) for integer string conversion"), JSON_INT_DIGITS),
    (RecursionError, re.compile(r"maximum recursion depth exceeded while decoding"), JSON_DEEP_NESTING),
    (csv.Error, re.compile(r"new-line character seen in unquoted field|field larger than field limit"), TOPICS_CSV_ERROR),
    (OperationalError, re.compile(r"index row (requires|size)"), LONG_PROPOSITION),
]


def known_bug(error: BaseException) -> str | None:
    """The known bug that `error` is, if it is one of them."""
    for kind, message, bug in _SIGNATURES:
        if isinstance(error, kind) and message.search(str(error)):
            return bug
    return None


def skip_known_bug(error: BaseException) -> None:
    """Drop the current hypothesis example if `error` is a known bug (counted in the
    statistics: pytest --hypothesis-show-statistics); return otherwise."""
    bug = known_bug(error)
    if bug:
        event(f"known bug: {bug[:60]}")
        reject()
