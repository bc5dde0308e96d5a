"""REST endpoints of the annotation app (thin: parse, call the job module, render)."""

from rest_framework.views import APIView


class PropositionImportView(APIView):
    pass
