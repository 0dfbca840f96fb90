"""Registry grants and the read-only OCI registry: creation returns at once and a job builds the images (idempotent,
safe to retry, failures recorded), signed grants, 401 / 403 / 404, manifests and blobs by digest."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import time_machine
from django.conf import settings
from django.utils import timezone
from rest_framework.test import APIClient

from apps.results import jobs, registry, services
from apps.results.models import GrantState, RegistryGrant
from apps.tasks.models import Task
from tests.results.factories import make_task


def write_layout_at(root: Path, content: str, layer: bytes = b"layer-bytes") -> dict[str, str]:
    """An OCI image layout as `podman save --format oci-dir` writes it, at `root`."""
    blobs = root / "blobs" / "sha256"
    blobs.mkdir(parents=True)

    def put(data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        (blobs / digest).write_bytes(data)
        return f"sha256:{digest}"

    config = put(json.dumps({"architecture": "amd64", "os": "linux", "hash": content}).encode())
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


def write_layout(content_hash: str, layer: bytes = b"layer-bytes") -> dict[str, str]:
    """A saved task image, under the registry's cache directory (as if granted before)."""
    return write_layout_at(registry.layout_dir(content_hash), content_hash, layer)


class FakePodman:
    """Stands in for the podman CLI (the boundary): `build` is recorded (or fails with `fail`), `save` writes a
    layout to `-o`."""

    def __init__(self, fail: str = "") -> None:
        self.builds: list[str] = []
        self.fail = fail

    def __call__(self, *args: str, timeout: int) -> subprocess.CompletedProcess[str]:
        if args[0] == "build":
            if self.fail:
                raise registry.ImageError(f"podman build failed: {self.fail}")
            self.builds.append(args[-1])
        elif args[0] == "save":
            write_layout_at(Path(args[args.index("-o") + 1]), content=args[-1])
        return subprocess.CompletedProcess(["podman", *args], 0, "", "")


def with_environment(task: Task) -> Task:
    """Give the task's version an environment/Dockerfile, so the build job has something to build."""
    assert task.version is not None
    context = task.version.path / "environment"
    context.mkdir(parents=True)
    (context / "Dockerfile").write_text("FROM scratch\n")
    return task


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Jobs enqueued (not run): (dotted path, grant id)."""
    queue: list[tuple[str, int]] = []
    monkeypatch.setattr(jobs, "async_task", lambda func, grant_id, **kw: queue.append((func, grant_id)))
    return queue


@pytest.fixture
def podman(monkeypatch: pytest.MonkeyPatch) -> FakePodman:
    fake = FakePodman()
    monkeypatch.setattr(registry, "_podman", fake)
    return fake


@pytest.fixture
def create(api, workspace, enqueued, django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    """POST registry-grants with the after-commit callbacks run (so the job is enqueued, not run)."""

    def post(body: dict[str, Any]) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return api.post(f"/api/w/{workspace.slug}/registry-grants", body, format="json")

    return post


@pytest.fixture
def granted(api, workspace, repo, create, enqueued):  # type: ignore[no-untyped-def]
    """A grant on one task whose build job has run (its image was saved before): (task, other, digests,
    other_digests, body) with body = the create response plus what the grant shows once ready."""
    task, other = make_task(repository=repo), make_task(repository=repo)
    digests = write_layout(task.version.content_hash)
    other_digests = write_layout(other.version.content_hash, layer=b"other-layer")
    r = create({"tasks": [task.pk]})
    assert r.status_code == 202, r.json()
    jobs.grant_build(enqueued[-1][1])
    ready = api.get(f"/api/w/{workspace.slug}/registry-grants/{r.json()['id']}").json()
    return task, other, digests, other_digests, {**ready, "password": r.json()["password"]}


def basic(password: str, user: str = "selfbench") -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def test_create_returns_202_building_and_only_enqueues_the_build(
    api, workspace, repo, create, enqueued, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    def no_build_in_the_request(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("an image was built inside the request")

    monkeypatch.setattr(registry, "ensure_layout", no_build_in_the_request)
    monkeypatch.setattr(registry, "_podman", no_build_in_the_request)
    task = with_environment(make_task(repository=repo))
    started = time.monotonic()
    r = create({"tasks": [task.pk], "note": "acme"})
    elapsed = time.monotonic() - started
    assert r.status_code == 202, r.json()
    body = r.json()
    grant = RegistryGrant.objects.get()
    assert enqueued == [("apps.results.jobs.grant_build", grant.pk)]
    assert body["id"] == str(grant.uuid) and r["Location"] == f"/api/w/{workspace.slug}/registry-grants/{grant.uuid}"
    assert body["state"] == "building" and body["status"] == "building" and body["readyAt"] is None
    assert body["images"] == [{"taskId": task.pk, "repository": f"selfbench/task-{task.pk}", "digest": None}]
    assert body["pull"] == [] and body["username"] == "selfbench" and body["password"]
    assert grant.build_attempts == 0 and grant.build_started_at is None
    assert abs((grant.expires_at - timezone.now()) - timedelta(hours=3)) < timedelta(minutes=1)
    assert elapsed < 5, f"create took {elapsed:.1f} s"  # generous on a loaded machine; a podman build takes ~11 s


def test_a_building_grant_pulls_nothing_until_the_job_marks_it_ready(api, workspace, repo, create, enqueued) -> None:  # type: ignore[no-untyped-def]
    task = make_task(repository=repo)
    digests = write_layout(task.version.content_hash)
    body = create({"tasks": [task.pk]}).json()
    client, auth = APIClient(), basic(body["password"])
    url = f"/v2/selfbench/task-{task.pk}/manifests/{digests['manifest']}"
    refused = client.get(url, **auth)
    assert refused.status_code == 401 and "still being built" in refused.json()["errors"][0]["message"]
    jobs.grant_build(enqueued[0][1])
    assert client.get(url, **auth).status_code == 200


def test_the_job_builds_the_images_and_marks_the_grant_ready(api, workspace, repo, create, enqueued, podman) -> None:  # type: ignore[no-untyped-def]
    a, b = with_environment(make_task(repository=repo)), with_environment(make_task(repository=repo))
    grant_id = create({"tasks": [b.pk, a.pk]}).json()["id"]
    jobs.grant_build(enqueued[0][1])
    assert len(podman.builds) == 2
    grant = RegistryGrant.objects.get()
    assert grant.state == GrantState.READY and grant.ready_at is not None and grant.build_attempts == 1
    got = api.get(f"/api/w/{workspace.slug}/registry-grants/{grant_id}").json()
    assert got["status"] == "active" and got["state"] == "ready" and got["failureReason"] == ""
    layouts = [registry.read_layout(registry.layout_dir(t.version.content_hash)) for t in (a, b)]
    digests = [layout.digest for layout in layouts if layout is not None]
    assert [i["digest"] for i in got["images"]] == digests and all(d.startswith("sha256:") for d in digests)
    assert got["pull"] == [f"testserver/selfbench/task-{t.pk}@{d}" for t, d in zip((a, b), digests, strict=True)]
    assert "password" not in got


def test_a_retried_job_builds_nothing_again(repo, create, enqueued, podman) -> None:  # type: ignore[no-untyped-def]
    task = with_environment(make_task(repository=repo))
    create({"tasks": [task.pk]})
    jobs.grant_build(enqueued[0][1])
    first = RegistryGrant.objects.get()
    jobs.grant_build(enqueued[0][1])  # django-q2 delivered it again
    again = RegistryGrant.objects.get()
    assert len(podman.builds) == 1
    assert (again.state, again.images, again.ready_at, again.build_attempts) == (
        first.state,
        first.images,
        first.ready_at,
        1,
    )


def test_a_job_running_elsewhere_is_left_alone_and_a_lost_one_is_taken_over(repo, create, enqueued, podman) -> None:  # type: ignore[no-untyped-def]
    a, b = with_environment(make_task(repository=repo)), with_environment(make_task(repository=repo))
    create({"tasks": [a.pk, b.pk]})
    grant_id = enqueued[0][1]
    # A worker claimed the build a minute ago and has saved the first image so far.
    write_layout(a.version.content_hash)
    RegistryGrant.objects.filter(pk=grant_id).update(
        build_started_at=timezone.now() - timedelta(minutes=1), build_attempts=1
    )
    jobs.grant_build(grant_id)  # a duplicate delivery while it runs: nothing built, nothing changed
    grant = RegistryGrant.objects.get()
    assert podman.builds == [] and grant.state == GrantState.BUILDING and grant.build_attempts == 1
    # That worker died: once its claim is older than the stale limit, a retry takes over and builds only the rest.
    stale = timedelta(seconds=settings.REGISTRY_GRANT_BUILD_STALE_SECONDS + 1)
    RegistryGrant.objects.filter(pk=grant_id).update(build_started_at=timezone.now() - stale)
    jobs.grant_build(grant_id)
    grant.refresh_from_db()
    assert len(podman.builds) == 1 and grant.state == GrantState.READY and grant.build_attempts == 2
    assert all(img["digest"] for img in grant.images)


def test_a_failed_build_marks_the_grant_failed_with_the_reason(
    api, workspace, repo, create, enqueued, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    saved, broken = make_task(repository=repo), with_environment(make_task(repository=repo))
    write_layout(saved.version.content_hash)
    podman = FakePodman(fail="step 2/3: RUN make: exit status 2")
    monkeypatch.setattr(registry, "_podman", podman)
    body = create({"tasks": [saved.pk, broken.pk]}).json()
    jobs.grant_build(enqueued[0][1])
    grant = RegistryGrant.objects.get()
    assert grant.state == GrantState.FAILED and grant.ready_at is None
    assert grant.failure_reason == f"task {broken.pk}: podman build failed: step 2/3: RUN make: exit status 2"
    assert [img["digest"] for img in grant.images] == ["", ""]  # never half ready: no digest is set
    got = api.get(f"/api/w/{workspace.slug}/registry-grants/{body['id']}").json()
    assert got["status"] == "failed" and got["failureReason"] == grant.failure_reason and got["pull"] == []
    url = f"/v2/selfbench/task-{saved.pk}/manifests/sha256:{'0' * 64}"
    assert APIClient().get(url, **basic(body["password"])).status_code == 401
    podman.fail = ""
    jobs.grant_build(enqueued[0][1])  # a retry does not build a failed grant again
    assert podman.builds == [] and RegistryGrant.objects.get().state == GrantState.FAILED


def test_an_unexpected_error_is_recorded_and_raised(repo, create, enqueued, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def explode(version: Any) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(registry, "ensure_layout", explode)
    task = make_task(repository=repo)
    create({"tasks": [task.pk]})
    with pytest.raises(KeyError):
        jobs.grant_build(enqueued[0][1])
    grant = RegistryGrant.objects.get()
    assert (
        grant.state == GrantState.FAILED and grant.failure_reason == f"task {task.pk}: internal error: KeyError('boom')"
    )


def test_a_grant_cancelled_or_expired_before_its_build_is_not_built(repo, create, enqueued, podman) -> None:  # type: ignore[no-untyped-def]
    task = with_environment(make_task(repository=repo))
    create({"tasks": [task.pk]})
    create({"tasks": [task.pk], "ttlSeconds": 60})
    cancelled, expiring = RegistryGrant.objects.order_by("pk")
    services.grant_cancel(grant=cancelled)
    jobs.grant_build(cancelled.pk)
    with time_machine.travel(timezone.now() + timedelta(minutes=2)):
        jobs.grant_build(expiring.pk)
    cancelled.refresh_from_db()
    expiring.refresh_from_db()
    assert podman.builds == []
    assert cancelled.state == GrantState.FAILED and cancelled.failure_reason == "cancelled before its images were built"
    assert cancelled.status == "cancelled"
    assert expiring.state == GrantState.FAILED and expiring.failure_reason == "expired before its images were built"


def test_the_grant_pins_the_task_version_it_was_created_with(repo, create, enqueued, podman) -> None:  # type: ignore[no-untyped-def]
    task = with_environment(make_task(repository=repo))
    pinned = task.version
    create({"tasks": [task.pk]})
    newer = with_environment(make_task(repository=repo))  # another version becomes the task's current one
    Task.objects.filter(pk=task.pk).update(version=newer.version)
    jobs.grant_build(enqueued[0][1])
    grant = RegistryGrant.objects.get()
    assert grant.images[0]["contentHash"] == pinned.content_hash and grant.state == GrantState.READY
    assert registry.read_layout(registry.layout_dir(pinned.content_hash)) is not None
    assert registry.read_layout(registry.layout_dir(newer.version.content_hash)) is None


def test_grant_lists_images_by_digest_once_ready(granted) -> None:  # type: ignore[no-untyped-def]
    task, _, digests, _, body = granted
    assert body["status"] == "active" and body["state"] == "ready"
    assert body["images"] == [
        {"taskId": task.pk, "repository": f"selfbench/task-{task.pk}", "digest": digests["manifest"]}
    ]
    assert body["pull"] == [f"testserver/selfbench/task-{task.pk}@{digests['manifest']}"]


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


def test_grants_need_approved_tasks_of_the_workspace_and_a_sane_ttl(repo, create, enqueued) -> None:  # type: ignore[no-untyped-def]
    pending = make_task(repository=repo, state="awaiting_approval")
    assert create({"tasks": [pending.pk]}).status_code == 400
    assert create({"tasks": [999999]}).status_code == 400
    ok = make_task(repository=repo)
    assert create({"tasks": [ok.pk], "ttlSeconds": 5}).status_code == 400
    assert enqueued == [] and not RegistryGrant.objects.exists()


def test_a_token_naming_other_images_than_its_grant_is_refused(granted) -> None:  # type: ignore[no-untyped-def]
    task, _, digests, _, body = granted
    grant = RegistryGrant.objects.get()
    RegistryGrant.objects.filter(pk=grant.pk).update(images=[{**grant.images[0], "repository": "selfbench/task-0"}])
    url = f"/v2/selfbench/task-{task.pk}/manifests/{digests['manifest']}"
    assert APIClient().get(url, **basic(body["password"])).status_code == 401


def test_grant_status_and_list(api, workspace, granted) -> None:  # type: ignore[no-untyped-def]
    body = granted[4]
    listed = api.get(f"/api/w/{workspace.slug}/registry-grants").json()
    assert [g["id"] for g in listed] == [body["id"]] and "password" not in listed[0]
    assert api.get(f"/api/w/{workspace.slug}/registry-grants/{body['id']}").json()["status"] == "active"


@pytest.mark.containers
def test_the_job_builds_and_saves_the_task_image_with_podman(repo, create, enqueued, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from apps.tasks import storage
    from tests.harbor.tasks import write_task

    digest, _ = storage.store(storage.read_tree(write_task(tmp_path / "task")))
    task = make_task(repository=repo)
    version = task.version
    version.content_hash = digest
    version.save()
    body = create({"tasks": [task.pk]}).json()
    assert body["status"] == "building"
    jobs.grant_build(enqueued[0][1])
    grant = RegistryGrant.objects.get()
    assert grant.state == GrantState.READY, grant.failure_reason
    layout = registry.ensure_layout(version)  # saved once, reused
    assert grant.images[0]["digest"] == layout.digest and layout.blob(layout.digest) is not None
    manifest = f"/v2/selfbench/task-{task.pk}/manifests/{layout.digest}"
    assert APIClient().get(manifest, **basic(body["password"])).status_code == 200
