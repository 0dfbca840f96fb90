"""The Run page's input: model rows, sandbox, the Tasks box. Parsed into the Evaluate API's request body, so the page
and `POST …/evaluations/comparisons` hand the same body to the same service."""

from __future__ import annotations

import uuid
from typing import Any

from django import forms

from apps.ablations import queries as ablation_queries
from apps.accounts.models import MODEL_CREDENTIAL_KINDS, Credential, Workspace
from apps.gateway.catalog import THINKING_LEVELS, catalog_models
from apps.harnesses import queries as harness_queries
from apps.runs import sandboxes
from apps.tasks.models import Task
from selfbench.harbor_adapter import HARNESSES

MANAGED = "managed-model"


class ModelRowForm(forms.Form):
    catalog_id = forms.ChoiceField(label="Model")
    credential_id = forms.ChoiceField(label="Credential")
    harnesses = forms.MultipleChoiceField(
        choices=[(h, h) for h in HARNESSES], widget=forms.CheckboxSelectMultiple, label="Harnesses"
    )
    thinking = forms.ChoiceField(
        choices=[("", "Model default"), *((t, t) for t in THINKING_LEVELS)], required=False, label="Thinking"
    )
    harness = forms.ChoiceField(required=False, label="Harness")

    def __init__(self, *args: Any, workspace: Workspace, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        models = [(m.id, f"{m.name} ({m.provider})") for m in catalog_models()]
        self.fields["catalog_id"].choices = models  # type: ignore[attr-defined]
        credentials = Credential.objects.filter(workspace=workspace, kind__in=MODEL_CREDENTIAL_KINDS)
        self.fields["credential_id"].choices = [  # type: ignore[attr-defined]
            *((str(c.pk), f"{c.name} ({c.kind})") for c in credentials),
            (MANAGED, "Managed model (this deployment's keys)"),
        ]
        saved = harness_queries.harnesses_of(workspace).order_by("name")
        self.fields["harness"].choices = [  # type: ignore[attr-defined]
            ("", "The agent as it is"),
            *((str(h.pk), f"{h.name} ({h.agent})") for h in saved),
        ]

    def row(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "catalogId": data["catalog_id"],
            "credentialId": data["credential_id"],
            "harnesses": data["harnesses"],
            "thinking": data["thinking"] or None,
            "harness": data["harness"] or None,
        }


# Bind with form_kwargs={"workspace": …}; the prefix is "models".
ModelRowFormSet = forms.formset_factory(
    ModelRowForm,
    extra=0,
    min_num=1,
    max_num=12,
    validate_min=True,
    validate_max=True,
    can_delete=True,
)


class RunForm(forms.Form):
    id = forms.UUIDField(
        widget=forms.HiddenInput, help_text="Generated with the page: a resubmission never starts twice."
    )
    sandbox = forms.ChoiceField()
    sandbox_credential_id = forms.ChoiceField(required=False, label="Sandbox credential")
    tasks = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, label="Tasks")
    environments = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label="Repo ablations",
        help_text="Every row runs again on each.",
    )

    def __init__(self, *args: Any, workspace: Workspace, tasks: list[Task], **kwargs: Any) -> None:
        kwargs.setdefault("initial", {}).update(
            {"id": uuid.uuid4(), "tasks": [str(t.pk) for t in tasks], "sandbox": sandboxes.sandbox_ids_enabled()[0]}
        )
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.task_rows = tasks
        self.fields["sandbox"].choices = [  # type: ignore[attr-defined]
            (s.id, s.name if s.available else f"{s.name} (not enabled here)") for s in sandboxes.SANDBOXES
        ]
        kinds = {s.credential_kind for s in sandboxes.SANDBOXES if s.credential_kind}
        credentials = Credential.objects.filter(workspace=workspace, kind__in=kinds)
        self.fields["sandbox_credential_id"].choices = [  # type: ignore[attr-defined]
            ("", "None (a sandbox on this machine)"),
            *((str(c.pk), f"{c.name} ({c.kind})") for c in credentials),
        ]
        self.fields["tasks"].choices = [(str(t.pk), t.title) for t in tasks]  # type: ignore[attr-defined]
        ablations = ablation_queries.environments_of(workspace).order_by("repository__full_name", "name")
        self.fields["environments"].choices = [  # type: ignore[attr-defined]
            (str(e.pk), f"{e.name} ({e.repository.name})") for e in ablations
        ]

    def body(self, rows: list[dict[str, Any]], *, skip_completed: bool) -> dict[str, Any]:
        """The Evaluate API's request body for these inputs."""
        data = self.cleaned_data
        batch_of = {str(t.pk): t.batch_id for t in self.task_rows}
        return {
            "id": str(data["id"]),
            "models": rows,
            "sandbox": data["sandbox"],
            "sandboxCredentialId": data["sandbox_credential_id"] or None,
            "tasks": [{"runId": batch_of[pk], "taskId": int(pk)} for pk in data["tasks"]],
            "skipCompleted": skip_completed,
            "environments": data["environments"],
        }
