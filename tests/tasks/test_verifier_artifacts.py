"""The Harbor behaviour the tamper-proof verifier relies on for deletions, pinned without containers: a separate
verifier's /app is re-made from the agent's /app (emptied, then uploaded), not merged into the image's copy, so a file
the agent deleted is gone there too. test_tamper_containers.py shows the same end to end on podman."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path, PurePath
from typing import Any

from harbor.trial.artifact_handler import ArtifactHandler

from selfbench.harbor_adapter import _run_to_completion


class FolderEnvironment:
    """The calls upload_artifacts makes, on a host folder standing in for the verifier container's root. Uploads
    merge into what is there, as Harbor's providers do (`upload_dir` copies contents)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.calls: list[str] = []

    def _host(self, path: str | PurePath) -> Path:
        return self.root / str(path).lstrip("/")

    async def empty_dirs(self, dirs: list[str | PurePath], *, chmod: bool = True) -> None:
        for d in dirs:
            self.calls.append(f"empty {d}")
            shutil.rmtree(self._host(d), ignore_errors=True)
            self._host(d).mkdir(parents=True)

    async def ensure_dirs(self, dirs: list[str | PurePath], *, chmod: bool = True) -> None:
        for d in dirs:
            self._host(d).mkdir(parents=True, exist_ok=True)

    async def upload_dir(self, source_dir: Path, target_dir: str) -> None:
        self.calls.append(f"upload {target_dir}")
        shutil.copytree(source_dir, self._host(target_dir), dirs_exist_ok=True)

    async def upload_file(self, source_path: Path, target_path: str) -> None:
        self.calls.append(f"upload {target_path}")
        shutil.copy2(source_path, self._host(target_path))


def test_the_verifiers_app_is_the_agents_app_so_deleted_files_stay_deleted(tmp_path: Path) -> None:
    # The verifier container as built from the task's image: the base tree.
    verifier = FolderEnvironment(tmp_path / "verifier")
    (verifier.root / "app" / "calc").mkdir(parents=True)
    (verifier.root / "app" / "calc" / "core.py").write_text("def add(a, b):\n    return a + b\n")
    (verifier.root / "app" / "calc" / "legacy.py").write_text("def mean(v):\n    return sum(v) / len(v)\n")
    # What Harbor collected from the agent's container: core.py changed, legacy.py deleted.
    artifacts = tmp_path / "trial" / "artifacts"
    (artifacts / "app" / "calc").mkdir(parents=True)
    (artifacts / "app" / "calc" / "core.py").write_text("def add(a, b):\n    return b + a\n")

    handler = ArtifactHandler(artifacts=["/app"], logger=logging.getLogger("test"))
    kwargs: dict[str, Any] = {"source_artifacts_dir": "/logs/artifacts", "target_artifacts_dir": "/logs/artifacts"}
    _run_to_completion(handler.upload_artifacts(verifier, artifacts, **kwargs))

    app = verifier.root / "app"
    assert sorted(p.relative_to(app).as_posix() for p in app.rglob("*") if p.is_file()) == ["calc/core.py"]
    assert (app / "calc" / "core.py").read_text() == "def add(a, b):\n    return b + a\n"
    assert verifier.calls.index("empty /app") < verifier.calls.index("upload /app")
