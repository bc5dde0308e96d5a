"""Ids never lost on re-import (issue 25): propositions first imported without `id` get the id
a later file gives them, counted in the summary; an id that contradicts the one a proposition
has, or that another proposition of the topic holds, is refused with file:line and nothing is
written."""

import io

import pytest
from django.core.management import call_command

from annotation.campaigns import campaign_create
from annotation.importing.importers import ImportFailed, propositions_import
from annotation.models import ImportRecord, Proposition

pytestmark = pytest.mark.django_db

WITHOUT_IDS = (
    "topic\tsubject\trelation\tobject\n"
    "loans\tfederal loans\tdo not require\ta credit check\n"
    "loans\tprivate loans\trequire\ta co-signer\n"
    "bees\tvarroa mites\tweaken\tcolonies\n"
)
WITH_IDS = (
    "topic\tsubject\trelation\tobject\tid\n"
    "loans\tfederal loans\tdo not require\ta credit check\tL1\n"
    "loans\tPrivate Loans\trequire\ta  co-signer\tL2\n"
    "loans\tgrants\tneed not be\trepaid\tL3\n"
    "bees\tvarroa mites\tweaken\tcolonies\t\n"
)


@pytest.fixture
def campaign():
    return campaign_create(slug="ids", name="Ids")


def run_import(campaign, text, filename="props.tsv"):
    return propositions_import(campaign=campaign, source=io.BytesIO(text.encode()), filename=filename)


def ids(campaign) -> dict[str, str]:
    rows = Proposition.objects.filter(topic__campaign=campaign).values_list("subject", "external_id")
    return {subject.lower(): external_id for subject, external_id in rows}


def test_a_reimport_with_ids_fills_them_in_and_says_so(campaign):
    run_import(campaign, WITHOUT_IDS)

    summary = run_import(campaign, WITH_IDS, filename="with-ids.tsv")

    assert ids(campaign) == {"federal loans": "L1", "private loans": "L2", "grants": "L3", "varroa mites": ""}
    loans = summary.topics["loans"]
    assert (loans.kept, loans.duplicates, loans.ids_filled) == (1, 2, 2)
    assert summary.topics["bees"].ids_filled == 0
    assert "(ids added: 2 proposition(s) imported before without an id got the id this file gives them)" in (
        summary.lines()
    )
    assert ImportRecord.objects.latest("pk").summary["topics"]["loans"]["ids_filled"] == 2


def test_a_later_row_repeating_a_text_in_the_same_file_is_a_plain_duplicate(campaign):
    run_import(campaign, WITHOUT_IDS)
    repeated = WITH_IDS + "loans\tFederal Loans\tdo not require\ta credit check\tL7\n"

    summary = run_import(campaign, repeated)
    again = run_import(campaign, repeated)

    assert ids(campaign)["federal loans"] == "L1"  # the first row's id, as a first import keeps it
    assert (summary.topics["loans"].ids_filled, again.topics["loans"].ids_filled) == (2, 0)


def test_the_same_ids_again_change_nothing(campaign):
    run_import(campaign, WITH_IDS)

    summary = run_import(campaign, WITH_IDS)

    assert summary.topics["loans"].ids_filled == 0 and summary.topics["loans"].duplicates == 3
    assert ids(campaign)["federal loans"] == "L1"


def test_a_different_id_for_a_proposition_is_refused_with_its_line_and_nothing_written(campaign):
    run_import(campaign, WITH_IDS)
    other = WITH_IDS.replace("\tL2\n", "\tL9\n").replace("grants", "loans in default")

    with pytest.raises(ImportFailed) as refused:
        run_import(campaign, other, filename="renamed.tsv")

    assert any(
        detail.startswith(
            "renamed.tsv:3 [id]: this proposition of topic 'loans' was imported with id 'L2'; the file gives 'L9'"
        )
        for detail in refused.value.details
    ), refused.value.details
    assert ids(campaign)["private loans"] == "L2" and "loans in default" not in ids(campaign)


def test_an_id_another_proposition_holds_is_refused(campaign):
    run_import(campaign, WITH_IDS.replace("\tL2\n", "\t\n"))  # private loans without an id, grants L3
    clash = "topic\tsubject\trelation\tobject\tid\nloans\tprivate loans\trequire\ta co-signer\tL3\n"

    with pytest.raises(ImportFailed) as refused:
        run_import(campaign, clash, filename="clash.tsv")

    assert refused.value.details == [
        "clash.tsv:2 [id]: id 'L3' already belongs to another proposition of topic 'loans'; ids must be unique "
        "within a topic"
    ]
    assert ids(campaign)["private loans"] == ""


def test_the_command_prints_the_threshold_and_the_ids_added(campaign, tmp_path, capsys):
    first, second = tmp_path / "first.tsv", tmp_path / "second.tsv"
    first.write_text(WITHOUT_IDS)
    second.write_text(WITH_IDS)
    call_command("import_propositions", str(first), campaign="ids")

    call_command("import_propositions", str(second), campaign="ids", min_confidence=0.7)

    output = capsys.readouterr().out
    assert "below 0.7" in output and "(below 0.7: rows under the confidence threshold --min-confidence" in output
    assert "ids added" in output and "(ids added: 2 proposition(s)" in output


def test_a_windows_1252_file_is_refused_with_what_it_probably_is(campaign):
    excel = "topic\tsubject\trelation\tobject\nloans\tthe borrower\u2019s loan\tis\trepaid\n".encode("cp1252")

    with pytest.raises(ImportFailed) as refused:
        propositions_import(campaign=campaign, source=io.BytesIO(excel), filename="excel.tsv")

    (detail,) = refused.value.details
    assert detail.startswith("excel.tsv:2: undecodable bytes at position 18 (b'\\x92s l'); expected UTF-8 text.")
    assert "probably Windows-1252" in detail and "there this byte is “’”" in detail
    assert "“CSV UTF-8”" in detail and "`iconv -f WINDOWS-1252 -t UTF-8 excel.tsv > utf8-excel.tsv`" in detail
    assert Proposition.objects.count() == 0
