# One image for the four services (docker-compose picks the service with `python -m electric_<name>`).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Pinned runtime dependencies, plus the pinned mypy-protobuf plugin that tools/gen_protos.py runs.
COPY requirements.txt requirements-dev.txt ./
RUN pip install -r requirements.txt "$(grep -E '^mypy-protobuf==' requirements-dev.txt)"

COPY pyproject.toml ./
COPY protos ./protos
COPY tools ./tools
COPY libs ./libs
COPY apps ./apps
COPY services ./services

# Generated code is built here, never copied from a working tree. /keys is where compose's
# `keys` service writes the token keys (a named volume takes this directory's owner).
RUN python tools/gen_protos.py \
    && pip install --no-deps -e . \
    && useradd --system --uid 10001 --home-dir /app electric \
    && mkdir -p /app/var /keys && chown electric /app/var /keys

USER electric
EXPOSE 50051 50052 50053 50054 9101 9102 9103 9104
CMD ["python", "-m", "electric_runner"]
