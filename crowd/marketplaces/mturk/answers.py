"""MTurk's copy of an answer: QuestionFormAnswers XML back to form fields (reference §3.5).

Each field the HIT page posted to externalSubmit becomes one `<Answer>` with the field name
in `QuestionIdentifier` and the value in `FreeText` (or `SelectionIdentifier`s). The result
has the shape of a posted form, `{name: [values]}`, so the HIT page's own parser
(`crowd.hit_page.answers.answer_parse`) validates it; nothing here trusts it to fit the task.
"""

import xml.etree.ElementTree as ElementTree

from crowd.marketplaces.base import InvalidRemoteAnswer

# Names MTurk reserves for itself; whether they appear in the answer is unverified.
RESERVED_FIELDS = frozenset({"assignmentId", "hitId", "workerId", "turkSubmitTo"})


class InvalidAnswerXML(InvalidRemoteAnswer):
    code = "invalid_answer_xml"


def answer_fields(xml_text: str) -> dict[str, list[str]]:
    """`{field name: [values]}` from a QuestionFormAnswers document; reserved names dropped."""
    if not xml_text.strip():
        return {}
    if "<!DOCTYPE" in xml_text or "<!ENTITY" in xml_text:
        raise InvalidAnswerXML("The answer XML declares a document type; MTurk never sends one.")
    try:
        root = ElementTree.fromstring(xml_text)
    except ElementTree.ParseError as exc:
        raise InvalidAnswerXML(f"The answer XML cannot be parsed: {exc}.") from exc
    fields: dict[str, list[str]] = {}
    for answer in root.iterfind("{*}Answer"):
        name = (answer.findtext("{*}QuestionIdentifier") or "").strip()
        if not name or name in RESERVED_FIELDS:
            continue
        values = [element.text or "" for element in answer.iterfind("{*}FreeText")]
        values += [element.text or "" for element in answer.iterfind("{*}SelectionIdentifier")]
        values += [element.text or "" for element in answer.iterfind("{*}OtherSelectionText")]
        fields.setdefault(name, []).extend(values)
    return fields
