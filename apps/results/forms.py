"""The results page's filters and the two configurations to compare: shape only."""

from __future__ import annotations

from typing import Any

from django import forms

from apps.repositories.models import Repository
from apps.results.queries import ConfigurationResult, Filters


def configuration_name(c: ConfigurationResult) -> str:
    name = f"{c.model} · {c.agent} · {c.thinking}"
    return name if c.is_baseline else f"{name} · {c.label}"


class ResultsForm(forms.Form):
    repository = forms.TypedChoiceField(coerce=int, required=False)
    configuration = forms.ChoiceField(required=False, label="Configuration")
    model = forms.ChoiceField(required=False, label="Model")
    agent = forms.ChoiceField(required=False, label="Harness")
    baseline_only = forms.BooleanField(required=False, label="Baseline only")
    a = forms.ChoiceField(required=False, label="Compare")
    b = forms.ChoiceField(required=False, label="with")

    def __init__(
        self, *args: Any, repositories: list[Repository], configurations: list[ConfigurationResult], **kwargs: Any
    ) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.fields["repository"].choices = [(r.pk, r.name) for r in repositories]  # type: ignore[attr-defined]
        named = [(c.id, configuration_name(c)) for c in configurations]
        for name, empty in (("configuration", "All"), ("a", "—"), ("b", "—")):
            self.fields[name].choices = [("", empty), *named]  # type: ignore[attr-defined]
        models = sorted({c.model for c in configurations})
        agents = sorted({c.agent for c in configurations})
        self.fields["model"].choices = [("", "All"), *((m, m) for m in models)]  # type: ignore[attr-defined]
        self.fields["agent"].choices = [("", "All"), *((a, a) for a in agents)]  # type: ignore[attr-defined]

    def filters(self) -> Filters:
        data = self.cleaned_data if self.is_valid() else {}
        return Filters(
            configuration=data.get("configuration") or None,
            model=data.get("model") or None,
            agent=data.get("agent") or None,
            baseline_only=bool(data.get("baseline_only")),
        )

    def pair(self) -> tuple[str, str] | None:
        data = self.cleaned_data if self.is_valid() else {}
        a, b = data.get("a"), data.get("b")
        return (a, b) if a and b and a != b else None


class ReleasePublishForm(forms.Form):
    """The configurations to publish and the preview (head, fingerprint) they were chosen from."""

    settings = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple, label="Configurations")
    head = forms.CharField(required=False, widget=forms.HiddenInput)
    fingerprint = forms.CharField(max_length=64, widget=forms.HiddenInput)
    publish_tasks = forms.BooleanField(
        required=False,
        initial=False,
        label="Publish tasks",
        help_text="Each released task's instruction, held-out tests and reference solution (secrets redacted).",
    )
    publish_results_by_task = forms.BooleanField(
        required=False,
        initial=False,
        label="Publish results by task",
        help_text="Pass/fail per configuration and task with its grading, test output and the solver's transcript"
        " (secrets redacted; Harbor logs, artifacts and endpoint hosts stay private).",
    )

    def __init__(self, *args: Any, candidates: list[ConfigurationResult], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["settings"].choices = [(c.id, configuration_name(c)) for c in candidates]  # type: ignore[attr-defined]


class ReleaseWithdrawForm(forms.Form):
    reason = forms.CharField(required=False, max_length=2000)
