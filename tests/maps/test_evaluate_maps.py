"""manage.py evaluate_maps and check_maps on the corpus's sample data: the jar's figures, its
exit status 4, and clear errors (file:line, non-zero exit, no traceback) on bad input."""

import io
import json
import subprocess
import sys

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.maps.corpus_jar import REPO, rouge_require, sample_require


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def sample_json():
    sample = sample_require() / "corpus_xyz"
    out, err = run("evaluate_maps", str(sample / "gold"), str(sample / "system"), "--json", "--no-meteor")
    return json.loads(out), err


def test_json_is_one_object_with_topics_and_macro(sample_json):
    data, err = sample_json
    assert set(data) == {"topics", "macro"}
    assert set(data["topics"]) == {"topic1", "topic2"}
    assert set(data["topics"]["topic1"]) == {"system_a.cmap", "system_b.cmap"}
    result = data["topics"]["topic1"]["system_b.cmap"]
    assert {"check", "strict", "unlabeled", "concept", "rouge2", "meteor"} <= set(result)
    assert {"concepts", "relations", "connected"} <= set(result["check"])
    assert result["meteor"] is None
    assert "note: METEOR 1.5 not requested" in err


def test_strict_figures_are_the_jars(sample_json):
    data, _ = sample_json

    def strict(topic, name):
        return tuple(round(data["topics"][topic][name]["strict"][key], 4) for key in ("p", "r", "f1"))

    assert strict("topic1", "system_a.cmap") == (1.0, 1.0, 1.0)
    assert strict("topic1", "system_b.cmap") == (1.0, 0.6667, 0.8)
    assert strict("topic2", "system_a.cmap") == (0.0, 0.0, 0.0)
    assert strict("topic2", "system_b.cmap") == (0.5, 0.5, 0.5)
    macro = data["macro"]["system_b.cmap"]["strict"]
    assert (round(macro["p"], 4), round(macro["r"], 4), round(macro["f1"], 4)) == (0.75, 0.5833, 0.65)


def test_rouge2_figures_are_rouge_155s(sample_json):
    rouge_require()
    data, _ = sample_json
    a = data["topics"]["topic1"]["system_a.cmap"]["rouge2"]
    b = data["topics"]["topic1"]["system_b.cmap"]["rouge2"]
    assert a["engine"] == b["engine"] == "ROUGE-1.5.5"
    assert (a["r"], a["p"], a["f"]) == (0.90909, 0.95238, 0.93023)
    assert (b["r"], b["p"], b["f"]) == (0.68182, 1.0, 0.81081)


def test_text_output_prints_checks_and_metrics():
    sample = sample_require() / "corpus_xyz"
    out, _ = run("evaluate_maps", str(sample / "gold"), str(sample / "system"), "--no-meteor")
    assert "topic1  (gold: 4 concepts, 3 relations, connected)" in out
    assert "strict     P 1.0000  R 0.6667  F1 0.8000" in out
    assert "corpus average (macro: P, R and F1 averaged separately)" in out
    assert "strict     P 0.7500  R 0.5833  F1 0.6500" in out


def test_check_maps_flags_what_the_jar_flags_with_exit_status_4():
    folder = sample_require() / "malformed"
    out = io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("check_maps", str(folder), stdout=out, stderr=io.StringIO())
    assert raised.value.returncode == 4
    assert "3 of 3 concept maps fail the check" in str(raised.value)
    text = out.getvalue()
    assert text.count("duplicate relation: \tacl 2017 <-> short papers") == 2
    assert "connected: \tfalse" in text


def test_check_maps_passes_the_sample_corpus():
    out, _ = run("check_maps", str(sample_require() / "corpus_xyz"))
    assert out.count("connected: \ttrue") == 6


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)


@pytest.fixture
def corpus(tmp_path):
    write(tmp_path / "gold" / "t1" / "t1.cmap", "a\tis\tb\nb\thas\tc\n")
    write(tmp_path / "system" / "t1" / "s.cmap", "a\tis\tb\n")
    return tmp_path


def two_unnamed_gold_maps(root):
    (root / "gold" / "t1" / "t1.cmap").rename(root / "gold" / "t1" / "first.cmap")
    write(root / "gold" / "t1" / "second.cmap", "x\ty\tz\n")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda root: write(root / "system" / "t1" / "s.cmap", "a\tis\tb\nbroken line\n"), r"s\.cmap:2: expected 3"),
        (lambda root: write(root / "system" / "t1" / "s.cmap", b"a\tis\tb\n\xff\tx\ty\n"), r"s\.cmap:2: not UTF-8"),
        (lambda root: (root / "system" / "t1" / "s.cmap").unlink(), "no system concept maps found"),
        (two_unnamed_gold_maps, "2 gold maps"),
        (lambda root: (root / "gold" / "t1" / "t1.cmap").unlink(), "no reference concept map found"),
    ],
)
def test_bad_input_is_a_clear_error(corpus, change, message):
    change(corpus)
    with pytest.raises(CommandError, match=message):
        run("evaluate_maps", str(corpus / "gold"), str(corpus / "system"), "--no-meteor")


def test_a_failing_map_gives_exit_status_4_after_the_figures(corpus):
    write(corpus / "system" / "t1" / "s.cmap", "a\tis\tb\nc\thas\td\n")
    out = io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command(
            "evaluate_maps",
            str(corpus / "gold"),
            str(corpus / "system"),
            "--no-meteor",
            stdout=out,
            stderr=io.StringIO(),
        )
    assert raised.value.returncode == 4
    assert "t1/s.cmap" in str(raised.value)
    assert "NOT CONNECTED" in out.getvalue()


def test_a_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="nope: not a directory"):
        run("evaluate_maps", str(tmp_path / "nope"), str(tmp_path), "--no-meteor")
    with pytest.raises(CommandError, match="nope: not a directory"):
        run("check_maps", str(tmp_path / "nope"))


def test_from_the_shell_exit_status_4_and_no_traceback():
    malformed = subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "check_maps", str(sample_require() / "malformed")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert malformed.returncode == 4
    assert "CommandError: 3 of 3 concept maps fail the check." in malformed.stderr
    assert "Traceback" not in malformed.stderr


def test_an_unreadable_file_is_a_clear_error(corpus, monkeypatch):
    """Root reads every file, so the refusal is simulated where the file is read."""
    real = type(corpus).read_bytes

    def refuse(path):
        if path.name == "s.cmap":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(type(corpus), "read_bytes", refuse)
    with pytest.raises(CommandError, match=r"s\.cmap: cannot read: Permission denied"):
        run("evaluate_maps", str(corpus / "gold"), str(corpus / "system"), "--no-meteor")
    with pytest.raises(CommandError, match=r"s\.cmap: cannot read: Permission denied"):
        run("check_maps", str(corpus / "system"))
