"""Git repositories generated for tests: real `git` commits shaped like a GitHub project's history.

`GitRepoBuilder(path)` makes a repository on `main`; `merge_pr(...)` adds a feature branch merged with GitHub's
"Merge pull request #N from user/branch" message, `squash_pr(...)` a single commit "Title (#N)", and `commit(...)` a
plain commit that is no PR. File contents are generated to an exact number of lines, so tiers are predictable.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path


def lines(n: int, tag: str) -> str:
    return "".join(f"value_{tag}_{i} = {i}\n" for i in range(n))


@dataclass
class GitRepoBuilder:
    path: Path
    branch: str = "main"
    _clock: int = 1_700_000_000
    shas: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        self.git("init", "--quiet", "--initial-branch", self.branch)
        self.commit("Initial commit", {"README.md": "# demo\n", "src/app/__init__.py": ""})

    def git(self, *args: str, author: str = "Alice Dev", email: str = "alice@example.com") -> str:
        self._clock += 60
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": author,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": "GitHub",
            "GIT_COMMITTER_EMAIL": "noreply@github.com",
            "GIT_AUTHOR_DATE": f"{self._clock} +0000",
            "GIT_COMMITTER_DATE": f"{self._clock} +0000",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        done = subprocess.run(["git", "-C", str(self.path), *args], capture_output=True, text=True, env=env, check=True)
        return done.stdout.strip()

    def _write(self, files: dict[str, str | bytes]) -> None:
        for rel, content in files.items():
            target = self.path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)
            self.git("add", rel)

    def commit(
        self,
        message: str,
        files: dict[str, str | bytes],
        *,
        author: str = "Alice Dev",
        email: str = "alice@example.com",
    ) -> str:
        self._write(files)
        self.git("commit", "--quiet", "-m", message, author=author, email=email)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def squash_pr(
        self,
        number: int,
        title: str,
        files: dict[str, str | bytes],
        *,
        body: str = "",
        author: str = "Alice Dev",
        email: str = "alice@example.com",
    ) -> str:
        message = f"{title} (#{number})" + (f"\n\n{body}" if body else "")
        sha = self.commit(message, files, author=author, email=email)
        self.shas[number] = sha
        return sha

    def merge_pr(
        self,
        number: int,
        title: str,
        files: dict[str, str | bytes],
        *,
        body: str = "",
        user: str = "bob",
        author: str = "Bob Coder",
        email: str = "bob@example.com",
    ) -> str:
        feature = f"feature-{number}"
        self.git("checkout", "--quiet", "-b", feature)
        self.commit(f"WIP {title}", files, author=author, email=email)
        self.git("checkout", "--quiet", self.branch)
        message = f"Merge pull request #{number} from {user}/{feature}\n\n{title}" + (f"\n\n{body}" if body else "")
        self.git("merge", "--quiet", "--no-ff", "-m", message, feature)
        self.git("branch", "--quiet", "-D", feature)
        sha = self.head()
        self.shas[number] = sha
        return sha

    def sized_files(
        self, number: int, *, impl_paths: int, lines_per_path: int, tests: int = 1, lang: str = "py"
    ) -> dict[str, str | bytes]:
        """Files for a PR with `impl_paths` implementation files of exactly `lines_per_path` added lines each."""
        files: dict[str, str | bytes] = {}
        for i in range(impl_paths):
            files[f"src/app/mod_{number}_{i}.{lang}"] = lines(lines_per_path, f"{number}_{i}")
        for i in range(tests):
            name = {
                "py": f"tests/test_mod_{number}_{i}.py",
                "go": f"src/app/mod_{number}_{i}_test.go",
                "ts": f"src/app/mod_{number}_{i}.test.ts",
            }[lang]
            files[name] = lines(10, f"t{number}_{i}")
        return files
