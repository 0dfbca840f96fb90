"""HTML input for task review: shape only (the service decides whether a note is required)."""

from __future__ import annotations

from django import forms

from apps.tasks.models import TaskState, Tier


class DecisionForm(forms.Form):
    note = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))
    next = forms.CharField(required=False, widget=forms.HiddenInput)


class TaskFilterForm(forms.Form):
    state = forms.ChoiceField(choices=[("", "All"), *TaskState.choices], required=False)
    tier = forms.ChoiceField(choices=[("", "Any tier"), *Tier.choices], required=False)
