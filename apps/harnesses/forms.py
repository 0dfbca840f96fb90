"""HTML input for saved harnesses: shape only (skills, options and subagent rules live in services)."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from apps.gateway.catalog import catalog_models
from apps.harnesses.models import Agent


class HarnessForm(forms.Form):
    name = forms.CharField(max_length=100)
    agent = forms.ChoiceField(choices=Agent.choices)
    skills = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="One per line: org/repo, org/repo@ref or a URL (Claude Code, Codex and Pi load them).",
    )
    instructions = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 3}), help_text="Added to every instruction."
    )
    options = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text='The agent\'s options as Harbor takes them, as JSON: {"max_turns": 40}.',
    )
    subagent_model = forms.ChoiceField(required=False, label="Subagent model")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        models = [(m.id, m.name) for m in catalog_models()]
        self.fields["subagent_model"].choices = [("", "None"), *models]  # type: ignore[attr-defined]

    def clean_skills(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["skills"].splitlines() if line.strip()]

    def clean_options(self) -> dict[str, Any]:
        text = self.cleaned_data["options"].strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise forms.ValidationError(f"not JSON: {exc}") from exc
        if not isinstance(value, dict):
            raise forms.ValidationError("options are a JSON object")
        return value

    def service_fields(self) -> dict[str, Any]:
        """The arguments of `harness_create` (the subagent's credential: the workspace's default)."""
        data = dict(self.cleaned_data)
        model = data.pop("subagent_model")
        data["subagent"] = {"catalogId": model} if model else None
        return data
