"""HTML input for repositories and batches: shape only; the rules live in services."""

from __future__ import annotations

import re
from typing import Any

from django import forms

from apps.accounts.models import Credential, CredentialKind, Workspace
from apps.repositories.models import RepositoryKind


class RepositoryConnectForm(forms.Form):
    kind = forms.ChoiceField(choices=RepositoryKind.choices, initial=RepositoryKind.GITHUB, widget=forms.RadioSelect)
    full_name = forms.CharField(max_length=200, required=False, label="GitHub owner/name")
    credential_id = forms.TypedChoiceField(coerce=int, required=False, empty_value=None, label="GitHub credential")
    location = forms.CharField(max_length=1000, required=False, label="Local path or file:// URL")
    default_branch = forms.CharField(max_length=255, required=False, label="Default branch (blank: the repository's)")
    agent_minutes = forms.IntegerField(initial=30, label="Agent minutes per task")

    def __init__(self, *args: Any, workspace: Workspace, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        credentials = Credential.objects.filter(workspace=workspace, kind=CredentialKind.GITHUB).values_list(
            "pk", "name"
        )
        self.fields["credential_id"].choices = [("", "—"), *credentials]  # type: ignore[attr-defined]


class BatchStartForm(forms.Form):
    easy = forms.IntegerField(min_value=0, max_value=300, initial=0)
    medium = forms.IntegerField(min_value=0, max_value=300, initial=0)
    hard = forms.IntegerField(min_value=0, max_value=300, initial=0)


class AddPrsForm(forms.Form):
    prs = forms.CharField(label="PR numbers", help_text="Separated by spaces or commas, e.g. 12, 15 18.")

    def clean_prs(self) -> list[int]:
        words = [w for w in re.split(r"[\s,]+", self.cleaned_data["prs"]) if w]
        if not all(w.lstrip("#").isdigit() for w in words):
            raise forms.ValidationError("PR numbers are whole numbers, like 12 or #12")
        return [int(w.lstrip("#")) for w in words]
