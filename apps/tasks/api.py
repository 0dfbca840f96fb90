"""Tasks over the API: list (filters), detail with files and gate runs, approve, reject, cancel, export."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.http import FileResponse, Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.auth import workspace_of
from apps.tasks import export, queries, serializers, services
from apps.tasks.models import Task, TaskState
from selfbench.errors import Conflict


def _task(request: Request, task_id: int) -> Task:
    task = queries.task_detail(workspace=workspace_of(request), task_id=task_id)
    if task is None:
        raise Http404("no such task")
    return task


def _person(request: Request) -> AbstractBaseUser | None:
    user = request.user
    return user if isinstance(user, AbstractBaseUser) and user.is_authenticated else None


def _export_response(tasks: list[Task], filename: str) -> FileResponse:
    if not tasks:
        raise Conflict("nothing to export: no verified task matches")
    dest = Path(tempfile.mkdtemp(prefix="selfbench-export-")) / filename
    export.export_tasks(tasks=tasks, dest=dest)
    return FileResponse(dest.open("rb"), as_attachment=True, filename=filename, content_type="application/gzip")


class TaskListApi(APIView):
    @extend_schema(
        parameters=[serializers.TaskListInput],
        responses=serializers.TaskOutput(many=True),
        operation_id="tasks_list",
    )
    def get(self, request: Request, slug: str) -> Response:
        s = serializers.TaskListInput(data=request.query_params)
        s.is_valid(raise_exception=True)
        f = s.validated_data
        rows = queries.task_list(
            workspace=workspace_of(request),
            state=f.get("state"),
            tier=f.get("tier"),
            repository_id=f.get("repository"),
            batch_id=f.get("batch"),
        )
        return Response(serializers.TaskOutput(rows, many=True).data)


class TaskDetailApi(APIView):
    @extend_schema(responses=serializers.TaskDetailOutput, operation_id="tasks_get")
    def get(self, request: Request, slug: str, task_id: int) -> Response:
        return Response(serializers.TaskDetailOutput(_task(request, task_id)).data)


class TaskApproveApi(APIView):
    @extend_schema(request=serializers.DecisionInput, responses=serializers.TaskOutput, operation_id="tasks_approve")
    def post(self, request: Request, slug: str, task_id: int) -> Response:
        s = serializers.DecisionInput(data=request.data)
        s.is_valid(raise_exception=True)
        task = services.task_approve(task=_task(request, task_id), user=_person(request), note=s.validated_data["note"])
        return Response(serializers.TaskOutput(task).data)


class TaskRejectApi(APIView):
    @extend_schema(request=serializers.RejectInput, responses=serializers.TaskOutput, operation_id="tasks_reject")
    def post(self, request: Request, slug: str, task_id: int) -> Response:
        s = serializers.RejectInput(data=request.data)
        s.is_valid(raise_exception=True)
        task = services.task_reject(task=_task(request, task_id), user=_person(request), note=s.validated_data["note"])
        return Response(serializers.TaskOutput(task).data)


class TaskCancelApi(APIView):
    @extend_schema(request=serializers.CancelInput, responses=serializers.TaskOutput, operation_id="tasks_cancel")
    def post(self, request: Request, slug: str, task_id: int) -> Response:
        s = serializers.CancelInput(data=request.data)
        s.is_valid(raise_exception=True)
        task = services.task_cancel(task=_task(request, task_id), reason=s.validated_data["reason"])
        return Response(serializers.TaskOutput(task).data)


class TaskExportApi(APIView):
    @extend_schema(responses={(200, "application/gzip"): OpenApiTypes.BINARY}, operation_id="tasks_export_one")
    def get(self, request: Request, slug: str, task_id: int) -> FileResponse:
        task = _task(request, task_id)
        if task.version is None or task.version.verified_at is None:
            raise Conflict(f"task {task.pk} has no verified version to export")
        return _export_response([task], f"selfbench-task-{task.pk}.tar.gz")


class TaskExportApprovedApi(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("repository", int, required=True)],
        responses={(200, "application/gzip"): OpenApiTypes.BINARY},
        operation_id="tasks_export_approved",
    )
    def get(self, request: Request, slug: str) -> FileResponse:
        s = serializers.ExportInput(data=request.query_params)
        s.is_valid(raise_exception=True)
        repository_id = s.validated_data.get("repository")
        rows = queries.task_list(workspace=workspace_of(request), state=TaskState.APPROVED, repository_id=repository_id)
        return _export_response(list(rows.order_by("created_at")), "selfbench-tasks.tar.gz")
