"""An open link's participant codes: what a code is, when two codes are one participant, and
which codes the researcher lets in.

A code is 1–40 letters, digits, dots, dashes or underscores, read without the spaces around it
and without regard to case: `P-017` and ` p-017 ` are one participant (issue 25, point 7). The
researcher may restrict an open link to a list of codes (one per line) and/or a pattern (a
regular expression the whole code must match, case aside); a code on the list or matching the
pattern is let in, any other is refused before a session or a worker exists. Without either,
any well-formed code is let in (every link made before restrictions existed stays so).

A pattern is researcher text run on every arrival, so it is bounded three ways: at most
PATTERN_MAX_CHARS characters; refused when saved if it takes longer than MATCH_SECONDS on any of
a few hostile probes (catastrophic backtracking such as `(?:a{1,3}){1,40}b`); and every match at arrival
runs under the same timeout, a timed-out match counting as a refusal (the `regex` module's
timeout: Python's `re` has none).
"""

import logging
import re
from dataclasses import dataclass

import regex

from config.errors import ApplicationError
from crowd.models import ParticipantLink

log = logging.getLogger(__name__)

CODE = re.compile(r"[A-Za-z0-9_.-]{1,40}")
CODE_WORDING = "letters, digits, dots, dashes or underscores, at most 40"
CODES_MAX = 10_000  # lines of a pasted list
PATTERN_MAX_CHARS = 200
MATCH_SECONDS = 0.05
# Codes a pattern must answer quickly: long runs of these characters and of the code
# characters the pattern itself names, which almost match.
_PROBE_RUNS = "a0_.-"


def code_normalise(code: str) -> str:
    """The participant a code names: spaces around it and case do not count."""
    return code.strip().casefold()


def code_valid(code: str) -> bool:
    return CODE.fullmatch(code.strip()) is not None


@dataclass(frozen=True)
class CodeRule:
    """What the researcher gave: the normalised codes (in the order given, no repeats) and the pattern."""

    codes: tuple[str, ...] = ()
    pattern: str = ""


def code_rule_parse(*, codes_text: str, pattern: str) -> CodeRule:
    """The researcher's list (one code per line, blank lines ignored) and pattern, checked. An
    ApplicationError whose `details["field"]` is "codes" or "pattern" names what is wrong and
    where (the list's line numbers)."""
    lines = codes_text.splitlines()
    if len(lines) > CODES_MAX:
        raise _field_error("codes", f"{len(lines):,} lines: a list takes at most {CODES_MAX:,} codes.")
    wrong = [f"line {number}" for number, line in enumerate(lines, 1) if line.strip() and not code_valid(line)]
    if wrong:
        shown = ", ".join(wrong[:10]) + (f" and {len(wrong) - 10} more" if len(wrong) > 10 else "")
        raise _field_error("codes", f"Not a participant code ({CODE_WORDING} characters): {shown}.")
    codes = tuple(dict.fromkeys(code_normalise(line) for line in lines if line.strip()))
    return CodeRule(codes=codes, pattern=_pattern_check(pattern.strip()))


def _pattern_check(pattern: str) -> str:
    if not pattern:
        return ""
    if len(pattern) > PATTERN_MAX_CHARS:
        raise _field_error("pattern", f"{len(pattern)} characters: a pattern takes at most {PATTERN_MAX_CHARS}.")
    try:
        compiled = regex.compile(pattern, regex.IGNORECASE)
    except (regex.error, RecursionError, OverflowError) as error:
        raise _field_error("pattern", f"Not a regular expression: {error}.") from None
    named = "".join(dict.fromkeys(char.lower() for char in pattern if CODE.fullmatch(char)))[:10]
    for run in dict.fromkeys(_PROBE_RUNS + named):
        for probe in (run * 39 + "!", run * 40, (run + "-") * 20):
            try:
                compiled.fullmatch(probe, timeout=MATCH_SECONDS)
            except TimeoutError:
                raise _field_error(
                    "pattern",
                    "This pattern takes too long to check a code (a repetition inside a repetition, such as "
                    "(?:a{1,3}){1,40}, can backtrack without end): write it without nested repetition, e.g. "
                    "P-[0-9]{3}.",
                ) from None
    return pattern


def _field_error(field: str, message: str) -> ApplicationError:
    return ApplicationError(message, code="invalid_code_rule", details={"field": field})


def link_code_rule(link: ParticipantLink) -> CodeRule:
    return CodeRule(codes=tuple(link.codes_allowed.split()), pattern=link.code_pattern)


def code_let_in(*, link: ParticipantLink, code: str) -> bool:
    """The link lets this well-formed code in: no restriction, on the list, or matching the
    pattern in time."""
    rule = link_code_rule(link)
    if not rule.codes and not rule.pattern:
        return True
    normal = code_normalise(code)
    if normal in rule.codes:
        return True
    if not rule.pattern:
        return False
    try:
        return regex.fullmatch(rule.pattern, normal, regex.IGNORECASE, timeout=MATCH_SECONDS) is not None
    except (regex.error, TimeoutError):
        log.warning("Open link %s: its code pattern timed out or failed on a code; the code was refused.", link.pk)
        return False


def link_codes_set(*, link: ParticipantLink, rule: CodeRule) -> ParticipantLink:
    """Restrict an open link's codes to `rule` (an empty rule lifts the restriction). Sessions
    already open keep going; the rule is asked at each new arrival."""
    if link.kind != ParticipantLink.Kind.OPEN:
        raise ApplicationError(
            "Only an open link asks for participant codes; a personal link is its one participant.",
            code="link_not_open",
        )
    link.codes_allowed = "\n".join(rule.codes)
    link.code_pattern = rule.pattern
    link.save(update_fields=["codes_allowed", "code_pattern"])
    return link


def code_rule_wording(link: ParticipantLink) -> str:
    """For the Channel page: which codes the link lets in."""
    rule = link_code_rule(link)
    parts = []
    if rule.codes:
        parts.append(f"{len(rule.codes)} listed code{'s' if len(rule.codes) != 1 else ''}")
    if rule.pattern:
        parts.append(f"codes matching {rule.pattern}")
    return " or ".join(parts) if parts else "any code"
