"""HTML input for authoring: shape only; the rules (catalog models, runnable agents, reviewer) live in services."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.files.uploadedfile import UploadedFile

from apps.accounts.models import MODEL_CREDENTIAL_KINDS, Credential, Workspace
from apps.authoring import services
from apps.authoring.models import MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS, Reasoning
from apps.gateway.catalog import catalog_models
from apps.repositories.forms import BatchStartForm
from selfbench.errors import DomainError


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


class MultipleFileInput(forms.FileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Any number of uploaded files (an `<input type="file" multiple>`), cleaned one by one into a list."""

    widget = MultipleFileInput

    def clean(self, data: Any, initial: Any = None) -> list[UploadedFile[bytes]]:
        cleaned: list[UploadedFile[bytes]] = []
        for item in data if isinstance(data, list | tuple) else [data]:
            if item:
                cleaned.append(super().clean(item, initial))
        return cleaned


class VibeEvalForm(AuthoringFieldsForm):
    """A description of the task to write, real files it is about, and the models that write and review it (both
    required here). Post it as multipart/form-data."""

    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 5}), help_text="What the task should ask for.")
    attachments = MultipleFileField(
        required=False,
        help_text=(
            f"Real files the task is about (logs, traces, inputs): up to {MAX_ATTACHMENTS} files, "
            f"{MAX_ATTACHMENT_BYTES / 2**20:g} MiB in all. The author finds them in its workdir."
        ),
    )
    field_order = ["description", "attachments"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["author_model"].required = True
        self.fields["reviewer_model"].required = True
        self.fields["author_model"].choices = _model_choices("—")  # type: ignore[attr-defined]

    def clean_attachments(self) -> dict[str, bytes]:
        """{file name: content}. Sizes and count are checked by the service's rule before any file is read."""
        files: list[UploadedFile[bytes]] = self.cleaned_data["attachments"]
        names = [f.name or "" for f in files]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise forms.ValidationError(f"two attachments are named {repeated[0]!r}")
        try:
            services.attachments_check(sizes={f.name or "": f.size or 0 for f in files})
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from exc
        return {f.name or "": f.read() for f in files}


class RepositoryVibeEvalForm(VibeEvalForm):
    ref = forms.CharField(max_length=255, initial="HEAD", help_text="A commit SHA, a branch or HEAD.")
