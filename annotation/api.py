"""REST endpoints of the annotation app (thin: parse, call the job module, render)."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.campaigns import campaigns_visible_to
from annotation.formats import FORMATS
from annotation.importers import ImportFailed, propositions_import


class PropositionImportSerializer(serializers.Serializer):
    file = serializers.FileField()
    topics = serializers.FileField(required=False)
    format = serializers.ChoiceField(choices=["auto", *FORMATS], default="auto")
    min_confidence = serializers.FloatField(default=0.5, min_value=0.0, max_value=1.0)
    topic = serializers.CharField(required=False, max_length=100)


class PropositionImportView(APIView):
    """Import a proposition file into a campaign; 400 with the list of problems if invalid."""

    parser_classes = [MultiPartParser]

    @extend_schema(request={"multipart/form-data": PropositionImportSerializer}, responses={201: dict, 400: dict})
    def post(self, request, slug):
        campaign = get_object_or_404(campaigns_visible_to(request.user), slug=slug)
        form = PropositionImportSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        topics = data.get("topics")
        try:
            summary = propositions_import(
                campaign=campaign,
                source=data["file"],
                filename=data["file"].name,
                format=data["format"],
                min_confidence=data["min_confidence"],
                topics_source=topics,
                topics_filename=topics.name if topics else "topics",
                topic_key=data.get("topic"),
                user=request.user,
            )
        except ImportFailed as failure:
            return Response(
                {"code": failure.code, "message": failure.message, "problems": failure.details},
                status=status.HTTP_400_BAD_REQUEST,
            )
        return Response(summary.as_dict(), status=status.HTTP_201_CREATED)
