"""The import through its interfaces (`POST /api/campaigns/<slug>/propositions/import`, the
import_propositions command) on fuzzed files and form fields: never a 500 or a traceback,
a 400 that says what to fix, nothing written on refusal, and the same verdict on the same
file as propositions_import itself."""

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from hypothesis import event, given
from hypothesis import strategies as st

from annotation.importing.importers import ImportFailed, propositions_import
from tests.fuzz.examples import FUZZ_SLOW, isolated
from tests.fuzz.import_checks import (
    assert_imported_whole,
    assert_nothing_written,
    assert_problems_name_lines,
    import_snapshot,
)
from tests.fuzz.known_bugs import skip_known_bug
from tests.fuzz.proposition_files import (
    ProposedFile,
    arbitrary_files,
    mutated_files,
    mutated_topics_files,
    topics_files,
    valid_files,
)

pytestmark = pytest.mark.django_db

_any_file = st.one_of(valid_files(), mutated_files(), arbitrary_files())
_any_topics = st.one_of(st.none(), topics_files(), mutated_topics_files())
# Text a multipart form can carry (the test client writes it as UTF-8).
_form_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)


def _upload(api_client, campaign, file: ProposedFile, topics: ProposedFile | None = None, **fields):
    form = {"file": SimpleUploadedFile(file.name, file.content), **fields}
    if topics is not None:
        form["topics"] = SimpleUploadedFile(topics.filename, topics.content)
    try:
        return api_client.post(reverse("api-proposition-import", args=[campaign.slug]), form, format="multipart")
    except Exception as error:  # the test client re-raises what the view let escape: a 500
        skip_known_bug(error)
        raise


def _direct(campaign, file: ProposedFile, topics: ProposedFile | None = None) -> dict:
    """What propositions_import says of the same bytes: {"summary": ...} or {"code": ..., "problems": [...]}."""
    try:
        summary = propositions_import(
            campaign=campaign,
            source=io.BytesIO(file.content),
            filename=file.name,
            format=file.format,
            topic_key=file.topic_key,
            topics_source=io.BytesIO(topics.content) if topics else None,
            topics_filename=topics.filename if topics else "topics",
        )
    except ImportFailed as failure:
        return {"code": failure.code, "problems": failure.details}
    except Exception as error:
        skip_known_bug(error)
        raise
    return {"summary": summary.as_dict()}


def _assert_api_contract(response, body, before, campaign, *files: ProposedFile) -> None:
    """201 with the whole file imported, or 400 saying what to fix with nothing written."""
    assert response.status_code in (201, 400), body
    if response.status_code == 201:
        assert_imported_whole(body, before, campaign)
        return
    assert_nothing_written(before, campaign)
    if "problems" in body:  # the importer's refusal
        assert body["code"].startswith("import_") and body["message"]
        assert_problems_name_lines(body["problems"], *[file for file in files if file])
    else:  # the form's: field -> messages
        assert body and set(body) <= {"file", "topics", "format", "min_confidence", "topic"}
        assert all(isinstance(messages, list) and all(messages) for messages in body.values()), body


@FUZZ_SLOW
@given(file=_any_file, topics=_any_topics)
def test_the_api_gives_the_importers_verdict_on_the_same_bytes(api_client, campaign, file, topics):
    fields = {"format": file.format, **({"topic": file.topic_key} if file.topic_key else {})}
    with isolated():
        expected = _direct(campaign, file, topics)
    with isolated():
        before = import_snapshot(campaign)
        response = _upload(api_client, campaign, file, topics, **fields)
        body = response.json()
        event(f"API {response.status_code}")
        empty_uploads = {name for name, upload in (("file", file), ("topics", topics)) if upload and not upload.content}
        if empty_uploads:  # the form refuses an empty upload before the importer sees it
            assert response.status_code == 400 and set(body) == empty_uploads, body
            assert_nothing_written(before, campaign)
        elif "summary" in expected:
            assert response.status_code == 201, body
            assert body == expected["summary"]
            assert_imported_whole(body, before, campaign)
        else:
            assert response.status_code == 400, body
            assert (body.get("code"), body.get("problems")) == (expected["code"], expected["problems"]), (body, file)
            assert body["message"]
            assert_nothing_written(before, campaign)


@FUZZ_SLOW
@given(
    file=_any_file,
    format=st.one_of(st.sampled_from(["auto", "tsv", "csv", "jsonl", "openie"]), _form_text),
    min_confidence=st.one_of(st.sampled_from(["0", "0.5", "1", "1.5", "-0.1", "nan", "inf", "1e309", ""]), _form_text),
    topic=st.one_of(st.none(), _form_text, st.text(st.characters(codec="ascii"), min_size=95, max_size=110)),
)
def test_any_form_fields_get_a_201_or_a_400_that_says_what_to_fix(
    api_client, campaign, file, format, min_confidence, topic
):
    fields = {"format": format, "min_confidence": min_confidence, **({} if topic is None else {"topic": topic})}
    with isolated():
        before = import_snapshot(campaign)
        response = _upload(api_client, campaign, file, **fields)
        body = response.json()
        event(f"API {response.status_code}")
        _assert_api_contract(response, body, before, campaign, file)


@FUZZ_SLOW
@given(file=_any_file, topics=st.one_of(st.none(), topics_files(), mutated_topics_files()))
def test_the_command_gives_the_importers_verdict_and_exits_2_on_refusal(
    campaign, file, topics, tmp_path_factory, capsys
):
    folder = tmp_path_factory.mktemp("import")
    path = folder / file.name
    path.write_bytes(file.content)
    options = ["--campaign", campaign.slug, "--format", file.format]
    if file.topic_key:
        options += [f"--topic={file.topic_key}"]  # a key may begin with "-": not an option of its own
    if topics is not None:
        (folder / topics.filename).write_bytes(topics.content)
        options += ["--topics", str(folder / topics.filename)]
    with isolated():
        expected = _direct(campaign, file, topics)
    with isolated():
        before = import_snapshot(campaign)
        capsys.readouterr()
        try:
            call_command("import_propositions", str(path), *options)
        except SystemExit as exited:
            assert exited.code == 2 and "problems" in expected
            err = capsys.readouterr().err
            assert all(f"  {problem}" in err for problem in expected["problems"])
            assert_nothing_written(before, campaign)
        except Exception as error:
            skip_known_bug(error)
            raise
        else:
            assert "summary" in expected
            assert capsys.readouterr().out.startswith("Imported ")
            assert_imported_whole(expected["summary"], before, campaign)


@pytest.mark.parametrize(
    "name, content, problems",
    [
        (
            "p.tsv",
            b"topic\tsubject\trelation\tobject\rloans\ta\tb\tc\r",  # classic Mac line ends: one line
            [
                "p.tsv:1: unreadable header: a carriage return (CR) not followed by a line feed, outside quotes; "
                "lines end with LF or CRLF"
            ],
        ),
        ("p.jsonl", b'{"topic": "t", "subject":\r "a", "relation": "b", "object": "c"}\n', None),  # JSON white space
        (
            "p.tsv",
            b'topic\tsubject\trelation\tobject\nloans\t"a\rb"\tb\tc\nloans\t\tb\tc\n',  # CR in quotes
            ["p.tsv:3 [subject]: required field is empty"],
        ),
    ],
    ids=["mac-line-ends", "json-whitespace", "quoted-field"],
)
def test_a_bare_cr_gets_the_same_verdict_through_the_api(api_client, campaign, name, content, problems):
    file = ProposedFile(name, "auto", "unknown", content, ())
    with isolated():
        expected = _direct(campaign, file)
    assert expected.get("problems") == problems
    response = _upload(api_client, campaign, file)
    if "summary" in expected:
        assert (response.status_code, response.json()) == (201, expected["summary"])
    else:
        assert (response.status_code, response.json().get("problems")) == (400, expected["problems"])
