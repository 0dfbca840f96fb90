# SelfBench: web (uvicorn, default command) and worker (`python manage.py qcluster`) from one image.
# On machines that cannot pull images, build from the local debootstrap base:
#   bash scripts/containers.sh --app-image
#   (= podman build --build-arg BASE_IMAGE=localhost/selfbench-app-base:trixie -t localhost/selfbench:latest .)
ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HARBOR_TELEMETRY=0 \
    LITELLM_LOCAL_MODEL_COST_MAP=True

# git clones the repositories tasks are made from; the slim Python image lacks it, the local base has it.
RUN if ! command -v git >/dev/null; then \
      apt-get update && apt-get install -y --no-install-recommends git ca-certificates \
      && rm -rf /var/lib/apt/lists/*; \
    fi

WORKDIR /srv/selfbench
# Dependencies first so code changes reuse this layer.
COPY requirements.txt ./
RUN python3 -m venv "$VIRTUAL_ENV" \
    && pip install --no-cache-dir -r requirements.txt

COPY . .
# Hashed, compressed static files served by whitenoise. The two keys here only let settings load;
# they are not kept in the image, and the running container gets real ones from the environment.
ENV DJANGO_STATIC_MANIFEST=True
RUN SECRET_KEY=collectstatic-only SECRETS_ENCRYPTION_KEYS=collectstatic-only \
    python manage.py collectstatic --noinput -v0

RUN useradd --system --create-home --home-dir /home/selfbench selfbench \
    && mkdir -p /srv/selfbench/media \
    && chown -R selfbench:selfbench /srv/selfbench/media
USER selfbench
ENV MEDIA_ROOT=/srv/selfbench/media
EXPOSE 8000
CMD ["uvicorn", "selfbench.asgi:application", "--host", "0.0.0.0", "--port", "8000", "--proxy-headers"]
