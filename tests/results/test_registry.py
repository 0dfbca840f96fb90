"""Registry grants and the read-only OCI registry: signed grants, 401 / 403 / 404, manifests and blobs by digest."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import timedelta
from pathlib import Path

import pytest
import time_machine
from django.utils import timezone
from rest_framework.test import APIClient

from apps.results import registry
from apps.results.models import RegistryGrant
from tests.results.factories import make_task


def write_layout(content_hash: str, layer: bytes = b"layer-bytes") -> dict[str, str]:
    """An OCI image layout as `podman save --format oci-dir` writes it, under the registry's cache directory."""
    root = registry.layout_dir(content_hash)
    blobs = root / "blobs" / "sha256"
    blobs.mkdir(parents=True)

    def put(data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        (blobs / digest).write_bytes(data)
        return f"sha256:{digest}"

    config = put(json.dumps({"architecture": "amd64", "os": "linux", "hash": content_hash}).encode())
    layer_digest = put(layer)
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config, "size": 1},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer_digest, "size": 1}],
        }
    ).encode()
    manifest_digest = put(manifest)
    (root / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (root / "index.json").write_text(
        json.dumps(
            {
                "schemaVersion": 2,
                "manifests": [
                    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest_digest, "size": 1}
                ],
            }
        )
    )
    return {"manifest": manifest_digest, "config": config, "layer": layer_digest}


@pytest.fixture
def granted(api, workspace, repo):  # type: ignore[no-untyped-def]
    task, other = make_task(repository=repo), make_task(repository=repo)
    digests = write_layout(task.version.content_hash)
    other_digests = write_layout(other.version.content_hash, layer=b"other-layer")
    r = api.post(f"/api/w/{workspace.slug}/registry-grants", {"tasks": [task.pk]}, format="json")
    assert r.status_code == 201, r.json()
    return task, other, digests, other_digests, r.json()


def basic(password: str, user: str = "selfbench") -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def test_grant_lists_images_by_digest_with_a_3h_default(granted) -> None:  # type: ignore[no-untyped-def]
    task, _, digests, _, body = granted
    assert body["username"] == "selfbench" and body["status"] == "active"
    assert body["images"] == [
        {"taskId": task.pk, "repository": f"selfbench/task-{task.pk}", "digest": digests["manifest"]}
    ]
    assert body["pull"] == [f"testserver/selfbench/task-{task.pk}@{digests['manifest']}"]
    grant = RegistryGrant.objects.get()
    assert abs((grant.expires_at - timezone.now()) - timedelta(hours=3)) < timedelta(minutes=1)


def test_a_valid_grant_pulls_its_manifest_and_blobs(granted) -> None:  # type: ignore[no-untyped-def]
    task, _, digests, _, body = granted
    client, auth, name = APIClient(), basic(body["password"]), f"selfbench/task-{task.pk}"
    assert client.get("/v2/", **auth).status_code == 200
    m = client.get(f"/v2/{name}/manifests/{digests['manifest']}", **auth)
    assert m.status_code == 200 and m["Docker-Content-Digest"] == digests["manifest"]
    assert m["Content-Type"] == "application/vnd.oci.image.manifest.v1+json"
    assert hashlib.sha256(m.content).hexdigest() == digests["manifest"].removeprefix("sha256:")
    blob = client.get(f"/v2/{name}/blobs/{digests['layer']}", **auth)
    assert blob.status_code == 200 and b"".join(blob.streaming_content) == b"layer-bytes"
    assert client.head(f"/v2/{name}/blobs/{digests['config']}", **auth).status_code == 200


def test_no_bad_forged_or_wrong_user_credentials_are_401(granted) -> None:  # type: ignore[no-untyped-def]
    task, _, digests, _, body = granted
    client, url = APIClient(), f"/v2/selfbench/task-{task.pk}/manifests/{digests['manifest']}"
    r = client.get(url)
    assert r.status_code == 401 and r["WWW-Authenticate"] == 'Basic realm="selfbench"'
    assert client.get(url, **basic(body["password"], user="admin")).status_code == 401
    forged = body["password"][:-4] + ("AAAA" if not body["password"].endswith("AAAA") else "BBBB")
    assert client.get(url, **basic(forged)).status_code == 401
    assert client.get(url, **basic("not-a-token")).status_code == 401


def test_expired_and_cancelled_grants_are_401(api, workspace, granted) -> None:  # type: ignore[no-untyped-def]
    task, _, digests, _, body = granted
    url, auth = f"/v2/selfbench/task-{task.pk}/manifests/{digests['manifest']}", basic(body["password"])
    with time_machine.travel(timezone.now() + timedelta(hours=3, minutes=1)):
        assert APIClient().get(url, **auth).status_code == 401
    r = api.post(f"/api/w/{workspace.slug}/registry-grants/{body['id']}/cancel")
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    assert APIClient().get(url, **auth).status_code == 401


def test_images_outside_the_grant_are_refused(granted) -> None:  # type: ignore[no-untyped-def]
    task, other, _, other_digests, body = granted
    client, auth = APIClient(), basic(body["password"])
    # another task's repository, another image's digest under the granted name, a tag, a missing digest
    assert client.get(f"/v2/selfbench/task-{other.pk}/manifests/{other_digests['manifest']}", **auth).status_code == 403
    assert client.get(f"/v2/selfbench/task-{task.pk}/blobs/{other_digests['layer']}", **auth).status_code == 403
    assert client.get(f"/v2/selfbench/task-{task.pk}/manifests/latest", **auth).status_code == 404
    assert client.get(f"/v2/selfbench/task-{task.pk}/blobs/sha256:{'0' * 64}", **auth).status_code == 403


def test_grants_need_approved_tasks_of_the_workspace_and_a_sane_ttl(api, workspace, repo) -> None:  # type: ignore[no-untyped-def]
    pending = make_task(repository=repo, state="awaiting_approval")
    url = f"/api/w/{workspace.slug}/registry-grants"
    assert api.post(url, {"tasks": [pending.pk]}, format="json").status_code == 400
    assert api.post(url, {"tasks": [999999]}, format="json").status_code == 400
    ok = make_task(repository=repo)
    write_layout(ok.version.content_hash)
    assert api.post(url, {"tasks": [ok.pk], "ttlSeconds": 5}, format="json").status_code == 400


def test_grant_status_and_list(api, workspace, granted) -> None:  # type: ignore[no-untyped-def]
    body = granted[4]
    listed = api.get(f"/api/w/{workspace.slug}/registry-grants").json()
    assert [g["id"] for g in listed] == [body["id"]] and "password" not in listed[0]
    assert api.get(f"/api/w/{workspace.slug}/registry-grants/{body['id']}").json()["status"] == "active"


@pytest.mark.containers
def test_task_image_is_built_and_saved_from_podman(workspace, repo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from apps.tasks import storage
    from tests.harbor.tasks import write_task

    digest, _ = storage.store(storage.read_tree(write_task(tmp_path / "task")))
    task = make_task(repository=repo)
    version = task.version
    version.content_hash = digest
    version.save()
    layout = registry.ensure_layout(version)
    assert layout.digest.startswith("sha256:") and layout.blob(layout.digest) is not None
    assert registry.ensure_layout(version) == layout  # saved once, reused
