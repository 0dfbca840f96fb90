"""Registry grants: HMAC-signed tokens naming a grant and its task images, and the OCI image layouts they point at.

A task's image is built with podman from its version's `environment/` and saved once as an OCI image layout
(`podman save --format oci-dir`) under MEDIA_ROOT/registry/<content hash>/; the layout's manifest digest is what a
ready grant lists. The build job (`services.grant_build`) does this, never the request that creates the grant. The
read-only registry (`registry_api.py`) serves manifests and blobs straight from these layouts.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core import signing
from django.utils import timezone

from apps.results.models import GrantState, RegistryGrant
from apps.tasks.models import TaskVersion

SALT = "selfbench.registry-grant"
USERNAME = "selfbench"
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


class GrantInvalid(Exception):
    """The token is malformed, forged, expired or cancelled."""


class ImageError(RuntimeError):
    """podman could not build or save a task image."""


def repository_name(task_id: int) -> str:
    return f"selfbench/task-{task_id}"


def _key() -> str:
    return settings.REGISTRY_GRANT_KEY or settings.SECRET_KEY


def sign_grant(grant: RegistryGrant) -> str:
    """The grant as a token: its id, the image repositories it lists and its expiry, HMAC-SHA256 signed. The token is
    issued when the grant is created, before its images are built: the digests it pulls are the grant row's, which
    the build job sets once every image is saved."""
    payload = {
        "g": str(grant.uuid),
        "i": [img["repository"] for img in grant.images],
        "exp": int(grant.expires_at.timestamp()),
    }
    return signing.dumps(payload, key=_key(), salt=SALT, compress=True)


def verify_grant(token: str) -> RegistryGrant:
    """The grant of a valid token (its images are the grant row's); GrantInvalid otherwise, also while the grant is
    still building or when its build failed. One query."""
    try:
        payload: dict[str, Any] = signing.loads(token, key=_key(), salt=SALT)
    except signing.BadSignature as exc:
        raise GrantInvalid("bad signature") from exc
    now = timezone.now()
    if int(payload.get("exp", 0)) <= now.timestamp():
        raise GrantInvalid("expired")
    grant = RegistryGrant.objects.filter(uuid=str(payload.get("g", ""))).first()
    if grant is None or grant.cancelled_at is not None or grant.expires_at <= now:
        raise GrantInvalid("cancelled or unknown")
    # Tokens issued before grants were built by a job listed name@digest; the names are what both kinds sign.
    signed = {str(ref).split("@", 1)[0] for ref in payload.get("i", [])}
    if signed != {img["repository"] for img in grant.images}:
        raise GrantInvalid("the token lists other images than the grant")
    if grant.state == GrantState.BUILDING:
        raise GrantInvalid("its images are still being built; wait until the grant is ready")
    if grant.state != GrantState.READY:
        raise GrantInvalid(f"its images could not be built: {grant.failure_reason}")
    return grant


# --- OCI layouts ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    path: Path
    digest: str  # the image manifest's digest
    media_type: str

    def blob(self, digest: str) -> Path | None:
        if not DIGEST.match(digest):
            return None
        path = self.path / "blobs" / "sha256" / digest.removeprefix("sha256:")
        return path if path.is_file() else None

    def referenced(self) -> set[str]:
        """Digests the manifest references (config and layers) plus the manifest itself."""
        path = self.blob(self.digest)
        if path is None:
            return set()
        manifest = json.loads(path.read_bytes())
        found = {self.digest, manifest.get("config", {}).get("digest", "")}
        found |= {layer.get("digest", "") for layer in manifest.get("layers", [])}
        return {d for d in found if d}


def layout_dir(content_hash: str) -> Path:
    return Path(settings.MEDIA_ROOT) / "registry" / content_hash


def read_layout(path: Path) -> Layout | None:
    index = path / "index.json"
    if not index.is_file():
        return None
    manifests = json.loads(index.read_text()).get("manifests", [])
    if not manifests:
        return None
    return Layout(path=path, digest=manifests[0]["digest"], media_type=manifests[0]["mediaType"])


def _podman(*args: str, timeout: int) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ImageError(f"podman {args[0]} failed: {exc}") from exc
    if done.returncode != 0:
        raise ImageError(f"podman {args[0]} failed: {done.stderr.strip()[-800:]}")
    return done


def ensure_layout(version: TaskVersion) -> Layout:
    """The task version's image as an OCI layout: built and saved with podman the first time, then reused."""
    target = layout_dir(version.content_hash)
    found = read_layout(target)
    if found is not None:
        return found
    context = version.path / "environment"
    if not (context / "Dockerfile").is_file():
        raise ImageError(f"task version {version} has no environment/Dockerfile to build")
    image = f"localhost/selfbench-task-{version.content_hash[:16]}:latest"
    _podman("build", "-q", "-t", image, str(context), timeout=settings.REGISTRY_BUILD_TIMEOUT_SECONDS)
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".saving-", dir=target.parent))
    try:
        out = scratch / "layout"
        _podman("save", "--format", "oci-dir", "-o", str(out), image, timeout=settings.REGISTRY_BUILD_TIMEOUT_SECONDS)
        try:
            out.rename(target)  # atomic: a concurrent save of the same version simply loses the race
        except OSError:
            if read_layout(target) is None:
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    layout = read_layout(target)
    if layout is None:
        raise ImageError(f"podman saved no OCI layout for {image}")
    return layout
