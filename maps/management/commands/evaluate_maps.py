"""`manage.py evaluate_maps GOLD_DIR SYSTEM_DIR [--json]`: the corpus's evaluation protocol
(Falke & Gurevych, EMNLP 2017, §7) — the checker's figures, strict, unlabeled and concept match,
ROUGE-2 (file and canonical order) and METEOR 1.5 where it can run — per topic and system map,
and macro averages. Exit status 4 when a map fails the check, as the corpus jar."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from maps.evaluation.corpus import CorpusEvaluation, EvaluationInputError, corpus_evaluate


def _prf(scores: dict) -> str:
    return f"P {scores['p']:.4f}  R {scores['r']:.4f}  F1 {scores['f1']:.4f}"


def _rouge(scores: dict) -> str:
    return f"R {scores['r']:.5f}  P {scores['p']:.5f}  F {scores['f']:.5f}"


class Command(BaseCommand):
    help = (
        "Evaluate system concept maps against gold maps as the corpus does: GOLD_DIR/TOPIC/*.cmap (one per topic) "
        "against every SYSTEM_DIR/TOPIC/*.cmap; strict, unlabeled and concept match, ROUGE-2, METEOR 1.5 where "
        "Java and its jar are present; macro averages. Exit status 4 when a map fails the check."
    )

    def add_arguments(self, parser):
        parser.add_argument("gold_dir", type=Path)
        parser.add_argument("system_dir", type=Path)
        parser.add_argument("--json", action="store_true", help="Print one JSON object (notes go to stderr).")
        parser.add_argument("--no-meteor", action="store_true", help="Skip METEOR 1.5 (its JVM takes ~20 s).")
        parser.add_argument(
            "--rouge-engine",
            choices=["auto", "fallback"],
            default="auto",
            help="auto: ROUGE-1.5.5 (Perl), rouge-score if it cannot run; fallback: rouge-score.",
        )

    def handle(self, *args, gold_dir, system_dir, json: bool, no_meteor, rouge_engine, **options):
        try:
            evaluation = corpus_evaluate(gold_dir, system_dir, rouge_engine=rouge_engine, meteor=not no_meteor)
        except EvaluationInputError as error:
            raise CommandError(str(error)) from None
        if json:
            self._json_write(evaluation)
        else:
            self._text_write(evaluation)
        for note in evaluation.notes:
            self.stderr.write(f"note: {note}")
        failed = evaluation.failed_checks()
        if failed:
            raise CommandError(f"Concept maps failing the check: {', '.join(failed)}.", returncode=4)

    def _json_write(self, evaluation: CorpusEvaluation) -> None:
        self.stdout.write(json.dumps(evaluation.as_dict(), indent=2, ensure_ascii=False))

    def _metrics_write(self, name: str, data: dict) -> None:
        self.stdout.write(f"  {name}")
        if "topics" in data:
            self.stdout.write(f"    topics     {data['topics']}")
        check = data["check"]
        connected = "connected" if check["connected"] else "NOT CONNECTED"
        self.stdout.write(
            f"    check      {check['concepts']:g} concepts, {check['relations']:g} relations, {connected}"
        )
        for pair in check.get("duplicate_pairs", []):
            self.stdout.write(f"    duplicate relation: {pair[0]} <-> {pair[1]}")
        self.stdout.write(f"    strict     {_prf(data['strict'])}")
        self.stdout.write(f"    unlabeled  {_prf(data['unlabeled'])}")
        self.stdout.write(f"    concept    {_prf(data['concept'])}")
        self.stdout.write(f"    ROUGE-2    {_rouge(data['rouge2'])}  (file order, {data['rouge2']['engine']})")
        self.stdout.write(f"    ROUGE-2    {_rouge(data['rouge2_canonical'])}  (canonical order)")
        meteor = data["meteor"]
        self.stdout.write(f"    METEOR     {_prf(meteor) if meteor else 'not computed (see note)'}")

    def _text_write(self, evaluation: CorpusEvaluation) -> None:
        data = evaluation.as_dict()
        for topic, systems in data["topics"].items():
            gold = evaluation.gold_checks[topic]
            connected = "connected" if gold.connected else "NOT CONNECTED"
            self.stdout.write(f"{topic}  (gold: {gold.concepts} concepts, {gold.relations} relations, {connected})")
            for name, metrics in systems.items():
                self._metrics_write(name, metrics)
        self.stdout.write("corpus average (macro: P, R and F1 averaged separately)")
        for name, metrics in data["macro"].items():
            self._metrics_write(name, metrics)
