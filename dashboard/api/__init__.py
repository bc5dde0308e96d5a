"""The REST API: the researcher's console for programs. Views and serializers per concern
(campaigns, the crowd's work, rankings, members); routes in urls.py."""
