"""REST endpoints of suitability filtering under `campaigns/<slug>/suitability/` (thin: parse,
call the service, render). Access as every campaign route: another researcher's campaign is
a 404, a viewer reads and changes nothing (403)."""

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.suitability.decisions import decisions_apply, filter_summary, queue, verification_record
from annotation.suitability.export import decisions_csv_write
from annotation.suitability.models import SuitabilityLabel, SuitabilityStudy
from annotation.suitability.studies import label_record, study_agreement, study_of, study_sample
from annotation.suitability.training import classifier_train
from crowd.work.savings import suitability_saving
from dashboard.api.campaign_views import CampaignScoped

SEED_MAX = 2**31 - 1  # stored in an integer column


class SampleSerializer(serializers.Serializer):
    size = serializers.IntegerField(min_value=1, max_value=100_000, default=500)
    seed = serializers.IntegerField(min_value=0, max_value=SEED_MAX, default=0)


class LabelSerializer(serializers.Serializer):
    proposition = serializers.IntegerField(min_value=1)
    suitable = serializers.BooleanField()
    reason = serializers.ChoiceField(choices=SuitabilityLabel.Reason.choices, required=False, default="")
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000, default="")


class TrainSerializer(serializers.Serializer):
    seed = serializers.IntegerField(min_value=0, max_value=SEED_MAX, default=0)
    test_share = serializers.FloatField(min_value=0.1, max_value=0.5, default=0.3)


class VerifySerializer(serializers.Serializer):
    proposition = serializers.IntegerField(min_value=1)
    suitable = serializers.BooleanField()


class ApplySerializer(serializers.Serializer):
    topics = serializers.ListField(child=serializers.CharField(max_length=100), required=False, allow_empty=True)


def summary_body(campaign) -> dict:
    summary = filter_summary(campaign=campaign)
    saving = suitability_saving(campaign=campaign)
    estimate = summary.estimate
    body = {
        "propositions": summary.propositions,
        "decided": summary.decided,
        "predicted_negatives": summary.predicted_negatives,
        "removed": summary.removed,
        "to_remove": summary.to_remove,
        "share_removed": summary.share_removed,
        "applied": summary.applied,
        "verification": {
            "budget": summary.budget,
            "verified": summary.verified,
            "confirmed": summary.confirmed,
            "corrected": summary.corrected,
            "queue_left": summary.queue_left,
        },
        "held_out": summary.held_out,
        "precision_on_negatives_estimate": estimate.precision if estimate else None,
        "saving": {
            "tasks_avoided": saving.tasks_avoided,
            "unit": saving.unit,
            "units_avoided": saving.units_avoided,
            "unit_cost": str(saving.unit_cost),
            "money": str(saving.money),
            "channel": saving.channel,
        },
    }
    study = SuitabilityStudy.objects.filter(campaign=campaign).first()
    if study is not None:
        agreement = study_agreement(study)
        body["study"] = {
            "sample_size": study.items.count(),
            "seed": study.seed,
            "labelled": agreement.labelled,
            "experts": agreement.experts,
            "percent_agreement": agreement.percent,
            "fleiss_kappa": agreement.fleiss_kappa,
            "krippendorff_alpha": agreement.krippendorff_alpha,
        }
    return body


class _Base(CampaignScoped, APIView):
    def form(self, serializer_class) -> dict:
        form = serializer_class(data=self.request.data)
        form.is_valid(raise_exception=True)
        return form.validated_data


@extend_schema(tags=["suitability"])
class SuitabilityView(_Base):
    @extend_schema(responses={200: OpenApiTypes.OBJECT}, description="The filter's figures and the saving.")
    def get(self, request, campaign_slug):
        return Response(summary_body(self.campaign))


@extend_schema(tags=["suitability"])
class SampleView(_Base):
    @extend_schema(responses={200: OpenApiTypes.OBJECT}, description="The sample, in labelling order.")
    def get(self, request, campaign_slug):
        study = study_of(self.campaign)
        items = study.items.select_related("proposition__topic")
        return Response(
            {
                "guideline": study.guideline,
                "results": [
                    {"proposition": i.proposition_id, "topic": i.proposition.topic.key, "text": i.proposition.text}
                    for i in items
                ],
            }
        )

    @extend_schema(request=SampleSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request, campaign_slug):
        data = self.form(SampleSerializer)
        study = study_sample(campaign_id=self.campaign.pk, by=request.user, **data)
        return Response({"sample_size": study.items.count(), "seed": study.seed}, status=status.HTTP_201_CREATED)


@extend_schema(tags=["suitability"])
class LabelView(_Base):
    @extend_schema(request=LabelSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request, campaign_slug):
        data = self.form(LabelSerializer)
        label = label_record(
            study_id=study_of(self.campaign).pk,
            proposition_id=data["proposition"],
            expert=request.user,
            suitable=data["suitable"],
            reason=data["reason"],
            note=data["note"],
        )
        return Response(
            {"proposition": label.proposition_id, "suitable": label.suitable, "reason": label.reason},
            status=status.HTTP_201_CREATED,
        )


@extend_schema(tags=["suitability"])
class TrainView(_Base):
    @extend_schema(request=TrainSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request, campaign_slug):
        data = self.form(TrainSerializer)
        run = classifier_train(campaign_id=self.campaign.pk, by=request.user, **data)
        return Response(
            {"run": run.pk, "held_out": run.metrics["held_out"], "suitable_weight": run.parameters["suitable_weight"]},
            status=status.HTTP_201_CREATED,
        )


@extend_schema(tags=["suitability"])
class QueueView(_Base):
    @extend_schema(responses={200: OpenApiTypes.OBJECT}, description="Least certain first.")
    def get(self, request, campaign_slug):
        return Response(
            {
                "results": [
                    {
                        "proposition": d.proposition_id,
                        "topic": d.proposition.topic.key,
                        "text": d.proposition.text,
                        "margin": d.margin,
                        "predicted_suitable": d.predicted_suitable,
                        "rule": d.rule,
                    }
                    for d in queue(campaign=self.campaign)
                ]
            }
        )


@extend_schema(tags=["suitability"])
class VerifyView(_Base):
    @extend_schema(request=VerifySerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request, campaign_slug):
        data = self.form(VerifySerializer)
        decision = verification_record(
            campaign_id=self.campaign.pk, proposition_id=data["proposition"], by=request.user, suitable=data["suitable"]
        )
        estimate = filter_summary(campaign=self.campaign).estimate
        return Response(
            {
                "proposition": decision.proposition_id,
                "final_suitable": decision.final_suitable,
                "precision_on_negatives_estimate": estimate.precision if estimate else None,
            }
        )


@extend_schema(tags=["suitability"])
class ApplyView(_Base):
    @extend_schema(request=ApplySerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request, campaign_slug):
        data = self.form(ApplySerializer)
        applied = decisions_apply(campaign_id=self.campaign.pk, topic_keys=data.get("topics") or None)
        return Response({"removed": applied.removed, "kept": applied.kept, "topics": applied.topics})


@extend_schema(tags=["suitability"])
class DecisionsExportView(_Base):
    @extend_schema(responses={(200, "text/csv"): OpenApiTypes.STR})
    def get(self, request, campaign_slug):
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{self.campaign.slug}-suitability.csv"'
        decisions_csv_write(campaign=self.campaign, stream=response)
        return response
