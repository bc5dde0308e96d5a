"""OpenAPI schema post-processing (drf-spectacular): the error responses of every operation.

Views document their success; the errors come from a few places and have two shapes:

* `Error` — an `ApplicationError` (config/errors.py: `{code, message, details?}`), and a
  request Django refused before the view (config/error_views.py);
* DRF's own — `{"detail": "..."}` (`ErrorDetail`: authentication, not found, unsupported
  media type, a body that does not parse) and field errors, `{"field": ["message"]}`
  (`ValidationError`).

This hook adds, without replacing what a view documents itself:

* 401 to every operation: a missing or invalid token (even the public ones refuse an
  invalid token);
* 404 to paths with parameters (an unknown or another researcher's campaign, topic or
  link), and to operations with `page` (past the last page) or `format` (an unknown format
  is DRF's 404);
* 400 to operations with a request body or query parameters;
* 415 to operations with a request body (a content type they do not parse);
* 409 to the operations in `CONFLICTS`, which refuse a change once a campaign is published.
"""

ERROR = {
    "type": "object",
    "description": "An error the API explains: a machine-readable code and a message for people.",
    "properties": {
        "code": {"type": "string", "description": "Machine-readable, e.g. settings_fixed."},
        "message": {"type": "string", "description": "What went wrong and what to do about it."},
        "details": {
            "description": "The problems one by one, when there are several (a list, or field → messages).",
            "oneOf": [{"type": "array", "items": {}}, {"type": "object", "additionalProperties": {}}],
        },
    },
    "required": ["code", "message"],
}
ERROR_DETAIL = {
    "type": "object",
    "description": "Django REST framework's error: authentication, not found, media type, an unparseable body.",
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
}
VALIDATION_ERROR = {
    "type": "object",
    "description": "Django REST framework's field errors: each field (or non_field_errors) → its messages; "
    "a list or an object of fields maps items and nested objects.",
    "additionalProperties": {"oneOf": [{"type": "array", "items": {}}, {"type": "object", "additionalProperties": {}}]},
}
COMPONENTS = {"Error": ERROR, "ErrorDetail": ERROR_DETAIL, "ValidationError": VALIDATION_ERROR}

# (method, path) of the operations that answer 409 Conflict, and when.
CONFLICTS = {
    ("patch", "/api/campaigns/{slug}/"): "The campaign is no longer a draft: its settings are fixed.",
    ("put", "/api/campaigns/{campaign_slug}/channel/"): "The campaign has published: its channel is fixed.",
    ("post", "/api/campaigns/{campaign_slug}/suitability/sample/"): "The study has labels: its sample is fixed.",
    ("post", "/api/campaigns/{campaign_slug}/suitability/verify/"): "The topic's Likert round is built: "
    "filtering can no longer change it.",
    ("post", "/api/campaigns/{campaign_slug}/suitability/apply/"): "A topic's Likert round is built: "
    "filtering can no longer change it.",
}
METHODS = {"get", "put", "post", "patch", "delete", "head", "options", "trace"}


def error_responses(result: dict, generator, request, public) -> dict:
    """POSTPROCESSING_HOOKS entry: add the error responses and their components."""
    result.setdefault("components", {}).setdefault("schemas", {}).update(COMPONENTS)
    for path, item in result.get("paths", {}).items():
        for method, operation in item.items():
            if method in METHODS:
                for status, response in _errors(method, path, operation).items():
                    operation["responses"].setdefault(status, response)
    return result


def _errors(method: str, path: str, operation: dict) -> dict[str, dict]:
    query = {parameter["name"] for parameter in operation.get("parameters", []) if parameter["in"] == "query"}
    has_body = "requestBody" in operation
    errors = {"401": _response("No token, or an invalid one.", "ErrorDetail")}
    if "{" in path or query & {"page", "format"}:
        errors["404"] = _response(
            "Not found, or not yours: another researcher's campaign is a 404 too.", "Error", "ErrorDetail"
        )
    if has_body or query:
        errors["400"] = _response(
            "The request was refused: the body or the query says what.", "Error", "ValidationError", "ErrorDetail"
        )
    if has_body:
        errors["415"] = _response("The body's content type is not one this operation reads.", "ErrorDetail")
    if (method, path) in CONFLICTS:
        errors["409"] = _response(CONFLICTS[method, path], "Error")
    return errors


def _response(description: str, *components: str) -> dict:
    refs = [{"$ref": f"#/components/schemas/{name}"} for name in components]
    schema = refs[0] if len(refs) == 1 else {"anyOf": refs}
    return {"description": description, "content": {"application/json": {"schema": schema}}}
