"""Authoring over the API: settings on batches, evals, vibe evals, rounds; and the sandbox's verify and submit."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.auth import workspace_of
from apps.authoring import serializers, services
from apps.authoring.models import MAX_ATTACHMENT_BYTES, AuthoringRound, AuthoringSettings, Eval, VibeEval
from apps.repositories.models import Batch, Repository
from apps.tasks.models import Task
from selfbench.errors import DomainError, InvalidInput, NotFound


def _settings_kwargs(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "author_agent": data["authorAgent"],
        "author_model": data["authorModel"],
        "author_credential_id": data.get("authorCredentialId"),
        "reasoning": data["reasoning"],
        "reviewer_model": data["reviewerModel"],
        "reviewer_credential_id": data.get("reviewerCredentialId"),
        "silence_seconds": data.get("silenceSeconds"),
        "author_wall_clock_seconds": data.get("authorWallClockSeconds"),
        "review_wall_clock_seconds": data.get("reviewWallClockSeconds"),
    }


def _batch(request: Request, batch_id: int) -> Batch:
    batch = Batch.objects.filter(pk=batch_id, repository__workspace=workspace_of(request)).first()
    if batch is None:
        raise NotFound("no such batch")
    return batch


class BatchSettingsApi(APIView):
    def get(self, request: Request, slug: str, batch_id: int) -> Response:
        found = AuthoringSettings.objects.filter(batch=_batch(request, batch_id)).first()
        if found is None:
            raise NotFound("the batch has no authoring settings (its tasks use the heuristic author)")
        return Response(serializers.SettingsOutput(found).data)

    def put(self, request: Request, slug: str, batch_id: int) -> Response:
        s = serializers.SettingsInput(data=request.data)
        s.is_valid(raise_exception=True)
        saved = services.settings_save(
            workspace=workspace_of(request), batch=_batch(request, batch_id), **_settings_kwargs(s.validated_data)
        )
        return Response(serializers.SettingsOutput(saved).data)


class EvalListApi(APIView):
    def get(self, request: Request, slug: str) -> Response:
        rows = Eval.objects.filter(workspace=workspace_of(request))
        return Response(serializers.EvalOutput(rows, many=True).data)

    def post(self, request: Request, slug: str) -> Response:
        s = serializers.EvalInput(data=request.data)
        s.is_valid(raise_exception=True)
        created = services.eval_create(workspace=workspace_of(request), **s.validated_data)
        return Response(serializers.EvalOutput(created).data, status=201)


def _eval(request: Request, eval_id: int) -> Eval:
    found = Eval.objects.filter(pk=eval_id, workspace=workspace_of(request)).first()
    if found is None:
        raise NotFound("no such eval")
    return found


class EvalReleaseApi(APIView):
    def post(self, request: Request, slug: str, eval_id: int) -> Response:
        services.eval_release(eval=_eval(request, eval_id))
        return Response(status=204)  # not reached: evals are never released


def _attachments(items: list[dict[str, str]]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for item in items:
        if item["name"] in out:
            raise InvalidInput(f"two attachments are named {item['name']!r}")
        try:
            out[item["name"]] = base64.b64decode(item["contentBase64"], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidInput(f"attachment {item['name']}: contentBase64 is not base64") from exc
    return out


def _vibe_create(request: Request, **where: Any) -> Response:
    try:
        body = request.data
    except RequestDataTooBig as exc:  # Django refuses to read it: say what the limit is for
        limit = django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raise InvalidInput(
            f"the request body is over {limit} bytes; attachments may have at most {MAX_ATTACHMENT_BYTES} bytes in all"
        ) from exc
    s = serializers.VibeEvalInput(data=body)
    s.is_valid(raise_exception=True)
    data = s.validated_data
    vibe = services.vibe_eval_author(
        workspace=workspace_of(request),
        description=data["description"],
        ref=data["ref"],
        attachments=_attachments(data["attachments"]),
        **_settings_kwargs(data["settings"]),
        **where,
    )
    return Response(serializers.VibeEvalOutput(vibe).data, status=201)


class EvalVibeEvalCreateApi(APIView):
    def post(self, request: Request, slug: str, eval_id: int) -> Response:
        return _vibe_create(request, eval=_eval(request, eval_id))


class RepositoryVibeEvalCreateApi(APIView):
    def post(self, request: Request, slug: str, repository_id: int) -> Response:
        repository = Repository.objects.filter(pk=repository_id, workspace=workspace_of(request)).first()
        if repository is None:
            raise NotFound("no such repository")
        return _vibe_create(request, repository=repository)


class VibeEvalDetailApi(APIView):
    def get(self, request: Request, slug: str, vibe_id: int) -> Response:
        vibe = VibeEval.objects.filter(pk=vibe_id, workspace=workspace_of(request)).select_related("task").first()
        if vibe is None:
            raise NotFound("no such vibe eval")
        return Response(serializers.VibeEvalOutput(vibe).data)


class TaskRoundsApi(APIView):
    def get(self, request: Request, slug: str, task_id: int) -> Response:
        task = Task.objects.filter(pk=task_id, workspace=workspace_of(request)).first()
        if task is None:
            raise NotFound("no such task")
        rounds = (
            AuthoringRound.objects.filter(task=task)
            .select_related("review")
            .prefetch_related("verifies")
            .order_by("number")
        )
        return Response(serializers.RoundOutput(rounds, many=True).data)


# --- called from inside the authoring sandbox (authenticated by the round's gateway key, not a workspace key) ---------


def _sandbox_call(request: HttpRequest, action: str) -> JsonResponse:
    header = request.headers.get("Authorization", "")
    raw_key = header.removeprefix("Bearer ").strip()
    try:
        row = services.round_for_key(raw_key=raw_key)
        files = services.decode_files(json.loads(request.body or b"{}"))
        if action == "verify":
            call, text = services.round_verify(row=row, files=files)
            return JsonResponse({"passed": call.passed, "number": call.number, "report": call.report, "text": text})
        row = services.round_submit(row=row, files=files)
        return JsonResponse({"passed": True, "text": f"SUBMIT-OK round {row.number}: the task goes to review."})
    except DomainError as exc:
        return JsonResponse({"passed": False, "text": f"{action.upper()}-REFUSED {exc}"}, status=exc.status)
    except ValueError:
        return JsonResponse({"passed": False, "text": "the body must be JSON"}, status=400)


@csrf_exempt
@require_POST
def sandbox_verify(request: HttpRequest) -> JsonResponse:
    return _sandbox_call(request, "verify")


@csrf_exempt
@require_POST
def sandbox_submit(request: HttpRequest) -> JsonResponse:
    return _sandbox_call(request, "submit")
