"""A read-only OCI distribution registry at /v2/ serving granted task images by digest.

Auth is HTTP Basic: username `selfbench`, password = a grant token. No token or an invalid, expired or cancelled
one → 401 with a Basic challenge; a repository or digest the grant does not list → 403 (DENIED); a granted digest
whose blob is missing → 404. Tags are never served (grants are by digest only).
"""

from __future__ import annotations

import base64
import binascii

from django.http import FileResponse, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_http_methods

from apps.results import registry
from apps.results.models import RegistryGrant


def _error(status: int, code: str, message: str) -> JsonResponse:
    response = JsonResponse({"errors": [{"code": code, "message": message}]}, status=status)
    response["Docker-Distribution-API-Version"] = "registry/2.0"
    if status == 401:
        response["WWW-Authenticate"] = 'Basic realm="selfbench"'
    return response


def _grant(request: HttpRequest) -> RegistryGrant | JsonResponse:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if not header.lower().startswith("basic "):
        return _error(401, "UNAUTHORIZED", "send the grant as the password of user selfbench")
    try:
        user, _, password = base64.b64decode(header[6:].strip()).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return _error(401, "UNAUTHORIZED", "malformed Basic credentials")
    if user != registry.USERNAME:
        return _error(401, "UNAUTHORIZED", "the username is selfbench")
    try:
        return registry.verify_grant(password)
    except registry.GrantInvalid as exc:
        return _error(401, "UNAUTHORIZED", f"grant not valid: {exc}")


def _layout(grant: RegistryGrant, name: str, digest: str) -> registry.Layout | JsonResponse:
    """The granted image of repository `name` whose manifest is `digest` or references it."""
    images = [img for img in grant.images if img["repository"] == name]
    if not images:
        return _error(403, "DENIED", "this grant does not cover that repository")
    for img in images:
        layout = registry.read_layout(registry.layout_dir(img["contentHash"]))
        if layout is not None and layout.digest == img["digest"] and digest in layout.referenced():
            return layout
    return _error(403, "DENIED", "this grant does not cover that digest")


@require_http_methods(["GET", "HEAD"])
def base(request: HttpRequest) -> HttpResponse:
    checked = _grant(request)
    if isinstance(checked, JsonResponse):
        return checked
    response = JsonResponse({})
    response["Docker-Distribution-API-Version"] = "registry/2.0"
    return response


@require_http_methods(["GET", "HEAD"])
def manifest(request: HttpRequest, name: str, reference: str) -> HttpResponse:
    checked = _grant(request)
    if isinstance(checked, JsonResponse):
        return checked
    if not registry.DIGEST.match(reference):
        return _error(404, "MANIFEST_UNKNOWN", "grants are by digest; tags are not served")
    layout = _layout(checked, name, reference)
    if isinstance(layout, JsonResponse):
        return layout
    if reference != layout.digest:
        return _error(403, "DENIED", "this grant does not cover that manifest")
    path = layout.blob(reference)
    if path is None:
        return _error(404, "MANIFEST_UNKNOWN", "manifest missing")
    body = path.read_bytes()
    response = HttpResponse(b"" if request.method == "HEAD" else body, content_type=layout.media_type)
    response["Content-Length"] = str(len(body))
    response["Docker-Content-Digest"] = reference
    response["Docker-Distribution-API-Version"] = "registry/2.0"
    return response


@require_http_methods(["GET", "HEAD"])
def blob(request: HttpRequest, name: str, digest: str) -> HttpResponseBase:
    checked = _grant(request)
    if isinstance(checked, JsonResponse):
        return checked
    if not registry.DIGEST.match(digest):
        return _error(404, "BLOB_UNKNOWN", "not a sha256 digest")
    layout = _layout(checked, name, digest)
    if isinstance(layout, JsonResponse):
        return layout
    path = layout.blob(digest)
    if path is None:
        return _error(404, "BLOB_UNKNOWN", "blob missing")
    response: HttpResponse | FileResponse
    if request.method == "HEAD":
        response = HttpResponse(b"", content_type="application/octet-stream")
    else:
        response = FileResponse(path.open("rb"), content_type="application/octet-stream")
    response["Content-Length"] = str(path.stat().st_size)
    response["Docker-Content-Digest"] = digest
    response["Docker-Distribution-API-Version"] = "registry/2.0"
    return response
