"""The worker-side protocol: ExternalQuestion in, task URL out, QuestionFormAnswers back.

Reference §3: MTurk frames `ExternalURL` with `assignmentId`, `hitId`, `workerId` and
`turkSubmitTo` appended (`ASSIGNMENT_ID_NOT_AVAILABLE` in preview); the page posts its form
to `turkSubmitTo + "/mturk/externalSubmit"`; every posted field except the reserved ones
becomes one `<Answer>` of the QuestionFormAnswers document.

Only ExternalQuestion is served locally; plain http:// URLs are accepted (MTurk wants
https), so a development server works as the HIT page.
"""

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit
from xml.etree import ElementTree
from xml.sax.saxutils import escape

from .errors import RequestError

EXTERNAL_QUESTION_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd"
)
ANSWERS_NS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/QuestionFormAnswers.xsd"
PREVIEW_ASSIGNMENT_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"
RESERVED_FIELDS = frozenset({"assignmentId", "hitId", "turkSubmitTo", "workerId"})
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


@dataclass(frozen=True)
class ExternalQuestion:
    url: str
    frame_height: int


def external_question_parse(question: str) -> ExternalQuestion:
    """The URL and frame height of an ExternalQuestion; RequestError for anything else."""
    try:
        root = ElementTree.fromstring(question)
    except ElementTree.ParseError as exc:
        raise RequestError(f"The Question is not well-formed XML: {exc}.") from exc
    if root.tag != f"{{{EXTERNAL_QUESTION_NS}}}ExternalQuestion":
        raise RequestError(
            "The local endpoint supports only ExternalQuestion, in the namespace " + EXTERNAL_QUESTION_NS + "."
        )
    url = (root.findtext(f"{{{EXTERNAL_QUESTION_NS}}}ExternalURL") or "").strip()
    height = (root.findtext(f"{{{EXTERNAL_QUESTION_NS}}}FrameHeight") or "").strip()
    if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
        raise RequestError("ExternalQuestion needs an absolute ExternalURL.")
    if not height.isdigit():
        raise RequestError("ExternalQuestion needs a FrameHeight in whole pixels (0 = fit the window).")
    return ExternalQuestion(url=url, frame_height=int(height))


def task_url(external_url: str, *, assignment_id: str, hit_id: str, submit_to: str, worker_id: str = "") -> str:
    """`external_url` with MTurk's four parameters appended (workerId omitted in preview)."""
    parts = urlsplit(external_url)
    added = {"assignmentId": assignment_id, "hitId": hit_id}
    if worker_id:
        added["workerId"] = worker_id
    added["turkSubmitTo"] = submit_to
    query = parse_qsl(parts.query, keep_blank_values=True) + list(added.items())
    return urlunsplit(parts._replace(query=urlencode(query)))


def answers_xml(fields: list[tuple[str, str]]) -> str:
    """QuestionFormAnswers for posted (name, value) pairs, reserved names dropped, in order.

    The document declares ASCII, so other characters become character references; control
    characters XML cannot hold are dropped.
    """
    answers = "".join(
        f"<Answer><QuestionIdentifier>{escape(name)}</QuestionIdentifier><FreeText>{escape(value)}</FreeText></Answer>"
        for name, value in fields
        if name not in RESERVED_FIELDS
    )
    document = f'<?xml version="1.0" encoding="ASCII"?><QuestionFormAnswers xmlns="{ANSWERS_NS}">{answers}</QuestionFormAnswers>'
    return _NOT_XML.sub("", document).encode("ascii", "xmlcharrefreplace").decode("ascii")
