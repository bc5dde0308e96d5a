"""`manage.py suitability sample|label|train|queue|verify|apply|export`: suitability filtering
before the crowd (annotation.suitability), one job per subcommand."""

import sys
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Campaign
from annotation.suitability.decisions import decisions_apply, filter_summary, queue, verification_record
from annotation.suitability.export import decisions_csv_write
from annotation.suitability.labels_file import labels_import
from annotation.suitability.studies import study_agreement, study_of, study_sample
from annotation.suitability.training import classifier_train
from config.errors import ApplicationError


class Command(BaseCommand):
    help = "Suitability filtering: sample, label, train, queue, verify, apply, export."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sample = sub.add_parser("sample", help="Draw the labelling sample (stratified by topic).")
        sample.add_argument("--size", type=int, default=500)
        sample.add_argument("--seed", type=int, default=0)
        label = sub.add_parser("label", help="Record an expert's labels from a TSV/CSV file.")
        label.add_argument("file")
        label.add_argument("--expert", required=True, help="The expert's user name.")
        train = sub.add_parser("train", help="Train the classifier and decide every proposition.")
        train.add_argument("--seed", type=int, default=0)
        train.add_argument("--test-share", type=float, default=0.3)
        queue_ = sub.add_parser("queue", help="List the verification queue, least certain first.")
        queue_.add_argument("--limit", type=int, default=20)
        verify = sub.add_parser("verify", help="Confirm (unsuitable) or correct (suitable) one decision.")
        verify.add_argument("--proposition", type=int, required=True)
        verify.add_argument("--suitable", choices=("yes", "no"), required=True)
        verify.add_argument("--by", required=True, help="The verifying expert's user name.")
        apply = sub.add_parser("apply", help="Make the decisions effective before the Likert round is built.")
        apply.add_argument("--topic", action="append", help="Topic key (repeat); default: every open topic.")
        export = sub.add_parser("export", help="Write the decisions as CSV.")
        export.add_argument("--output", default="-")
        for each in (sample, label, train, queue_, verify, apply, export):
            each.add_argument("--campaign", required=True, help="Campaign slug.")

    def handle(self, *args, action, campaign, **options):
        try:
            target = Campaign.objects.get(slug=campaign)
        except Campaign.DoesNotExist:
            raise CommandError(f"--campaign: no campaign with the slug {campaign!r}.") from None
        try:
            getattr(self, f"_{action}")(target, **options)
        except ApplicationError as error:
            raise CommandError(error.message) from None

    def _user(self, name: str, option: str):
        try:
            return get_user_model().objects.get(username=name)
        except get_user_model().DoesNotExist:
            raise CommandError(f"{option}: no user {name!r}.") from None

    def _sample(self, campaign, *, size, seed, **options):
        study = study_sample(campaign_id=campaign.pk, size=size, seed=seed)
        self.stdout.write(f"Sampled {study.items.count()} propositions of {campaign.slug} (seed {seed}).")

    def _label(self, campaign, *, file, expert, **options):
        study = study_of(campaign)
        try:
            with open(file, encoding="utf-8-sig", newline="") as handle:
                count = labels_import(
                    study_id=study.pk, expert=self._user(expert, "--expert"), lines=handle, filename=Path(file).name
                )
        except OSError as error:
            raise CommandError(f"{file}: {error.strerror}.") from None
        agreement = study_agreement(study)
        self.stdout.write(f"Recorded {count} labels; {agreement.labelled} sampled propositions labelled.")
        if agreement.multiply_labelled:
            self.stdout.write(
                f"Agreement on {agreement.multiply_labelled}: {agreement.percent:.1%}, Fleiss' kappa "
                f"{_number(agreement.fleiss_kappa)}, Krippendorff's alpha {_number(agreement.krippendorff_alpha)}."
            )

    def _train(self, campaign, *, seed, test_share, **options):
        run = classifier_train(campaign_id=campaign.pk, seed=seed, test_share=test_share)
        held = run.metrics["held_out"]
        self.stdout.write(
            f"Trained on {run.parameters['train_size']} (suitable weight {run.parameters['suitable_weight']}); held out "
            f"{held['n']}: precision on negatives {_number(held['precision'])}, recall on negatives {_number(held['recall'])}."
        )

    def _queue(self, campaign, *, limit, **options):
        waiting = queue(campaign=campaign)
        summary = filter_summary(campaign=campaign)
        self.stdout.write(f"{len(waiting)} waiting; budget {summary.budget}, verified {summary.verified}.")
        for decision in waiting[:limit]:
            p = decision.proposition
            self.stdout.write(f"{p.pk}\t{decision.margin:+.3f}\t{decision.rule or '-'}\t{p.topic.key}\t{p.text}")

    def _verify(self, campaign, *, proposition, suitable, by, **options):
        verification_record(
            campaign_id=campaign.pk, proposition_id=proposition, by=self._user(by, "--by"), suitable=suitable == "yes"
        )
        estimate = filter_summary(campaign=campaign).estimate
        self.stdout.write(
            f"Recorded. Precision on negatives now estimated at {_number(estimate.precision if estimate else None)}."
        )

    def _apply(self, campaign, *, topic, **options):
        applied = decisions_apply(campaign_id=campaign.pk, topic_keys=topic)
        self.stdout.write(f"Removed {applied.removed}, kept {applied.kept} in {', '.join(applied.topics)}.")

    def _export(self, campaign, *, output, **options):
        if output == "-":
            decisions_csv_write(campaign=campaign, stream=sys.stdout)
            return
        with open(output, "w", newline="", encoding="utf-8") as handle:
            decisions_csv_write(campaign=campaign, stream=handle)


def _number(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"
