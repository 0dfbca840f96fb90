"""Create a workspace, its owner and a write API key from the shell."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from apps.accounts import services


class Command(BaseCommand):
    help = "Create (or reuse) a workspace and its owner, and print a new write API key (shown once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--owner", required=True, help="username of the owner (created if missing)")
        parser.add_argument("--password", default=None, help="set this password on the owner")
        parser.add_argument("--email", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        workspace, issued = services.bootstrap(
            workspace_slug=options["slug"],
            username=options["owner"],
            password=options["password"],
            email=options["email"],
        )
        self.stdout.write(f"workspace: {workspace.slug}\nowner: {options['owner']}\napi key (shown once): {issued.raw}")
