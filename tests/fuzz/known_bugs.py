"""Bugs the fuzz tests found and that are not fixed yet (issue #7).

Each one is reproduced by a strict xfail test with a minimal input, whose reason is the text
below. The properties skip an example only when it fails in exactly one of these ways,
recognised by the exception's type and message (`skip_known_bug`), so they keep fuzzing
everything else. When a bug is fixed its xfail test passes, strict xfail turns that into a
failure, and whoever fixed it deletes the marker, the entry here and its signature.
"""

import re

from hypothesis import event, reject

# (exception type, message pattern, bug text) of each known bug a property may meet. None is
# known at present: the bugs of the first pass are fixed, their xfail tests now regression
# tests (test_importers.py, test_import_interfaces.py, test_submission.py, test_api_schema.py).
_SIGNATURES: list[tuple[type[BaseException], re.Pattern, str]] = []


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
