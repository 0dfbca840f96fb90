"""ASGI entry point (uvicorn). The gateway's routes are served by the same Django project."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "selfbench.settings")
application = get_asgi_application()
