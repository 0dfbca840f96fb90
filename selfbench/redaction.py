"""Credential redaction: one table of patterns, used for PR titles and bodies now and transcripts and logs later.

`redact(text)` returns the text with every match replaced by `[REDACTED:<kind>]`; `redact_report(text)` also says
what it matched, by kind, so callers can count or log *that* something was removed without logging what.
Patterns are anchored on the fixed prefixes and shapes providers publish, so commit SHAs, UUIDs, base64 blobs and
prose stay untouched: a false positive silently corrupts a task's request text, which is worse than a rare miss.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Pattern:
    kind: str
    regex: re.Pattern[str]
    # When set, only this named group is replaced, so `password=` keeps its key and `https://user:pass@host` its host.
    group: str | None = None


def _p(kind: str, pattern: str, group: str | None = None, flags: int = 0) -> Pattern:
    return Pattern(kind=kind, regex=re.compile(pattern, flags), group=group)


_ASSIGNMENT_KEY = r"(?i)\b[A-Za-z0-9_]*?(?:password|passwd|pwd|token|secret|api_?key)(?:_?key)?s?\b"

# Order matters: specific, prefixed forms first, so a `token=ghp_…` is reported as a GitHub token.
PATTERNS: tuple[Pattern, ...] = (
    _p(
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
    ),
    _p("github_token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b"),
    _p("github_token", r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b"),
    _p("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    # Real keys are long and carry digits; a branch name like `sk-fix-the-login-flow` does not.
    _p("openai_key", r"\bsk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{32,}"),
    _p("stripe_key", r"\b(?:sk|rk)_live_[A-Za-z0-9]{16,}\b"),
    _p("slack_token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    _p("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
    _p("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    _p(
        "aws_secret_key",
        r"(?i)\baws_?secret_?(?:access_?)?key\b[\"']?\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        group="secret",
    ),
    _p(
        "jwt",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    ),
    # user:pass@ inside a URL; a bare `user@host` (no password) is an ordinary address and stays.
    _p(
        "url_credentials",
        r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:(?P<secret>(?!\[REDACTED)[^\s@/]+)@",
        group="secret",
    ),
    # key=value assignments. The key must end at a word boundary (`GITHUB_TOKEN`, not `tokenizer`) and the value
    # must look like a secret (no spaces, ≥ 6 chars, not a placeholder or `${VAR}`), so docs stay readable.
    _p(
        "secret_assignment",
        _ASSIGNMENT_KEY + r"[\"']?\s*=\s*[\"']?(?P<secret>(?![$<{%*\[])[^\s\"',;)<>]{6,})",
        group="secret",
    ),
    # `key: value` (YAML, JSON, prose) only when the value carries a digit: "token: refresh it" is prose.
    _p(
        "secret_assignment",
        _ASSIGNMENT_KEY + r"[\"']?\s*:\s*[\"']?(?P<secret>(?![$<{%*\[])(?=[^\s\"',;)<>]*\d)[^\s\"',;)<>]{6,})",
        group="secret",
    ),
)


@dataclass
class Redaction:
    """The redacted text and the kind of every match, in order (never the matched text itself)."""

    text: str
    kinds: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.kinds)


def redact_report(text: str) -> Redaction:
    """Redact every credential form in `text` and report the kinds matched."""
    kinds: list[str] = []
    for pattern in PATTERNS:

        def replace(match: re.Match[str], pattern: Pattern = pattern) -> str:
            kinds.append(pattern.kind)
            marker = f"[REDACTED:{pattern.kind}]"
            if pattern.group is None:
                return marker
            start, end = match.span(pattern.group)
            whole_start = match.start()
            full = match.group(0)
            return full[: start - whole_start] + marker + full[end - whole_start :]

        text = pattern.regex.sub(replace, text)
    return Redaction(text=text, kinds=kinds)


def redact(text: str) -> str:
    """`text` with every recognised credential replaced by `[REDACTED:<kind>]`."""
    return redact_report(text).text
