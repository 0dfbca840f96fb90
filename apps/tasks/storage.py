"""Content-addressed task files: a version is the SHA-256 of its files, stored once under MEDIA_ROOT/tasks/<hash>."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from django.conf import settings

TaskFiles = dict[str, bytes]


def is_executable(path: str) -> bool:
    return path.endswith(".sh")


def content_hash(files: TaskFiles) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        mode = "755" if is_executable(path) else "644"
        digest.update(f"{path}\0{mode}\0{hashlib.sha256(files[path]).hexdigest()}\n".encode())
    return digest.hexdigest()


def tasks_root(kind: str = "tasks") -> Path:
    return Path(settings.MEDIA_ROOT) / kind


def store(files: TaskFiles, *, kind: str = "tasks") -> tuple[str, Path]:
    """Write the files once under <MEDIA_ROOT>/<kind>/<hash>; an existing directory is never touched again."""
    digest = content_hash(files)
    dest = tasks_root(kind) / digest
    if dest.is_dir():
        return digest, dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}-", dir=dest.parent))
    try:
        write_tree(files, tmp)
        os.rename(tmp, dest)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not dest.is_dir():
            raise
    return digest, dest


def write_tree(files: TaskFiles, root: Path) -> None:
    for rel, data in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o755 if is_executable(rel) else 0o644)


def read_tree(root: Path) -> TaskFiles:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
