"""The campaign's one download with every topic (ranking.bundle). Thin: find the campaign the
user may see (others are a 404), write the zip into a temporary file, send that file."""

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, HttpRequest
from django.views.decorators.http import require_GET

from annotation.access import campaign_for_request
from ranking.bundle import bundle_filename, campaign_bundle_file


@login_required
@require_GET
def campaign_bundle_download(request: HttpRequest, slug: str) -> FileResponse:
    campaign = campaign_for_request(request, slug)
    # FileResponse sends the file a chunk at a time and closes it (so deletes it) at the end.
    archive = campaign_bundle_file(campaign=campaign)
    return FileResponse(archive, as_attachment=True, filename=bundle_filename(campaign), content_type="application/zip")
