"""HTML input for authoring: shape only; the rules (catalog models, runnable agents, reviewer) live in services."""

from __future__ import annotations

from typing import Any

from django import forms

from apps.accounts.models import MODEL_CREDENTIAL_KINDS, Credential, Workspace
from apps.authoring.models import Reasoning
from apps.gateway.catalog import catalog_models
from apps.repositories.forms import BatchStartForm


def _model_choices(blank: str) -> list[tuple[str, str]]:
    return [("", blank), *((m.id, m.name) for m in catalog_models())]


def _credential_choices(workspace: Workspace) -> list[tuple[Any, str]]:
    credentials = Credential.objects.filter(workspace=workspace, kind__in=MODEL_CREDENTIAL_KINDS).values_list(
        "pk", "name"
    )
    return [("", "Managed model"), *credentials]


class AuthoringFieldsForm(forms.Form):
    """Who writes and who reviews the tasks (blank models: the heuristic author, where that is allowed)."""

    author_agent = forms.ChoiceField(label="Author agent")
    author_model = forms.ChoiceField(required=False, label="Author model")
    author_credential_id = forms.TypedChoiceField(coerce=int, required=False, empty_value=None, label="Author key")
    reasoning = forms.ChoiceField(choices=Reasoning.choices, initial=Reasoning.MEDIUM)
    reviewer_model = forms.ChoiceField(required=False, label="Reviewer model")
    reviewer_credential_id = forms.TypedChoiceField(coerce=int, required=False, empty_value=None, label="Reviewer key")

    def __init__(self, *args: Any, workspace: Workspace, agents: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["author_agent"].choices = [(name, name) for name, _ in agents]  # type: ignore[attr-defined]
        self.fields["author_agent"].initial = "terminus-2"
        self.fields["author_model"].choices = _model_choices("— heuristic author —")  # type: ignore[attr-defined]
        self.fields["reviewer_model"].choices = _model_choices("—")  # type: ignore[attr-defined]
        credentials = _credential_choices(workspace)
        self.fields["author_credential_id"].choices = credentials  # type: ignore[attr-defined]
        self.fields["reviewer_credential_id"].choices = credentials  # type: ignore[attr-defined]

    def clean_author_model(self) -> str | None:
        return self.cleaned_data["author_model"] or None

    def clean_reviewer_model(self) -> str | None:
        return self.cleaned_data["reviewer_model"] or None


class BatchAuthoringForm(BatchStartForm, AuthoringFieldsForm):
    """Tier counts plus, optionally, the batch's author and reviewer."""


class EvalCreateForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class VibeEvalForm(AuthoringFieldsForm):
    """A description of the task to write, and the models that write and review it (both required here)."""

    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 5}), help_text="What the task should ask for.")
    field_order = ["description"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["author_model"].required = True
        self.fields["reviewer_model"].required = True
        self.fields["author_model"].choices = _model_choices("—")  # type: ignore[attr-defined]


class RepositoryVibeEvalForm(VibeEvalForm):
    ref = forms.CharField(max_length=255, initial="HEAD", help_text="A commit SHA, a branch or HEAD.")
