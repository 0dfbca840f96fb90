"""HTML input for repo ablations: shape only (name and script rules live in services)."""

from __future__ import annotations

from typing import Any

from django import forms

from apps.repositories.models import Repository


class EnvironmentForm(forms.Form):
    repository = forms.TypedChoiceField(coerce=int)
    name = forms.CharField(max_length=100)
    script = forms.CharField(
        strip=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Runs with bash in /app as each approved task's image is built, e.g. rm -f AGENTS.md",
    )

    def __init__(self, *args: Any, repositories: list[Repository], **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.fields["repository"].choices = [(r.pk, r.name) for r in repositories]  # type: ignore[attr-defined]
