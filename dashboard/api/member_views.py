"""REST endpoints for a campaign's collaborators (thin: parse, call annotation.members, render).

`GET campaigns/<slug>/members/` lists them for everyone who sees the campaign; `POST` (the
owner only) adds one by username or changes their role; `DELETE .../members/<username>/` (the
owner only) removes one. A viewer's POST or DELETE is a 403 (annotation.access), an editor's too
(annotation.members: only the owner manages collaborators); an unknown username is a 400.
"""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.response import Response

from annotation import members
from annotation.models import CampaignMember
from dashboard.api.campaign_views import CampaignScoped


class CampaignMemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.get_username", read_only=True)
    added_by = serializers.CharField(source="added_by.get_username", read_only=True, allow_null=True)

    class Meta:
        model = CampaignMember
        fields = ("username", "role", "added_by", "added_at")
        read_only_fields = fields


class MemberSetSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150, help_text="The collaborator's login name (case-sensitive).")
    role = serializers.ChoiceField(
        choices=CampaignMember.Role.choices,
        default=CampaignMember.Role.VIEW,
        help_text="view: every page and download, no changes; edit: also changes the campaign, except its "
        "collaborators, its production switch and raising its budget cap, which stay with the owner.",
    )


@extend_schema(tags=["campaigns"])
@extend_schema_view(
    create=extend_schema(
        request=MemberSetSerializer,
        responses={201: CampaignMemberSerializer, 200: CampaignMemberSerializer},
        description="Add a collaborator (201), or change the role of one (200). The owner only.",
    ),
    destroy=extend_schema(description="Remove a collaborator. The owner only."),
)
class CampaignMemberViewSet(CampaignScoped, mixins.ListModelMixin, viewsets.GenericViewSet):
    """The campaign's collaborators (the owner is the campaign's `owner`, not listed here)."""

    queryset = CampaignMember.objects.none()
    serializer_class = CampaignMemberSerializer
    lookup_field = "user__username"
    lookup_url_kwarg = "username"
    lookup_value_converter = "str"

    def get_queryset(self):
        return self.campaign.members.select_related("user", "added_by").order_by("added_at", "id")

    def create(self, request, *args, **kwargs):
        body = MemberSetSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        member, created = members.member_set(
            campaign_id=self.campaign.pk,
            username=body.validated_data["username"],
            role=body.validated_data["role"],
            by=request.user,
        )
        return Response(
            CampaignMemberSerializer(member).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )

    def destroy(self, request, *args, **kwargs):
        members.members_manager_check(campaign=self.campaign, by=request.user)
        member = get_object_or_404(self.get_queryset(), user__username=kwargs["username"])
        members.member_remove(campaign_id=self.campaign.pk, user_id=member.user_id, by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
